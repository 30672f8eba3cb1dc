"""The test cases of one subject run: every check's cases from the catalog, and the
throughput cases of the bench profile."""

from __future__ import annotations

from dataclasses import dataclass

from mlxcompat.checks.catalog import SPECS
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

    @property
    def id(self) -> str:
        return "-".join(p for p in (self.model, str(self.batch),
                                    "" if self.dtype == "float32" else self.dtype) if p)


def selection(run: SubjectRun, registry: Registry) -> Selection:
    return Selection(run.subject, registry, tuple(run.models), tuple(run.entry_points),
                     run.installs, tuple(run.checks),
                     tuple((k, tuple(v)) for k, v in sorted(run.only.items())))


def check_cases(run: SubjectRun, registry: Registry) -> list[Case]:
    """Every case this run records, in the catalog's order (the plugin sorts by `order`)."""
    chosen = selection(run, registry)
    return [case for spec in SPECS if spec.selectable for case in spec.cases(chosen)]


def bench_cases(run: SubjectRun, registry: Registry, kind: str) -> list[BenchCase]:
    """Throughput cases of every bench model in the run; `sequential` for `none` only, and
    only for BatchGenerator models (its baseline is one prompt through generate_step)."""
    profile = run.bench
    if profile is None or (kind == "sequential" and run.subject != UPSTREAM):
        return []
    return [BenchCase(kind, m, b, dtype) for m in profile.models if m in run.models
            and (kind == "throughput" or registry.models[m].runner == "lm")
            for b in profile.batches for dtype in profile.dtypes]
