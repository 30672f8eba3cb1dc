"""Typed records that travel between the rooms (pydantic v2; imports no mlx).

Every file the harness writes and reads back is one of these: a check's `ResultRow`, a
`PatchRow`, a tagged `BenchRow`, the need probe's `NeedRecord`, a cell's `CellDoc`, and the
report's `ReportRow` / `CompatDoc`. Each has one `to_json` / `from_json`; an unknown or
mistyped key is an error naming its path, never a silently dropped field.
"""
