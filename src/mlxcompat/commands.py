"""`mlxcompat report | drift | bisect | releases | init`: the commands besides `run`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from packaging.version import Version

from mlxcompat.matrix import Matrix, MatrixError


def cmd_report(args: argparse.Namespace, matrix: Matrix) -> int:
    """Aggregate reports/raw into compat.{json,md,html}; fails closed (see report.build)."""
    from mlxcompat.report.aggregate import summary_line
    from mlxcompat.report.build import ReportPaths, build_report
    from mlxcompat.report.load import load_cells

    paths = ReportPaths.under(args.raw, args.out)
    only = tuple(c for c in args.cells.split(",") if c)
    labels = tuple(label for label in args.labels.split(",") if label)
    for doc in load_cells(args.raw, matrix, args.tag, only, labels).cells:
        install = doc.install
        took = f" {install.seconds}s" if install.seconds is not None else ""
        print(f"[mlxcompat] {summary_line(doc)} | install {'ok' if install.ok else 'failed'}"
              f"{took}")
    code, line = build_report(paths, matrix, accept=args.accept, html=not args.no_html,
                              tag=args.tag, only=only, since=args.since, labels=labels)
    if args.junit:
        from mlxcompat.report.ci import write_junit

        write_junit(paths.out / "compat.json", args.junit)
    if args.annotations:
        from mlxcompat.report.ci import print_annotations

        print_annotations(paths.out / "compat.json")
    if args.screenshot and not args.no_html:
        from mlxcompat.report.browser import SHOTS, find_browser, screenshots

        if find_browser() is None:
            print("mlxcompat report: no Chromium found; no screenshots made", file=sys.stderr)
        else:
            for png in screenshots(paths.out / "compat.html", SHOTS):
                print(f"mlxcompat report: wrote {png}")
    print(line)
    return code


def cmd_drift(args: argparse.Namespace, matrix: Matrix) -> int:
    """The API-drift scan of every release in the matrix (no model runs)."""
    from mlxcompat.drift import scan_matrix

    doc = scan_matrix(matrix, args.cache, args.out)
    failed = [r["cell"] for r in doc["rows"] if "error" in r]
    print(f"[mlxcompat] drift: {len(doc['rows'])} releases -> {args.out}"
          + (f"; unreadable: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def cmd_bisect(args: argparse.Namespace, matrix: Matrix) -> int:
    """Binary search over mlx-lm (or mlx-vlm) releases for the first one whose verdict
    changes."""
    from mlxcompat.bisection import Bisect, BisectError, run_bisect, validate
    from mlxcompat.records.files import write_json_atomic

    where = {k: getattr(args, k) for k in ("mode", "role", "scenario", "path")
             if getattr(args, k)}
    validate(matrix, args.check, args.model, where, args.subject)
    named = "-".join(where.values()) or "all"
    work = args.work or Path(".nox") / f"bisect-{args.check}-{args.model}-{named}"
    b = Bisect(matrix, args.check, args.model, where, args.subject, work.resolve(),
               args.noxfile.resolve(), args.axis)
    if args.axis == "subject":
        from mlxcompat.bisect_subjects import SubjectBisect

        if args.subject not in matrix.families or not args.cell:
            raise MatrixError("--axis subject walks a subject family's releases on one cell: "
                              f"--subject {'|'.join(matrix.families) or '<family>'} --cell ID")
        matrix.cell(args.cell)
        work = args.work or Path(".nox") / f"bisect-{args.subject}-{args.cell}-{args.check}"
        b = SubjectBisect(matrix, args.check, args.model, where, args.subject, work.resolve(),
                          args.noxfile.resolve(), "subject", cell=args.cell)
    try:
        result = run_bisect(b, args.between[0], args.between[1], args.wheels)
    except BisectError as exc:
        print(f"[bisect] {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("[bisect] interrupted; the nox run it started was stopped", file=sys.stderr)
        return 130
    write_json_atomic(work / "result.json", result)
    print(f"[bisect] {args.check} {args.model} {named} subject {args.subject}: "
          f"{len(result['visited'])} of {len(result['candidates'])} releases visited "
          f"in {result['seconds']}s")
    for version, seen in sorted(result["visited"].items(), key=lambda kv: Version(kv[0])):
        print(f"[bisect]   {version:>8}  {seen['finding']}  {seen['detail'][:100]}")
    if result["boundary"]:
        print(f"[bisect] boundary: {result['last_same']} -> {result['boundary']} "
              f"(first release whose finding differs from {result['candidates'][0]}'s)")
    else:
        print("[bisect] no change: both bounds give the same verdict")
    return 0


def cmd_releases(args: argparse.Namespace) -> int:
    """Releases on PyPI newer than the matrix's newest cells; --write appends cells, and
    records every subject family's releases in <matrix>.lock.json (the matrix loads after)."""
    from mlxcompat.matrix import load_matrix
    from mlxcompat.releases import check_releases, lock_families

    unlocked = lock_families(args.matrix, write=args.write)
    code = check_releases(load_matrix(args.matrix), args.matrix, write=args.write,
                          report=args.report)
    return max(code, int(bool(unlocked)))


