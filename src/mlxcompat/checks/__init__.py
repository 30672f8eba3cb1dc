"""Checks: pure functions of (model, mode, subject, tolerance) that return a `CheckResult`.

`guarded` turns whatever a check raises into a verdict, so one broken release never
aborts a run.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mlxcompat.results import CheckResult, SkipCheck, describe_exception

DEFAULT_TOLERANCE = 1e-4


def guarded(
    check: str, mode: str, model: str, subject: str, body: Callable[[], CheckResult]
) -> CheckResult:
    """Run `body`; SkipCheck becomes `skip`, any other exception `error` with its location."""
    start = time.perf_counter()
    try:
        result = body()
    except SkipCheck as exc:
        result = CheckResult(check, "skip", mode, model, subject, detail=str(exc))
    except Exception as exc:
        result = CheckResult(check, "error", mode, model, subject, detail=describe_exception(exc))
    result.seconds = round(time.perf_counter() - start, 4)
    return result
