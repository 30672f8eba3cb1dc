"""matrix.yaml `settings`: run budget, tolerance, backend and the throughput profiles."""

from __future__ import annotations

from typing import Any

from mlxcompat.registry import Registry
from mlxcompat.validation import fail, mapping, names

DEFAULTS: dict[str, Any] = {"python": "3.11", "timeout_s": 1200, "tolerance": 1e-4,
                            "throughput_threshold": 0.2, "bench": {}, "backend": "cpu",
                            "force_cpu_devices": []}
PROFILE_KEYS = {"batches", "rounds", "warmup", "prompt_tokens", "gen_tokens", "gate", "models",
                "dtypes"}
DTYPES = ("float32", "bfloat16", "float16")
DEFAULT_PROFILE: dict[str, Any] = {"batches": [1, 4, 8, 16], "rounds": 5, "warmup": 2,
                                   "prompt_tokens": 32, "gen_tokens": 64, "gate": False,
                                   "dtypes": ["float32"]}
DEFAULT_BENCH_MODELS = ["llama", "mamba2", "qwen3_next", "qwen3_5"]


def _profile(raw: Any, path: str) -> dict[str, Any]:
    profile = mapping(raw, path, PROFILE_KEYS)
    for key, value in profile.items():
        if key == "models":
            continue
        if key == "dtypes":  # throughput only: parity is float32 everywhere
            if not isinstance(value, list) or not value or not set(value) <= set(DTYPES):
                raise fail(f"{path}.dtypes", f"{value!r}; expected a list of {', '.join(DTYPES)}")
            continue
        if key == "gate":
            if not isinstance(value, bool):
                raise fail(f"{path}.gate", "expected true or false")
            continue
        values = value if key == "batches" else [value]
        minimum = 0 if key == "warmup" else 1
        if not isinstance(values, list) or not values or not all(
                isinstance(v, int) and v >= minimum for v in values):
            raise fail(f"{path}.{key}", f"{value!r}; expected integer(s) >= {minimum}")
    return {**DEFAULT_PROFILE, **profile}


def _bench(raw: Any, registry: Registry) -> dict[str, Any]:
    bench = mapping(raw or {}, "settings.bench", {"default", "models", "profiles"})
    models = list(names(bench.get("models", DEFAULT_BENCH_MODELS), "settings.bench.models",
                        registry.models, "model"))
    raw_profiles = mapping(bench.get("profiles") or {"full": {}}, "settings.bench.profiles")
    profiles = {name: _profile(p or {}, f"settings.bench.profiles.{name}")
                for name, p in raw_profiles.items()}
    for name, profile in profiles.items():
        if "models" in profile:
            names(profile["models"], f"settings.bench.profiles.{name}.models", registry.models,
                  "model")
    default = bench.get("default", next(iter(profiles)))
    if default != "off" and default not in profiles:
        raise fail("settings.bench.default", f"{default!r}; known: off, {', '.join(profiles)}")
    return {"default": default, "models": models, "profiles": profiles}


def parse_settings(raw: Any, registry: Registry) -> dict[str, Any]:
    settings = {**DEFAULTS, **mapping(raw or {}, "settings", DEFAULTS)}
    settings["bench"] = _bench(settings["bench"], registry)
    for key in ("timeout_s", "tolerance", "throughput_threshold"):
        if not isinstance(settings[key], int | float) or settings[key] <= 0:
            raise fail(f"settings.{key}", f"{settings[key]!r}; expected a positive number")
    return settings
