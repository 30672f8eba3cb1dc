"""Changes nothing and says so in a log line, as vllm-mlx 0.2.7+ does where mlx-lm needs no fix:
a correct subject whose behaviour rows are `none`'s (`mlxcompat.borrow`)."""

import logging


def apply():
    logging.getLogger("negative_controls").info("nothing to patch here")
