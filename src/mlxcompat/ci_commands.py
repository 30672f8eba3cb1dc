"""`mlxcompat runners | installable`: what CI needs to know before it asks GitHub for runners."""

from __future__ import annotations

import argparse
from pathlib import Path

from mlxcompat.matrix import Matrix


def cmd_runners(args: argparse.Namespace) -> int:
    from mlxcompat.hosted import cmd_runners as run

    return run(args.check, args.today)


def cmd_installable(args: argparse.Namespace, matrix: Matrix) -> int:
    from mlxcompat.hosted import check, defaults
    from mlxcompat.installable import cmd_installable as run

    labels = [label for label in args.labels.split(",") if label] or defaults()
    errors, _ = check(labels)
    if errors:
        print("\n".join(f"mlxcompat installable: {e}" for e in errors))
        return 1
    return run(matrix, labels, args.out, args.backend)


def add_ci_commands(sub: argparse._SubParsersAction) -> None:
    runners = sub.add_parser("runners", help="GitHub-hosted macOS labels and their lifetimes")
    runners.add_argument("--check", default="", metavar="JSON",
                         help="a JSON list of labels: fails on a retired, unknown or Intel one")
    runners.add_argument("--today", default="", help="check as of this date (YYYY-MM-DD)")
    runners.set_defaults(func=cmd_runners, no_matrix=True)
    inst = sub.add_parser("installable", help="resolve every cell for each macOS label")
    inst.add_argument("--labels", default="", help="comma list (default: the default labels)")
    inst.add_argument("--out", type=Path, default=None, help="write the table (Markdown) here")
    inst.add_argument("--backend", default="metal", help="whose darwin mlx requirement")
    inst.set_defaults(func=cmd_installable)
