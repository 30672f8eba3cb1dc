"""Compat tests run inside one cell with one subject; see `mlxcompat.plugin`."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
