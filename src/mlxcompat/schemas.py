"""`mlxcompat schema`: JSON Schemas of the files mlxcompat reads and writes, for editors and
for tools of an adopter's own (docs/schemas/ holds the committed copies; a test keeps them
current)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from mlxcompat.matrix_schema import MatrixFile
from mlxcompat.records.cell import CellDoc
from mlxcompat.records.report import CompatDoc

SCHEMAS: dict[str, tuple[type[BaseModel], str]] = {
    "matrix.schema.json": (MatrixFile, "matrix.yaml"),
    "cell.schema.json": (CellDoc, "reports/raw/<cell>[@<label>].json"),
    "compat.schema.json": (CompatDoc, "reports/compat.json")}


def schema_of(name: str) -> dict[str, Any]:
    model, what = SCHEMAS[name]
    found = model.model_json_schema(by_alias=True)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://mlxcompat.invalid/schemas/{name}", "description": what, **found}


def write_schemas(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCHEMAS:
        path = folder / name
        path.write_text(json.dumps(schema_of(name), indent=1, sort_keys=True) + "\n",
                        encoding="utf-8")
        written.append(path)
    return written
