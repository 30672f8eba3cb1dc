"""Reseeds mlx's global random generator and changes nothing else (the bug
`ensure_mamba_support()` had: a server's sampling seed no longer counts after the patch)."""

import mlx.core as mx


def apply() -> bool:
    mx.random.seed(7)
    return True