def cmd_cells(args: argparse.Namespace, matrix: Matrix) -> int:
    """`cells=[...]` of a tag for $GITHUB_OUTPUT (the CI job matrix comes from matrix.yaml)."""
    import json

    cells = [c.id for c in matrix.cells_for("", args.tag)]
    if not cells:
        raise MatrixError(f"no cell has tag {args.tag!r}")
    print(f"cells={json.dumps(cells)}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """JSON Schemas of matrix.yaml, a cell JSON and compat.json."""
    from mlxcompat.schemas import write_schemas

    for path in write_schemas(args.out):
        print(f"mlxcompat schema: wrote {path}")
    return 0


def cmd_init(args: argparse.Namespace) -> int:
    """Starter matrix.yaml, noxfile.py and CI workflow in a folder, never overwriting."""
    from mlxcompat.scaffold import init_project

    return init_project(Path(args.path), args.package, args.entry_point, args.repository,
                        args.ref)


def add_commands(sub: argparse._SubParsersAction) -> None:
    report = sub.add_parser("report", help="aggregate reports/raw/*.json (fails closed)")
    report.add_argument("--raw", type=Path, default=Path("reports/raw"))
    report.add_argument("--out", type=Path, default=None, help="default: the folder above --raw")
    report.add_argument("--accept", action="store_true", help="promote this report to baseline")
    report.add_argument("--tag", default="", help="the run covered only this tag's cells")
    report.add_argument("--cells", default="", help="the run covered only these cells (a,b)")
    report.add_argument("--labels", default="",
                        help="runner labels the run asked for (a,b): each must have files")
    report.add_argument("--no-html", action="store_true", help="skip compat.html (no jinja2)")
    report.add_argument("--since", type=Path, default=None,
                        help="list changes against this compat.json (default: the one replaced)")
    report.add_argument("--junit", type=Path, default=None, help="also a JUnit XML file")
    report.add_argument("--annotations", action="store_true",
                        help="print ::error lines for GitHub Actions")
    report.add_argument("--screenshot", action="store_true",
                        help="also compat-{1280,390}-{top,grid,table}.png (laptop, phone)")
    report.set_defaults(func=cmd_report)
    drift = sub.add_parser("drift", help="API-drift scan of every matrix release's wheels")
    drift.add_argument("--cache", type=Path, default=Path(".nox/wheels"), help="wheel cache")
    drift.add_argument("--out", type=Path, default=Path("reports/drift.json"))
    drift.set_defaults(func=cmd_drift)
    bisect = sub.add_parser("bisect", help="first mlx-lm / mlx-vlm release where a verdict changes")
    bisect.add_argument("--check", required=True)
    bisect.add_argument("--model", default="", help="('' for patch-status / idempotence rows)")
    bisect.add_argument("--mode", default="", help="parity mode (e.g. history)")
    bisect.add_argument("--role", default="", help="role (patch-status, idempotence, import)")
    bisect.add_argument("--scenario", default="", help="scenario (glm4v, cache-contract)")
    bisect.add_argument("--path", default="", help="GLM4V path (inner, outer)")
    bisect.add_argument("--subject", default="none")
    bisect.add_argument("--between", nargs=2, required=True, metavar=("LOW", "HIGH"))
    bisect.add_argument("--axis", choices=("mlx-lm", "mlx-vlm", "subject"), default="mlx-lm",
                        help="which package's releases to walk (default mlx-lm; subject: the "
                        "releases of the family --subject on --cell)")
    bisect.add_argument("--cell", default="", help="the cell of --axis subject")
    bisect.add_argument("--work", type=Path, default=None, help="scratch folder")
    bisect.add_argument("--wheels", type=Path, default=Path(".nox/wheels"))
    bisect.add_argument("--noxfile", type=Path, default=Path("noxfile.py"))
    bisect.set_defaults(func=cmd_bisect)
    releases = sub.add_parser("releases", help="new upstream releases the matrix lacks")
    releases.add_argument("--write", action="store_true", help="append cells for them")
    releases.add_argument("--report", type=Path, default=Path("reports/compat.json"),
                          help="also name releases between cells where a verdict flips")
    releases.set_defaults(func=cmd_releases, no_matrix=True)
    cells = sub.add_parser("cells", help="cells=[...] of a tag, for a CI job matrix")
    cells.add_argument("--tag", default="all")
    cells.set_defaults(func=cmd_cells)
    schema = sub.add_parser("schema", help="write the JSON Schemas of matrix.yaml and the reports")
    schema.add_argument("--out", type=Path, default=Path("docs/schemas"))
    schema.set_defaults(func=cmd_schema, no_matrix=True)
    init = sub.add_parser("init", help="write a starter matrix.yaml, noxfile.py and workflow")
    init.add_argument("path", nargs="?", default=".")
    init.add_argument("--package", default="", help="your package with the patch modules")
    init.add_argument("--entry-point", action="append", default=[], metavar="ROLE=MOD:FUNC",
                      help="a patch entry point of the subject (repeatable)")
    init.add_argument("--repo", "--repository", dest="repository", default="",
                      help="mlxcompat's GitHub repository OWNER/NAME (default: the installed "
                      "package's Project-URL)")
    init.add_argument("--ref", default="", help="its tag (default: v<installed version>), "
                      "branch or commit; pinned to the commit it points at")
    init.set_defaults(func=cmd_init, no_matrix=True)
    from mlxcompat.ci_commands import add_ci_commands

    add_ci_commands(sub)


__all__ = ["MatrixError", "add_commands"]
