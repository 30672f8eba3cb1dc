"""Process state a patch must leave alone, observed before and after an entry point.

A server seeds its sampling, picks its device and stream, configures logging and reads its
environment before it applies patches; an entry point that changes any of them changes the
server. Observed here: mlx's global random key (`mx.random.state[0]`, read without drawing),
the default device and its default stream, the root logger and every logger that existed
before (level, handlers, propagate, disabled) and `logging.disable`, `os.environ`, and the
modules newly imported (recorded; importing mlx_lm's modules is a patch's job).
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass
from typing import Any

from mlxcompat.records.patches import ProcessState


@dataclass
class Snapshot:
    key: list[int]
    device: str
    stream: str
    loggers: dict[str, tuple[Any, ...]]
    disable: int
    environ: dict[str, str]
    modules: frozenset[str]


def _logger_state(logger: logging.Logger) -> tuple[Any, ...]:
    return (logger.level, tuple(id(h) for h in logger.handlers), logger.propagate,
            logger.disabled)


def _loggers() -> dict[str, tuple[Any, ...]]:
    found = {"(root)": _logger_state(logging.getLogger())}
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if isinstance(logger, logging.Logger):
            found[name] = _logger_state(logger)
    return found


def take() -> Snapshot:
    import mlx.core as mx

    state: Any = mx.random.state
    device = mx.default_device()
    return Snapshot(key=[int(x) for x in state[0].tolist()], device=str(device),
                    stream=str(mx.default_stream(device)), loggers=_loggers(),
                    disable=logging.root.manager.disable, environ=dict(os.environ),
                    modules=frozenset(sys.modules))


_FIELDS = ("level", "handlers", "propagate", "disabled")


def _logging_changes(before: Snapshot, after: Snapshot) -> list[str]:
    found = []
    for name, old in before.loggers.items():
        new = after.loggers.get(name)
        if new is None:
            found.append(f"{name}: removed")
            continue
        found += [f"{name}: {field} {a!r} -> {b!r}" if field != "handlers" else
                  f"{name}: handlers {len(a)} -> {len(b)} (other objects)"
                  for field, a, b in zip(_FIELDS, old, new, strict=True) if a != b]
    if before.disable != after.disable:
        found.append(f"logging.disable {before.disable} -> {after.disable}")
    return found


def compare(before: Snapshot, after: Snapshot) -> ProcessState:
    def how(key: str) -> str:
        return ("added" if key not in before.environ else
                "removed" if key not in after.environ else "changed")

    keys = sorted(set(before.environ) | set(after.environ))
    environ = [f"{k}: {how(k)}" for k in keys if before.environ.get(k) != after.environ.get(k)]
    new = sorted(after.modules - before.modules)
    top = sorted({m.split(".")[0] for m in new})
    return ProcessState(random_key=[before.key, after.key], device=[before.device, after.device],
                        stream=[before.stream, after.stream],
                        logging=_logging_changes(before, after), environ=environ,
                        imported=top, modules=len(new))
