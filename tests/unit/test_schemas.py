"""The published JSON Schemas: current, accepting what the loader accepts, and keyed exactly
as the hand-written validators are (neither may allow a key the other refuses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mlxcompat import expectations, families, matrix, matrix_entries, registry, settings, sources
from mlxcompat.matrix_schema import (
    CellFile,
    ExpectationFile,
    FamilyEntryFile,
    FamilyFile,
    MatchFile,
    MatrixFile,
    ModelFile,
    ProfileFile,
    RoleFile,
    SettingsFile,
    SourceFile,
    SubjectFile,
)
from mlxcompat.records.base import RecordError
from mlxcompat.schemas import SCHEMAS, schema_of

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_committed_schemas_are_current(name: str) -> None:
    committed = json.loads((ROOT / "docs" / "schemas" / name).read_text())
    assert committed == json.loads(json.dumps(schema_of(name))), (
        "stale: run `mlxcompat schema` and commit docs/schemas/")


def _keys(model: type) -> set[str]:
    return {f.alias or name for name, f in model.model_fields.items()}


@pytest.mark.parametrize(("model", "loader"), [
    (MatrixFile, matrix.TOP_KEYS), (SubjectFile, matrix_entries.SUBJECT_KEYS),
    (CellFile, matrix_entries.CELL_KEYS), (SettingsFile, settings.KEYS),
    (ProfileFile, settings.PROFILE_KEYS), (ExpectationFile, expectations.EXPECT_KEYS),
    (MatchFile, set(expectations.MATCH_KEYS)), (ModelFile, registry.MODEL_KEYS),
    (RoleFile, registry.ROLE_KEYS), (FamilyFile, families.FAMILY_KEYS),
    (FamilyEntryFile, families.ENTRY_KEYS), (SourceFile, sources.SOURCE_KEYS)])
def test_the_schema_and_the_loader_know_the_same_keys(model: type, loader: set[str]) -> None:
    assert _keys(model) == set(loader)


@pytest.mark.parametrize("path", ["matrix.yaml", "src/mlxcompat/builtin.yaml"])
def test_the_committed_files_validate(path: str) -> None:
    doc = yaml.safe_load((ROOT / path).read_text())
    if path.endswith("builtin.yaml"):
        doc = {"schema": 3, "backends": {}, "subjects": {}, "cells": [], **doc}
    MatrixFile.from_json(doc)


def test_a_mistyped_matrix_key_fails_the_schema_too() -> None:
    doc = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    first = next(i for i, c in enumerate(doc["cells"]) if "mlx-lm" in c)
    doc["cells"][first]["mlx_lm"] = doc["cells"][first].pop("mlx-lm")
    with pytest.raises(RecordError, match=rf"cells\[{first}\]\.mlx_lm"):
        MatrixFile.from_json(doc)
