"""What a cell ran on: Python, platform, MLX backend and device, package versions."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
from typing import Any

from mlxcompat.cpuwatch import run_cpus
from mlxcompat.records.cell import Environment, Fingerprint

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


def _cpu_model() -> str:
    """The CPU's marketing name (Linux /proc/cpuinfo, macOS sysctl), else platform's guess."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        import subprocess

        out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                             text=True, check=False).stdout.strip()
        if out:
            return out
    return platform.processor() or platform.machine()


def fingerprint(backend: str, device: str) -> Fingerprint:
    """What makes throughput comparable: only a baseline with the same one gates a run."""
    cores = len(run_cpus()) or os.cpu_count()
    return Fingerprint(os=sys.platform, arch=platform.machine(), cpu=_cpu_model(), cores=cores,
                       backend=backend, device=device)


def describe_environment() -> Environment:
    """The `env` section of the cell JSON."""
    env = Environment(python=platform.python_version(),
                      platform=f"{sys.platform}-{platform.machine()}",
                      packages={p: v for p in PACKAGES if (v := _version(p))},
                      mlx_enable_tf32=os.environ.get("MLX_ENABLE_TF32"))
    try:
        env.backend, env.device_name = _backend_and_device()
    except ImportError as exc:
        env.backend, env.device_name = "unavailable", f"mlx not importable: {exc}"
    env.fingerprint = fingerprint(env.backend, env.device_name)
    return env
