"""Every check, by name: the one list the suite, the matrix, the CLI, bisect and the report
read. Adding a check is a module with a `SPEC` (plus its test) and a line here."""

from __future__ import annotations

from mlxcompat.checks import (
    cache_contract,
    dtypes,
    glm4v,
    parity,
    patch_status,
    process_state,
    prompt_cache,
    server,
    shapes,
    upstream,
    vlm,
)
from mlxcompat.checks.spec import Case, CheckSpec, Context, Selection
from mlxcompat.records.rows import ResultRow


def _no_cases(_: object) -> list[Case]:
    return []


def _harness_row(case: Case, ctx: Context) -> ResultRow:
    raise RuntimeError("`run` rows are written by the runner, never by the suite")


# The runner's own row: a subject process that crashed, timed out or lost rows.
RUN = CheckSpec("run", ("subject",), _no_cases, _harness_row, selectable=False,
                bisectable=False, order=9)

SPECS: tuple[CheckSpec, ...] = (
    patch_status.INSTALL, patch_status.IMPORT, parity.SPEC, cache_contract.SPEC, glm4v.SPEC,
    vlm.SPEC,
    prompt_cache.SPEC, shapes.SPEC, dtypes.PARITY, dtypes.CACHE, server.SPEC,
    patch_status.PATCH_STATUS, patch_status.IDEMPOTENCE, process_state.SPEC,
    upstream.SPEC, RUN,
)
CATALOG: dict[str, CheckSpec] = {s.name: s for s in SPECS}
# What matrix.yaml's `checks:` lists by default (the `always` ones run anyway).
DEFAULT_CHECKS: tuple[str, ...] = tuple(s.name for s in SPECS
                                        if s.selectable and s.default and not s.always)


def cases_of(selection: Selection) -> list[Case]:
    """Every case the selectable checks list for `selection`, in the catalog's order: what a
    subject's process collects, and what the report holds a cell file to."""
    return [case for spec in SPECS if spec.selectable for case in spec.cases(selection)]


def selectable() -> tuple[str, ...]:
    """Checks the suite runs: `--checks` and matrix.yaml `checks:` may name these."""
    return tuple(s.name for s in SPECS if s.selectable)


def bisectable() -> tuple[str, ...]:
    return tuple(s.name for s in SPECS if s.bisectable)


def spec(name: str) -> CheckSpec:
    if name not in CATALOG:
        raise KeyError(f"unknown check {name!r}; known: {', '.join(CATALOG)}")
    return CATALOG[name]
