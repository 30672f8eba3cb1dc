"""Defect: ensure_mamba_support() reseeds mlx's global random generator (issue 21 / 24).

Bare: stdlib, mlx, mlx_lm and our patch module, no harness. A server seeds the generator,
applies the patch, then samples: the draws must be the ones its seed gives without the patch.

    PYTHONPATH=src python scripts/repro/rng_reseed.py
"""

from __future__ import annotations

import importlib

import mlx.core as mx

from mlxcompat.patches import mamba_cache


def draws_after(seed: int, patch: bool) -> list[float]:
    mamba_cache.unpatch()
    mx.random.seed(seed)
    if patch:
        mamba_cache.ensure_mamba_support()
    return [round(x, 6) for x in mx.random.uniform(shape=(4,)).tolist()]


def main() -> None:
    print(f"mlx {mx.__version__}, mlx-lm {importlib.import_module('mlx_lm').__version__}")
    for seed in (1, 2):
        plain, patched = draws_after(seed, False), draws_after(seed, True)
        print(f"seed {seed}: without patch {plain}")
        print(f"seed {seed}: after ensure  {patched}  same: {plain == patched}")
    mamba_cache.unpatch()


if __name__ == "__main__":
    main()
