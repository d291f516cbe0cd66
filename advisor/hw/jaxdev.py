"""TPUs (and other JAX devices) through JAX, imported inside the function only."""

from __future__ import annotations

import importlib.util

from advisor.hw.records import FrameworkDevice, FrameworkInfo


def jax_info() -> FrameworkInfo:
    """The TPU devices JAX sees; ``status == "not installed"`` without JAX. Never raises."""
    if importlib.util.find_spec("jax") is None:
        return FrameworkInfo("jax", False, "not installed")
    try:
        import jax
    except Exception as exc:
        return FrameworkInfo("jax", False, f"import failed: {type(exc).__name__}: {exc}")
    version = str(getattr(jax, "__version__", "?"))
    try:
        tpus = jax.devices("tpu")
    except Exception:  # RuntimeError when no TPU backend is present
        return FrameworkInfo("jax", True, f"jax {version}: no TPU", version)
    devices = tuple(FrameworkDevice(framework="jax", kind="tpu", index=i,
                                    name=str(getattr(d, "device_kind", "TPU")))
                    for i, d in enumerate(tpus))
    return FrameworkInfo("jax", True, f"jax {version} with {len(devices)} TPU device(s)", version, devices)
