"""Sleeps in every decode step (MLXCOMPAT_SLOW_DECODE_S seconds, default 1 ms): a real
slowdown with exact output, which only the throughput gate can catch."""

import os
import time

from negative_controls._wrap import replace_once


def apply() -> bool:
    pause = float(os.environ.get("MLXCOMPAT_SLOW_DECODE_S", "0.001"))

    def make(original):
        def next(self, *args, **kwargs):
            if pause:
                time.sleep(pause)
            return original(self, *args, **kwargs)

        return next

    return replace_once("mlx_lm.generate", "BatchGenerator", "next", make)
