"""A cell opts into the heavier checks with `extra_checks`; they stay out of a matrix that
lists no `checks:`, and a dtype row keeps float32 rows' identity."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from mlxcompat.checks.catalog import DEFAULT_CHECKS
from mlxcompat.matrix import MatrixError, parse_matrix
from mlxcompat.records.rows import ResultRow
from mlxcompat.runplan import plan, selection_parser

BASE = {
    "schema": 3,
    "backends": {"cpu": {"device": "cpu",
                         "requirement": {"linux": "mlx[cpu]=={v}", "darwin": "mlx=={v}"}}},
    "subjects": {"none": {}},
    "checks": ["parity"],
    "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2", "extra_checks": ["server", "shapes"]},
              {"mlx-lm": "0.31.3", "mlx": "0.31.2"}],
    "expectations": [],
}


def _plan(doc: dict, cell: str, *argv: str):
    matrix = parse_matrix(doc)
    return plan(matrix, cell, selection_parser().parse_args(list(argv)), out=Path("x.json"),
                pins={"mlx-lm": "0.32.2"}, run_id="r")


def test_a_cell_adds_its_extra_checks_to_the_matrix_ones() -> None:
    run = _plan(BASE, "mlx-lm-0.32.2")
    assert run.checks[-3:] == ["parity", "server", "shapes"] and "install" in run.checks
    assert _plan(BASE, "mlx-lm-0.31.3").checks == []  # the matrix's, as before
    assert _plan(BASE, "mlx-lm-0.32.2", "--checks", "parity").checks == ["parity"]


def test_an_unknown_extra_check_names_the_path() -> None:
    doc = copy.deepcopy(BASE)
    doc["cells"][0]["extra_checks"] = ["servr"]
    with pytest.raises(MatrixError, match=r"cells\[0\].extra_checks\[0\]"):
        parse_matrix(doc)


def test_heavy_checks_are_not_in_the_defaults() -> None:
    assert "process-state" in DEFAULT_CHECKS
    assert not {"server", "shapes", "prompt-cache", "dtype-parity", "dtype-cache"} \
        & set(DEFAULT_CHECKS)


def test_a_float32_row_keeps_its_identity() -> None:
    old = ResultRow(check="parity", subject="none", verdict="pass", model="llama", mode="fresh")
    assert old.dtype == "" and old.key() == ("parity", "llama", "fresh", "", "", "", "", "",
                                             "none")
    new = old.model_copy(update={"check": "dtype-parity", "dtype": "bfloat16"})
    assert new.about.text == "dtype-parity llama fresh bfloat16"
