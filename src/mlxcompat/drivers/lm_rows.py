"""A request to the batching path, as the checks describe it (imports no mlx, so the catalog
of checks can be read where no MLX is installed)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Row:
    """One request: its prompt, how many tokens to generate, optional history, and when it joins.

    `join_after` counts generation steps of the running batch before this row is inserted;
    `remove_after` cancels the row mid-decode (BatchGenerator.remove) after that many tokens.
    """

    prompt: list[int]
    max_tokens: int
    history: list[int] | None = None
    join_after: int = 0
    remove_after: int | None = None  # removed mid-decode once it has this many tokens
