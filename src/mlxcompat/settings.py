"""matrix.yaml `settings`: run budget, tolerance, backend and the throughput profiles.

A bench profile is one record (`BenchProfile`): the matrix builds it, a subject process
receives it in its `SubjectRun`, the bench reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mlxcompat.records.base import Record
from mlxcompat.registry import Registry
from mlxcompat.validation import fail, mapping, names

KEYS = {"python", "timeout_s", "tolerance", "throughput_threshold", "bench", "backend",
        "force_cpu_devices"}
PROFILE_KEYS = {"batches", "rounds", "warmup", "prompt_tokens", "gen_tokens", "repeats",
                "gating", "models", "dtypes", "prompts"}
PROMPT_SHAPES = ("uniform", "mixed")
DTYPES = ("float32", "bfloat16", "float16", "q4")  # q4: 4-bit weights (mlx.nn.quantize)
DEFAULT_BENCH_MODELS = ("llama", "mamba2", "qwen3_next", "qwen3_5")


class BenchProfile(Record):
    """What one bench run measures. Only a `gating` profile is ever compared with a baseline
    (of the same machine fingerprint); the others are reported, never gated."""

    name: str
    batches: tuple[int, ...] = (1, 4, 8, 16)
    rounds: int = 5
    warmup: int = 2
    prompt_tokens: int = 32
    gen_tokens: int = 64
    # measurements per round: a round's tok/s is the tokens of `repeats` back-to-back runs
    # over their seconds, so a round outlasts a host whose CPU speed switches every ~0.5 s
    repeats: int = 1
    gating: bool = False
    models: tuple[str, ...] = DEFAULT_BENCH_MODELS
    dtypes: tuple[str, ...] = ("float32",)
    prompts: tuple[str, ...] = ("uniform",)  # prompt-length shapes (bench.prompt_lengths)


@dataclass(frozen=True)
class BenchSettings:
    default: str = "off"
    models: tuple[str, ...] = DEFAULT_BENCH_MODELS
    profiles: dict[str, BenchProfile] = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    python: str = "3.11"
    timeout_s: float = 1200
    tolerance: float = 1e-4
    throughput_threshold: float = 0.2
    backend: str = "cpu"
    force_cpu_devices: tuple[str, ...] = ()
    bench: BenchSettings = field(default_factory=BenchSettings)


def _profile(name: str, raw: Any, path: str, models: tuple[str, ...],
             registry: Registry) -> BenchProfile:
    profile = mapping(raw, path, PROFILE_KEYS)
    for key, value in profile.items():
        if key == "models":
            names(value, f"{path}.models", registry.models, "model")
            continue
        if key == "dtypes":  # throughput only: parity is float32 everywhere
            if not isinstance(value, list) or not value or not set(value) <= set(DTYPES):
                raise fail(f"{path}.dtypes", f"{value!r}; expected a list of {', '.join(DTYPES)}")
            continue
        if key == "prompts":
            if not isinstance(value, list) or not value or not set(value) <= set(PROMPT_SHAPES):
                raise fail(f"{path}.prompts", f"{value!r}; expected a list of "
                           f"{', '.join(PROMPT_SHAPES)}")
            continue
        if key == "gating":
            if not isinstance(value, bool):
                raise fail(f"{path}.gating", "expected true or false")
            continue
        values = value if key == "batches" else [value]
        minimum = 0 if key == "warmup" else 1
        if not isinstance(values, list) or not values or not all(
                isinstance(v, int) and v >= minimum for v in values):
            raise fail(f"{path}.{key}", f"{value!r}; expected integer(s) >= {minimum}")
    return BenchProfile.from_json({"name": name, "models": models, **profile}, path)


def _bench(raw: Any, registry: Registry) -> BenchSettings:
    bench = mapping(raw or {}, "settings.bench", {"default", "models", "profiles"})
    models = names(bench.get("models", list(DEFAULT_BENCH_MODELS)), "settings.bench.models",
                   registry.models, "model")
    raw_profiles = mapping(bench.get("profiles") or {"full": {}}, "settings.bench.profiles")
    profiles = {name: _profile(name, p or {}, f"settings.bench.profiles.{name}", models,
                               registry) for name, p in raw_profiles.items()}
    default = bench.get("default", next(iter(profiles)))
    if default != "off" and default not in profiles:
        raise fail("settings.bench.default", f"{default!r}; known: off, {', '.join(profiles)}")
    return BenchSettings(str(default), models, profiles)


def parse_settings(raw: Any, registry: Registry) -> Settings:
    given = mapping(raw or {}, "settings", KEYS)
    for key in ("timeout_s", "tolerance", "throughput_threshold"):
        value = given.get(key, getattr(Settings, key))
        if not isinstance(value, int | float) or value <= 0:
            raise fail(f"settings.{key}", f"{value!r}; expected a positive number")
    patterns = given.get("force_cpu_devices", [])
    if not isinstance(patterns, list) or not all(isinstance(p, str) for p in patterns):
        raise fail("settings.force_cpu_devices", "expected a list of device-name patterns")
    plain = {k: v for k, v in given.items() if k not in ("bench", "force_cpu_devices")}
    return Settings(**plain, force_cpu_devices=tuple(patterns),
                    bench=_bench(given.get("bench"), registry))


__all__ = ["DTYPES", "BenchProfile", "BenchSettings", "Settings", "parse_settings"]
