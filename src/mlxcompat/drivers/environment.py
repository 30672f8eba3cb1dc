"""What a cell ran on: Python, platform, MLX backend and device, package versions."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any

PACKAGES = (
    "mlx", "mlx-cpu", "mlx-metal", "mlx-cuda", "mlx-cuda-13", "mlx-lm", "mlx-vlm",
    "transformers", "vllm-mlx", "numpy", "mlxcompat",
)


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _backend_and_device() -> tuple[str, str]:
    import mlx.core as mx

    info: dict[str, Any] = {}
    if hasattr(mx, "device_info"):
        try:
            info = dict(mx.device_info())
        except Exception:
            info = {}
    if mx.metal.is_available():
        backend = "metal"
    elif hasattr(mx, "cuda") and mx.cuda.is_available():
        backend = "cuda"
    else:
        backend = "cpu"
    default = mx.default_device()
    if "gpu" not in str(default).lower():
        backend = "cpu"
    name = str(info.get("device_name") or info.get("architecture") or platform.processor())
    return backend, name or platform.machine()


def describe_environment() -> dict[str, Any]:
    """The `env` section of the cell JSON."""
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
        "packages": {p: v for p in PACKAGES if (v := _version(p))},
        "mlx_enable_tf32": os.environ.get("MLX_ENABLE_TF32"),
    }
    try:
        env["backend"], env["device_name"] = _backend_and_device()
    except ImportError as exc:
        env["backend"], env["device_name"] = "unavailable", f"mlx not importable: {exc}"
    try:
        from mlxcompat.drivers.capabilities import probe_lm

        env["capabilities"] = probe_lm().to_json()
    except Exception as exc:
        env["capabilities"] = {"error": f"{type(exc).__name__}: {exc}"}
    return env
