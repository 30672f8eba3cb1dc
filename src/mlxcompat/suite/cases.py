"""The test cases of one subject run, derived from the matrix's models, roles and modes."""

from __future__ import annotations

from dataclasses import dataclass

from mlxcompat.registry import CACHE_CONTRACT_MODES, GLM4V_MODES, ModelDecl, Registry
from mlxcompat.spec import SubjectRun


@dataclass(frozen=True)
class Case:
    """One result row to come: which check, on which model, in which mode."""

    check: str
    model: str = ""
    mode: str = ""
    batch: int = 0
    dtype: str = ""  # throughput cases other than float32

    @property
    def id(self) -> str:
        return "-".join(str(p) for p in (self.model, self.mode, self.batch or "", self.dtype)
                        if p)


def _models(spec: SubjectRun, registry: Registry, runner: str) -> list[ModelDecl]:
    return [registry.models[m] for m in spec.models if registry.models[m].runner == runner]


def _wanted(spec: SubjectRun, check: str, mode: str) -> bool:
    return (not spec.checks or check in spec.checks) and (not spec.modes or mode in spec.modes)


def cases_for(check: str, spec: SubjectRun, registry: Registry) -> list[Case]:
    """Every case of `check` this run should record, in a stable order."""
    if check in ("throughput", "sequential"):
        if not spec.bench or (check == "sequential" and spec.subject != "none"):
            return []
        return [Case(check, m, "", b, "" if dtype == "float32" else dtype)
                for m in spec.bench["models"] if m in spec.models
                and (check == "throughput" or registry.models[m].runner == "lm")
                for b in spec.bench["batches"]
                for dtype in spec.bench.get("dtypes") or ("float32",)]
    if check == "install":
        return [Case(check)] if spec.installs and _wanted(spec, check, "") else []
    found: list[Case] = []
    if check in ("patch-status", "idempotence", "import"):
        found = [Case(check, "", role) for role in spec.entry_points]
    elif check == "parity":
        found = [Case(check, m.name, mode) for m in _models(spec, registry, "lm")
                 for mode in m.modes]
    elif check == "cache-contract":
        found = [Case(check, m.name, mode) for m in _models(spec, registry, "lm")
                 for mode in CACHE_CONTRACT_MODES]
    elif check == "glm4v":
        found = [Case(check, m.name, mode) for m in _models(spec, registry, "glm4v")
                 for mode in GLM4V_MODES]
    return [c for c in found if _wanted(spec, check, c.mode)]

