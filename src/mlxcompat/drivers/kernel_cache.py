"""mlx's CPU kernel cache, which every process of the machine shares.

The CPU backend compiles each fused kernel into `<temp dir>/mlx/<version>/cpu` (a .cpp, then a
library) and opens it from there. A process that finds a file another process is still
writing fails in one of three ways: g++ reads a half-written source ("Failed to compile
function … g++ … return code 1"), dlopen a half-written library ("Could not load C++ shared
library …: file too short"), or dlsym finds the function missing ("Failed to load compiled
function"). On a cold cache the subject processes and servers of one cell compile the same
kernels at once, so a check can meet it: the machine's state, not the release's behaviour
(reproduced bare: docs/upstream/mlx_cpu_kernel_cache_race.py). Such a check runs once more
and its row says so; a kernel that really cannot be built fails the second time too, and
that error stands.
"""

from __future__ import annotations

OPENED_HALF_WRITTEN = ("file too short", "invalid ELF header", "ELF load command")
RETRY_PAUSE_S = 1.0


def is_half_written(text: str) -> bool:
    """Whether an error text is one of the three ways a kernel of the cache was used while
    another process was still writing it."""
    if "Could not load C++ shared library" in text:
        return any(mark in text for mark in OPENED_HALF_WRITTEN)
    return ("[Compile::eval_cpu] Failed to load compiled function" in text
            or ("[Compile::eval_cpu] Failed to compile function" in text
                and "/mlx/" in text and "/cpu/" in text))
