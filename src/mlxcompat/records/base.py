"""The record base: unknown keys fail loudly; one `to_json` / `from_json` per record."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, ValidationError


class RecordError(ValueError):
    """A document that is not the record it claims to be; the message names the key path."""


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "<top>"


def describe(error: ValidationError, where: str = "", shown: int = 3) -> str:
    """One line: the first problems, each with its key path, and how many more there are."""
    problems = error.errors()
    parts = [f"{_path(tuple(p['loc']))}: {p['msg']}" for p in problems[:shown]]
    more = f" (+{len(problems) - shown} more)" if len(problems) > shown else ""
    prefix = f"{where}: " if where else ""
    return prefix + "; ".join(parts) + more


class Record(BaseModel):
    """A record: fields are declared, unknown keys are refused."""

    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> dict[str, Any]:
        return self.model_dump()

    @classmethod
    def from_json(cls, data: Any, where: str = "") -> Self:
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise RecordError(describe(exc, where or cls.__name__)) from None
