"""The A/A subjects' entry points (scripts/aa_history.py on the CPU, scripts/gpu/aa_matrix.py
on the GPU): each marks mlx_lm.generate, so it is timed, after doing what its name says."""
import importlib


def _mark():
    importlib.import_module("mlx_lm.generate")._aa_history_marker = True


def marker():
    _mark()
    return True


def probe():
    from mlxcompat.patches import ssm_probe

    ssm_probe.padding_leaks()
    _mark()
    return True


def probe_nocompile():
    import mlx.core as mx

    mx.disable_compile()
    try:
        probe()
    finally:
        mx.enable_compile()
    return True


def imports():
    from mlxcompat.patches import ssm_probe

    for family in ssm_probe.TINY:
        importlib.import_module(f"mlx_lm.models.{family}")
    _mark()
    return True


def probe_gc():
    import gc

    probe()
    gc.collect()
    return True


def probe_clear():
    import mlx.core as mx

    probe_gc()
    mx.clear_cache()
    return True
