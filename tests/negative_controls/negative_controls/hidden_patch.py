"""Scales llama's attention output a little whenever more than one row is batched, from a module
no role of the subject names (`mlx_lm.models.llama`): its patch rows see no change, so only
the wide footprint (`mlxcompat.footprint`) keeps it from taking `none`'s behaviour rows, and
then its own parity rows fail."""

from negative_controls._wrap import replace_once


def apply():
    def make(original):
        def __call__(self, x, *args, **kwargs):
            out = original(self, x, *args, **kwargs)
            return out * 1.001 if x.shape[0] > 1 else out

        return __call__

    return replace_once("mlx_lm.models.llama", "Attention", "__call__", make)
