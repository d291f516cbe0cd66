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
  reports the GTT pool (ROCm documentation, "AMD Strix Halo system optimization", 2026-02-20). RADV (Mesa's Vulkan
  driver) has no dedicated VRAM on an APU and splits carve-out plus GTT into two heaps, "report 2/3 as VRAM and 1/3
  as GTT" (``radv_physical_device.c``), unless ``radv_enable_unified_heap_on_apu`` (drirc) makes it one heap;
  llama.cpp's Vulkan backend allocates from the device-local heap, so it sees two thirds.
- **NVIDIA DGX Spark (GB10) and Jetson.** One pool of LPDDR5X: ``cudaMemGetInfo`` reports the memory the OS
  manages as the total (what ``/proc/meminfo`` calls MemTotal: 128 GB less the firmware's share on a DGX Spark)
  and what the OS has available as free (NVIDIA Jetson and DGX Spark user guides: the GPU and CPU share the system
  memory; nvidia-smi shows "Memory-Usage: Not Supported").
- **Intel Lunar Lake and other Xe iGPUs.** Windows gives an iGPU half of the RAM as "shared GPU memory" (WDDM's
  default), which Intel's Shared GPU Memory Override raises (Intel Graphics Software, 2025); Level Zero/SYCL and
  Vulkan (llama.cpp reads it through DXGI on Windows) see that budget.

A fit on such a device uses ``allocatable`` of the backend its runtime runs on (``planner.owned.owned_capacity``).
"""

from __future__ import annotations

from dataclasses import dataclass

GIB = 2**30
METAL_SHARE = ((32 * GIB, 2 / 3), (None, 3 / 4))  # (up to this RAM, share); None: any larger RAM
GTT_DEFAULT_SHARE = 0.5  # TTM's default pages_limit: half of the RAM the kernel sees
RADV_APU_DEVICE_LOCAL = 2 / 3  # RADV's device-local heap on an APU: 2/3 of carve-out plus GTT
RADV_PAGE = 4096  # the heap is aligned to the GART page (radv: align64(total * 2 / 3, gart_page_size))
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
                   gtt_domain: bool = True, *, os_ram_bytes: int | None = None,
                   unified_heap: bool = False) -> tuple[BackendMemory, ...]:
    """A Strix Halo-class APU: ``carveout_bytes`` set in the BIOS, ``gtt_bytes`` the GTT pool (default half of
    the RAM the OS sees: ``os_ram_bytes``, MemTotal, when known, else the RAM less the carve-out). ``gtt_domain``:
    the kernel sends VRAM allocations to GTT (amdkfd, 2024 on), so HIP reports and allocates the GTT pool; without
    it HIP sees the carve-out alone. Vulkan (RADV): the device-local heap, two thirds of carve-out plus GTT, or all
    of it with ``unified_heap`` (``radv_enable_unified_heap_on_apu``)."""
    os_ram = os_ram_bytes if os_ram_bytes is not None else ram_bytes - carveout_bytes
    gtt = int(os_ram * GTT_DEFAULT_SHARE) if gtt_bytes is None else gtt_bytes  # a limit, not pages: not capped
    gtt_how = "TTM default, half of the OS's RAM" if gtt_bytes is None else "ttm.pages_limit / amdgpu.gttsize"
    rocm = gtt if gtt_domain else carveout_bytes
    pool = carveout_bytes + gtt
    heap = pool if unified_heap else int(pool * RADV_APU_DEVICE_LOCAL) // RADV_PAGE * RADV_PAGE
    heap_how = ("radv_enable_unified_heap_on_apu: one heap of all of it" if unified_heap else
                "RADV on an APU reports 2/3 of it as the device-local heap")
    return (BackendMemory("rocm", carveout_bytes, gtt, rocm,
                          f"HIP hipMemGetInfo: {'the GTT pool' if gtt_domain else 'the BIOS carve-out'} ({gtt_how})"),
            BackendMemory("vulkan", carveout_bytes, gtt, heap,
                          f"carve-out plus the GTT pool ({gtt_how}); {heap_how}"))


def nvidia_integrated_memory(ram_bytes: int, os_used_bytes: int) -> tuple[BackendMemory, ...]:
    """DGX Spark and Jetson: one pool of ``ram_bytes`` (the OS's MemTotal, which cudaMemGetInfo gives as the total);
    CUDA can allocate what the OS does not hold (its free figure follows the OS's available memory)."""
    return (BackendMemory("cuda", 0, ram_bytes, max(0, ram_bytes - os_used_bytes),
                          "cudaMemGetInfo on an integrated GPU: the system's memory, less what the OS holds"),)


def intel_igpu_memory(ram_bytes: int, shared_override_share: float | None = None,
                      dedicated_bytes: int = 0) -> tuple[BackendMemory, ...]:
    """Lunar Lake and other Xe iGPUs under Windows: half of the RAM as shared GPU memory, or the share Intel's
    Shared GPU Memory Override sets; ``dedicated_bytes`` the firmware's stolen memory (DXGI's "dedicated", 128 MiB
    on Lunar Lake), which a model does not use."""
    share = WINDOWS_SHARED_SHARE if shared_override_share is None else shared_override_share
    if not 0 < share <= 1:
        raise ValueError("the shared GPU memory share must be in (0, 1]")
    shared = int(ram_bytes * share)
    how = "WDDM default, half of the RAM" if shared_override_share is None else "Shared GPU Memory Override"
    return (BackendMemory("sycl", dedicated_bytes, shared, shared, f"Level Zero device memory budget ({how})"),
            BackendMemory("vulkan", dedicated_bytes, shared, shared, f"Vulkan heap budget, DXGI's shared total ({how})"))


def allocatable(memories: tuple[BackendMemory, ...], backend: str | None = None) -> int | None:
    """The bytes a fit may use on ``backend`` (None when the GPU does not list that backend); without a backend,
    the first listed (the vendor's compute backend: ROCm, CUDA, Metal, SYCL)."""
    if backend is None:
        return memories[0].allocatable_bytes if memories else None
    return next((m.allocatable_bytes for m in memories if m.backend == backend), None)
