"""Does what is needed (our own SSM patch) and also wraps a cache method no family of the cell
needs replaced, exactly (the wrapper only calls the original): every output stays right, and
only patch-status can see that the patch is wider than the release needs."""

from mlxcompat.patches.mamba_cache import ensure_mamba_support
from negative_controls._wrap import replace_once


def apply():
    def make(original):
        def extract(self, idx):
            return original(self, idx)

        return extract

    replace_once("mlx_lm.models.cache", "ArraysCache", "extract", make)
    return ensure_mamba_support()
