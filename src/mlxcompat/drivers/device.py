"""Choose the MLX device before mlx-lm is imported (it creates its stream at import)."""

from __future__ import annotations

from typing import Any


def _device_name(mx: Any) -> str:
    info: dict[str, Any] = {}
    for getter in (getattr(mx, "device_info", None), getattr(mx.metal, "device_info", None)):
        if getter is None:
            continue
        try:
            info = dict(getter())
        except Exception:
            continue
        if info:
            break
    return str(info.get("device_name") or info.get("architecture") or "")


def _gpu_available(mx: Any) -> bool:
    cuda = getattr(mx, "cuda", None)
    return bool(mx.metal.is_available() or (cuda is not None and cuda.is_available()))


def select_device(device: str, force_cpu_patterns: list[str]) -> dict[str, Any]:
    """Make `device` ("cpu" | "gpu") MLX's default; what was chosen and why, for the env.

    A GPU whose name matches a pattern (the paravirtual GPU of hosted macOS runners) is
    passed over for the CPU: its numerics and speed are not those of real hardware.
    """
    import mlx.core as mx

    chosen: dict[str, Any] = {"requested_device": device, "gpu_name": None, "forced_cpu": None}
    if device == "gpu":
        if not _gpu_available(mx):
            raise RuntimeError("backend wants a GPU but MLX sees none (metal and cuda absent)")
        name = _device_name(mx)
        chosen["gpu_name"] = name
        match = next((p for p in force_cpu_patterns if p.lower() in name.lower()), None)
        if match:
            chosen["forced_cpu"] = f"GPU {name!r} matches {match!r} in force_cpu_devices"
            device = "cpu"
    mx.set_default_device(mx.gpu if device == "gpu" else mx.cpu)
    chosen["device"] = device
    return chosen
