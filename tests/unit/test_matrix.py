"""matrix.yaml validation: each kind of mistake gives one line naming the key path."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from mlxcompat.matrix import MatrixError, load_matrix, parse_matrix
from mlxcompat.records.rows import ResultRow

ROOT = Path(__file__).resolve().parents[2]

BASE = {
    "schema": 3,
    "backends": {"cpu": {"device": "cpu",
                         "requirement": {"linux": "mlx[cpu]=={v}", "darwin": "mlx=={v}"}}},
    "subjects": {"none": {}, "mine": {"entry_points": {"mamba": "pkg.mod:fn"}}},
    "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2"}],
    "expectations": [],
}


def _with(path: str, value: object) -> dict:
    doc = copy.deepcopy(BASE)
    *parents, last = path.split("/")
    node = doc
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    node[last if isinstance(node, dict) else int(last)] = value
    return doc


def _error(doc: dict) -> str:
    with pytest.raises(MatrixError) as info:
        parse_matrix(doc)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_the_project_matrix_is_valid_and_has_every_kind_of_cell() -> None:
    matrix = load_matrix(ROOT / "matrix.yaml")
    ids = [c.id for c in matrix.cells]
    assert "mlx-lm-0.28.0" in ids and "mlx-vlm-0.7.10" in ids
    assert len(ids) == len(set(ids))
    assert {c.id for c in matrix.cells if "quick" in c.tags} >= {"mlx-lm-0.32.2"}


def test_minimal_document_parses_with_defaults() -> None:
    matrix = parse_matrix(BASE)
    (cell,) = matrix.cells
    assert cell.id == "mlx-lm-0.32.2"
    assert cell.requirements(matrix.mlx_template("linux")) == ["mlx-lm==0.32.2", "mlx[cpu]==0.32.2"]
    assert cell.requirements(matrix.mlx_template("darwin"))[-1] == "mlx==0.32.2"


def test_unknown_key_names_path_and_allowed_keys() -> None:
    msg = _error(_with("cells/0/mlx_lm", "0.32.2"))
    assert "cells[0].mlx_lm: unknown key; allowed:" in msg
    assert "mlx-lm" in msg


def test_bad_version() -> None:
    assert "cells[0].mlx: 'latest' is not a valid version" in _error(_with("cells/0/mlx", "latest"))


def test_missing_pin() -> None:
    doc = copy.deepcopy(BASE)
    del doc["cells"][0]["mlx"]
    assert "cells[0].mlx: missing pin" in _error(doc)


def test_duplicate_cell_id() -> None:
    doc = copy.deepcopy(BASE)
    doc["cells"].append({"mlx-lm": "0.32.2", "mlx": "0.32.4"})
    assert "cells[1].id: duplicate cell id 'mlx-lm-0.32.2' (also cells[0])" in _error(doc)


def test_unknown_model() -> None:
    msg = _error(_with("cells/0/models", ["llama", "gpt2"]))
    assert "cells[0].models[1]: unknown model 'gpt2'; known:" in msg


def test_unknown_subject() -> None:
    msg = _error(_with("cells/0/subjects", ["nobody"]))
    assert "cells[0].subjects[0]: unknown subject 'nobody'" in msg


def test_unknown_check() -> None:
    assert "checks[0]: unknown check 'speed'" in _error(_with("checks", ["speed"]))


def test_schema_1_is_refused_with_a_pointer() -> None:
    assert "this mlxcompat reads schema 3" in _error(_with("schema", 1))


def test_schema_2_is_refused_naming_the_fix() -> None:
    msg = _error(_with("schema", 2))
    assert "`match.mode` of import / patch-status / idempotence is now `role`" in msg
    assert "`gate` is now `gating`" in msg


@pytest.mark.parametrize(("match", "words"), [
    ({"check": "patch-status", "mode": ["mamba"]}, "match.mode: no check of patch-status has a"),
    ({"check": "glm4v", "scenario": ["padded/inner"]},
     "match.scenario[0]: unknown scenario 'padded/inner'; known: equal"),
    ({"check": "parity", "role": ["mamba"]}, "match.role: no check of parity has a 'role'"),
])
def test_each_key_of_an_expectation_means_one_thing(match, words) -> None:
    exp = {"match": {**match, "mlx-lm": "<1"}, "verdict": "fail", "reason": "r"}
    assert words in _error(_with("expectations", [exp]))


def test_bad_specifier_in_expectation() -> None:
    exp = {"match": {"mlx-lm": "=>0.30"}, "verdict": "fail", "reason": "r", "open": True,
           "link": "https://x.org"}
    msg = _error(_with("expectations", [exp]))
    assert "expectations[0].match.mlx-lm: '=>0.30' is not a version specifier" in msg


def test_expectation_needs_reason_and_known_verdict() -> None:
    no_reason = {"match": {"model": "mamba", "mlx-lm": "<1"}, "verdict": "fail"}
    assert "expectations[0].reason" in _error(_with("expectations", [no_reason]))
    bad = {"match": {"model": "mamba", "mlx-lm": "<1"}, "verdict": "broken", "reason": "r"}
    assert "expectations[0].verdict: 'broken'; allowed" in _error(_with("expectations", [bad]))


def test_entry_point_shape() -> None:
    msg = _error(_with("subjects/mine/entry_points/mamba", "pkg.mod.fn"))
    assert "entry_points.mamba: 'pkg.mod.fn' is not of the form module:function" in msg


def test_unknown_role() -> None:
    msg = _error(_with("subjects/mine/entry_points", {"speedup": "a:b"}))
    assert "subjects.mine.entry_points.speedup: unknown key" in msg


def test_invalid_yaml_file(tmp_path: Path) -> None:
    bad = tmp_path / "m.yaml"
    bad.write_text("cells: [\n")
    with pytest.raises(MatrixError, match="not valid YAML"):
        load_matrix(bad)


def test_expectation_matching_by_specifier_and_name() -> None:
    exp = {"match": {"check": "parity", "model": "mamba", "mlx-lm": ">=0.30.4,<0.33"},
           "verdict": "fail", "reason": "Mamba v1 ignores padding masks"}
    matrix = parse_matrix(_with("expectations", [exp]))
    result = ResultRow(check="parity", model="mamba", mode="fresh", subject="none",
                       verdict="fail")
    assert matrix.expectation_for(result, "c", {"mlx-lm": "0.32.2"}) is not None
    assert matrix.expectation_for(result, "c", {"mlx-lm": "0.29.1"}) is None
    llama = result.model_copy(update={"model": "llama"})
    assert matrix.expectation_for(llama, "c", {"mlx-lm": "0.32.2"}) is None


def test_glm4v_expectations_match_scenario_and_path_apart() -> None:
    exp = {"match": {"check": "glm4v", "scenario": ["merge"], "path": "outer", "mlx-lm": "<1"},
           "verdict": "fail", "reason": "r"}
    matrix = parse_matrix(_with("expectations", [exp]))
    row = ResultRow(check="glm4v", model="glm4v_moe", scenario="merge", path="outer",
                    subject="none", verdict="fail")
    assert matrix.expectation_for(row, "c", {"mlx-lm": "0.3"}) is not None
    inner = row.model_copy(update={"path": "inner"})
    assert matrix.expectation_for(inner, "c", {"mlx-lm": "0.3"}) is None


def test_globs_are_not_names() -> None:
    exp = {"match": {"check": "parity", "mode": ["[fsl]*"], "mlx-lm": "<1"}, "verdict": "fail",
           "reason": "r"}
    assert "match.mode[0]: unknown mode '[fsl]*'; known: fresh" in _error(
        _with("expectations", [exp]))


def test_expectation_needs_an_upper_bound_or_open_with_link() -> None:
    unbounded = {"match": {"model": "mamba", "mlx-lm": ">=0.30"}, "verdict": "fail",
                 "reason": "r"}
    assert "give a version upper bound" in _error(_with("expectations", [unbounded]))
    no_link = {"match": {"model": "mamba"}, "verdict": "fail", "reason": "r", "open": True}
    assert "needs the https link" in _error(_with("expectations", [no_link]))


def test_bounds_belong_to_their_verdicts() -> None:
    delta = {"match": {"model": "mamba", "mlx-lm": "<1"}, "verdict": "error", "reason": "r",
             "max_delta": 0.1}
    assert "only with verdict fail" in _error(_with("expectations", [delta]))
    regex = {"match": {"model": "mamba", "mlx-lm": "<1"}, "verdict": "fail", "reason": "r",
             "error": "TypeError"}
    assert "only with verdict error" in _error(_with("expectations", [regex]))


def test_project_models_and_roles_are_declared_like_builtins() -> None:
    doc = _with("models", {"tiny_gemma": {"factory": "srv.models:gemma", "runner": "lm"}})
    doc["roles"] = {"gemma": {"targets": ["mlx_lm.models.gemma3_text"], "checks": ["parity"],
                              "models": ["tiny_gemma"]}}
    doc["subjects"]["mine"]["entry_points"] = {"gemma": "srv.patch:apply"}
    matrix = parse_matrix(doc)
    assert matrix.registry.models["tiny_gemma"].runner == "lm"
    assert matrix.registry.roles["gemma"].models == ("tiny_gemma",)
    assert "a model 'llama' is built in" in _error(
        _with("models", {"llama": {"factory": "a:b", "runner": "lm"}}))


def test_round_trip_of_project_matrix_through_yaml() -> None:
    data = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    assert parse_matrix(data, ROOT / "matrix.yaml").cells == load_matrix(ROOT / "matrix.yaml").cells


def test_backend_recipes_per_platform() -> None:
    matrix = load_matrix(ROOT / "matrix.yaml")
    (cell,) = [c for c in matrix.cells if c.id == "mlx-lm-0.32.2"]
    assert cell.requirements(matrix.mlx_template("linux", "cuda"))[-1] == "mlx[cuda13]==0.32.2"
    assert cell.requirements(matrix.mlx_template("darwin", "metal"))[-1] == "mlx==0.32.2"
    assert matrix.backend("cuda").device == "gpu" and matrix.backend().name == "cpu"
    with pytest.raises(MatrixError, match="backend cuda cannot be installed on darwin"):
        matrix.mlx_template("darwin", "cuda")


def test_unknown_default_backend() -> None:
    assert "settings.backend: 'tpu'; known: cpu" in _error(_with("settings", {"backend": "tpu"}))


def test_expectation_lists_are_any_of() -> None:
    exp = {"match": {"subject": ["none", "mine"], "model": "mamba", "mlx-lm": "<1"},
           "verdict": "error", "reason": "no patch"}
    matrix = parse_matrix(_with("expectations", [exp]))
    row = ResultRow(check="parity", model="mamba", mode="fresh", subject="mine",
                    verdict="error")
    assert matrix.expectation_for(row, "c", {"mlx-lm": "0.3"}) is not None
    other = row.model_copy(update={"subject": "other"})
    assert matrix.expectation_for(other, "c", {"mlx-lm": "0.3"}) is None
    bad = {"match": {"subject": ["none", "nobody"], "mlx-lm": "<1"}, "verdict": "error",
           "reason": "r"}
    assert "expectations[0].match.subject[1]: unknown subject 'nobody'" in _error(
        _with("expectations", [bad]))


def test_reading_the_matrix_imports_no_mlx() -> None:
    """nox and the report read matrix.yaml where no MLX is installed (the README's first
    command installs only nox, uv, pyyaml, packaging, numpy and pydantic)."""
    import subprocess
    import sys

    code = ("import sys; from mlxcompat.matrix import load_matrix; load_matrix(sys.argv[1]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('mlx', 'mlx_lm', 'mlx_vlm', 'transformers')))")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT / "matrix.yaml")],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
