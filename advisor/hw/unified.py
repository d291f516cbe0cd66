"""Memory of unified-memory and carve-out GPUs as each backend sees it: dedicated, shared and allocatable bytes.

On an integrated GPU the memory a model may take is not a card's size but a rule of the operating system, the
driver and the backend, with a source for each:

- **Apple Silicon, Metal.** ``MTLDevice.recommendedMaxWorkingSetSize`` (llama.cpp prints it at start-up,
  ``ggml_metal_init: recommendedMaxWorkingSetSize = N MB``): two thirds of the RAM up to 32 GiB, three quarters
  above, unless ``sysctl iogpu.wired_limit_mb`` sets the limit (``METAL_SHARE``; the readings pasted in llama.cpp
  threads show 2/3 at 8, 16 and 32 GiB and 3/4 at 64 GiB and more; where between 32 and 64 GiB the share changes
  is an assumption).
- **AMD APUs (Strix Halo, gfx1151), ROCm and Vulkan.** A BIOS carve-out ("UMA frame buffer", dedicated) and the
  GTT pool of system RAM the driver maps for the GPU (shared), by default half of the RAM the OS sees (TTM's
  ``pages_limit``; ``ttm.pages_limit``/``amdgpu.gttsize`` raise it). HIP (ROCm) reported only the carve-out until
  the kernel let VRAM allocations go to GTT on small-carve-out APUs (amdkfd, "Let VRAM allocations go to GTT domain
  on small APUs", 2024, whose message quotes PyTorch: "GPU 0 has a total capacity of 512.00 MiB"); since then it
  reports the GTT pool (ROCm documentation, "AMD Strix Halo system optimization", 2026-02-20). RADV (Vulkan)
  offers the carve-out as a device-local heap and GTT as a second heap that llama.cpp also allocates from.
- **NVIDIA DGX Spark (GB10) and Jetson.** One pool of LPDDR5X: ``cudaMemGetInfo`` reports the system's memory,
  and what can be allocated is what the OS has free (NVIDIA Jetson and DGX Spark user guides: the GPU and CPU
  share the system memory; nvidia-smi shows "Memory-Usage: Not Supported").
- **Intel Lunar Lake and other Xe iGPUs.** Windows gives an iGPU half of the RAM as "shared GPU memory" (WDDM's
  default), which Intel's Shared GPU Memory Override raises (Intel Graphics Software, 2025); Level Zero/SYCL and
  Vulkan see that budget.
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30
METAL_SHARE = ((32 * GIB, 2 / 3), (None, 3 / 4))  # (up to this RAM, share); None: any larger RAM
GTT_DEFAULT_SHARE = 0.5  # TTM's default pages_limit: half of the RAM the kernel sees
WINDOWS_SHARED_SHARE = 0.5  # WDDM's default shared GPU memory for an integrated GPU


@dataclass(frozen=True)
class BackendMemory:
    """Memory of one GPU as one backend sees it.

    Attributes:
        backend: ``metal``, ``rocm``, ``vulkan``, ``cuda`` or ``sycl``.
        dedicated_bytes: reserved for the GPU at boot (a BIOS carve-out); 0 where the memory is one pool.
        shared_bytes: system memory the GPU may map beyond that.
        allocatable_bytes: what this backend lets one process allocate (the figure a fit must use).
        source: the rule and where it is published.
    """

    backend: str
    dedicated_bytes: int
    shared_bytes: int
    allocatable_bytes: int
    source: str


def metal_working_set(ram_bytes: int, wired_limit_mb: int = 0) -> int:
    """``recommendedMaxWorkingSetSize`` of an Apple Silicon Mac (module docstring): ``iogpu.wired_limit_mb``
    when set, else two thirds of the RAM up to 32 GiB and three quarters above."""
    if wired_limit_mb > 0:
        return min(ram_bytes, wired_limit_mb * 2**20)
    share = next(s for limit, s in METAL_SHARE if limit is None or ram_bytes <= limit)
    return int(ram_bytes * share)


def apple_memory(ram_bytes: int, wired_limit_mb: int = 0) -> tuple[BackendMemory, ...]:
    limit = metal_working_set(ram_bytes, wired_limit_mb)
    how = f"iogpu.wired_limit_mb={wired_limit_mb}" if wired_limit_mb > 0 else \
        f"macOS default, {'2/3' if limit * 3 <= ram_bytes * 2 else '3/4'} of the RAM"
    return (BackendMemory("metal", 0, ram_bytes, limit,
                          f"Metal recommendedMaxWorkingSetSize ({how})"),)


def amd_apu_memory(ram_bytes: int, carveout_bytes: int, gtt_bytes: int | None = None,
                   gtt_domain: bool = True) -> tuple[BackendMemory, ...]:
    """A Strix Halo-class APU: ``carveout_bytes`` set in the BIOS, ``gtt_bytes`` the GTT pool (default half of
    the RAM the OS keeps after the carve-out). ``gtt_domain``: the kernel sends VRAM allocations to GTT (amdkfd,
    2024 on), so HIP reports and allocates the GTT pool; without it HIP sees the carve-out alone."""
    os_ram = ram_bytes - carveout_bytes
    gtt = int(os_ram * GTT_DEFAULT_SHARE) if gtt_bytes is None else gtt_bytes  # a limit, not pages: not capped
    gtt_how = "TTM default, half of the OS's RAM" if gtt_bytes is None else "ttm.pages_limit / amdgpu.gttsize"
    rocm = gtt if gtt_domain else carveout_bytes
    return (BackendMemory("rocm", carveout_bytes, gtt, rocm,
                          f"HIP hipMemGetInfo: {'the GTT pool' if gtt_domain else 'the BIOS carve-out'} ({gtt_how})"),
            BackendMemory("vulkan", carveout_bytes, gtt, carveout_bytes + gtt,
                          f"RADV heaps: device-local carve-out plus the GTT heap ({gtt_how})"))


def nvidia_integrated_memory(ram_bytes: int, os_used_bytes: int) -> tuple[BackendMemory, ...]:
    """DGX Spark and Jetson: one pool; CUDA can allocate what the OS does not hold."""
    return (BackendMemory("cuda", 0, ram_bytes, max(0, ram_bytes - os_used_bytes),
                          "cudaMemGetInfo on an integrated GPU: the system's memory, less what the OS holds"),)


def intel_igpu_memory(ram_bytes: int, shared_override_share: float | None = None) -> tuple[BackendMemory, ...]:
    """Lunar Lake and other Xe iGPUs under Windows: half of the RAM as shared GPU memory, or the share Intel's
    Shared GPU Memory Override sets."""
    share = WINDOWS_SHARED_SHARE if shared_override_share is None else shared_override_share
    if not 0 < share <= 1:
        raise ValueError("the shared GPU memory share must be in (0, 1]")
    shared = int(ram_bytes * share)
    how = "WDDM default, half of the RAM" if shared_override_share is None else "Shared GPU Memory Override"
    return (BackendMemory("sycl", 0, shared, shared, f"Level Zero device memory budget ({how})"),
            BackendMemory("vulkan", 0, shared, shared, f"Vulkan heap budget ({how})"))


def allocatable(memories: tuple[BackendMemory, ...], backend: str) -> int | None:
    """The bytes a fit may use on ``backend`` (None when the GPU does not list that backend)."""
    return next((m.allocatable_bytes for m in memories if m.backend == backend), None)
