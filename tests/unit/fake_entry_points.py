"""Entry points for test_subjects: each behaves like a kind of upstream patch function."""

import logging

from mlxcompat.patches.status import PatchStatus


def returns_status():
    return PatchStatus("mamba", "skipped", "native")


def logs_only():
    logging.getLogger("fake").info("nothing to do")


def raises():
    raise RuntimeError("boom")


def returns_false():
    return False
