"""The test cases of one subject run: every check's cases from the catalog, and the
throughput cases of the bench profile."""

from __future__ import annotations

from dataclasses import dataclass

from mlxcompat.checks.catalog import cases_of
from mlxcompat.checks.spec import Case, Selection
from mlxcompat.records.names import UPSTREAM
from mlxcompat.registry import Registry
from mlxcompat.spec import SubjectRun

BENCH_KINDS = ("throughput", "sequential")


@dataclass(frozen=True)
class BenchCase:
    """One throughput row to come (`sequential`: `none`'s one-at-a-time baseline)."""

    kind: str
    model: str
    batch: int
    dtype: str = "float32"
    prompts: str = "uniform"

    @property
    def id(self) -> str:
        return "-".join(p for p in (self.model, str(self.batch),
                                    "" if self.dtype == "float32" else self.dtype,
                                    "" if self.prompts == "uniform" else self.prompts) if p)


def selection(run: SubjectRun, registry: Registry) -> Selection:
    return Selection(run.subject, registry, tuple(run.models), tuple(run.entry_points),
                     run.installs, tuple(run.checks),
                     tuple((k, tuple(v)) for k, v in sorted(run.only.items())))


def check_cases(run: SubjectRun, registry: Registry) -> list[Case]:
    """Every case this run records, in the catalog's order (the plugin sorts by `order`)."""
    return cases_of(selection(run, registry))


SEQUENTIAL_PROMPTS = 2  # one at a time, every prompt of a batch runs at the same rate


def bench_cases(run: SubjectRun, registry: Registry, kind: str) -> list[BenchCase]:
    """Throughput cases of every bench model in the run; `sequential` (one prompt at a time
    through generate_step, the speedup's baseline) for `none` only, once per model, dtype and
    prompt shape, and only for BatchGenerator models."""
    profile = run.bench
    if profile is None or (kind == "sequential" and run.subject != UPSTREAM):
        return []
    models = [m for m in profile.models if m in run.models
              and (kind == "throughput" or registry.models[m].runner == "lm")]
    batches = profile.batches if kind == "throughput" else (SEQUENTIAL_PROMPTS,)
    return [BenchCase(kind, m, b, dtype, shape) for m in models for b in batches
            for dtype in profile.dtypes for shape in profile.prompts]
