"""The shape of the code: rooms, floors, circles, back-arrows, string-key lookups, sizes.

    python scripts/architecture.py [SRC] [--json]

Reads src/mlxcompat with `ast` (nothing is imported). An import is any `import` /
`from … import` (relative ones resolved, function-level ones included) or an
`importlib.import_module("mlxcompat…")` with a literal name, anywhere in a module.

- room: the folder a module lives in (`report`, `checks`, …), or its group for top-level
  modules (TOP_LEVEL_ROOM below; the turn-taking wire protocol, used by the runner and the
  subject processes alike, sits with the records);
- floor: where a room sits in the data flow, records at the bottom, entry points at the top;
  a back-arrow is an import of a module on a higher floor (judging code inside drivers/, say);
- circle: a set of modules that import each other (a strongly connected component > 1);
- string-key lookups: `x["key"]` and `x.get("key")` / `.setdefault` / `.pop` with a literal
  string; "on records" when the key is a field of a cell JSON or compat.json row (the keys of
  the committed reports/raw/*.json and reports/compat.json, collected here);
- complexity: radon's cyclomatic complexity when radon is installed.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# floor -> rooms. A top-level module's room is given here; a package's room is its folder.
FLOORS: dict[int, tuple[str, ...]] = {
    0: ("records",),
    1: ("registry",),
    2: ("patches", "models", "drivers"),
    3: ("checks",),
    4: ("matrix",),
    5: ("suite",),
    6: ("runner",),
    7: ("report",),
    8: ("entry",),
}
TOP_LEVEL_ROOM = {
    # what every room reads and writes: records, error texts, the turn-taking wire protocol,
    # the bench lock between processes (a server check waits for it; runners take it)
    "results": "records", "records": "records", "errors": "records", "validation": "records",
    "gate": "records", "turns": "records", "cpuwatch": "records", "benchlock": "records",
    "placement": "records",
    "registry": "registry",
    # what a run is: the matrix, its settings and expectations, run specs, bench statistics
    "settings": "matrix", "expectations": "matrix", "matrix": "matrix", "spec": "matrix",
    "matrix_entries": "matrix", "matrix_schema": "matrix", "families": "matrix",
    "sources": "matrix",
    "bench": "matrix",
    "plugin": "suite", "subjects": "suite", "footprint": "suite", "borrow": "suite",
    "runner": "runner", "workers": "runner", "forkserver": "runner", "forkclient": "runner",
    "deadman": "runner",
    "merge": "runner",
    "inputs": "runner", "installs": "runner", "resolve": "runner", "pypi": "runner",
    "hosted": "runner",
    "sharing": "runner", "source_install": "runner", "bench_share": "runner",
}
ENTRY = "entry"
LOOKUP_METHODS = ("get", "setdefault", "pop")


def module_name(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


PACKAGES: set[str] = set()  # filled by graph(): modules that are packages (a folder)


def room_of(module: str) -> str:
    """A package's room is its folder (its __init__ included); a top-level module's, its group."""
    parts = module.split(".")
    if len(parts) > 2 or (len(parts) == 2 and module in PACKAGES):
        return parts[1]
    if len(parts) == 1:
        return "records"
    return TOP_LEVEL_ROOM.get(parts[1], ENTRY)


def floor_of(room: str) -> int:
    return next(f for f, rooms in FLOORS.items() if room in rooms)


def _imports(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)
    return found


def graph(src: Path) -> dict[str, set[str]]:
    files = {module_name(p, src.parent): p for p in sorted(src.rglob("*.py"))}
    edges: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if path.name == "__init__.py":
            PACKAGES.add(name)
        wanted = _imports(tree, name, path.name == "__init__.py")
        edges[name] = {m for m in wanted if m in files and m != name}
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def back_arrows(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Imports whose target sits on a higher floor; a package's __init__ counts as its room."""
    found = []
    for source, targets in edges.items():
        for target in targets:
            if floor_of(room_of(target)) > floor_of(room_of(source)):
                found.append((source, target))
    return sorted(found)


def record_keys(root: Path) -> set[str]:
    """Every dict key of a tree's committed cell JSONs and compat.json (its record vocabulary)."""
    keys: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(k, str) and k.isidentifier():
                    keys.add(k)
                walk(v)
        elif isinstance(value, list):
            for v in value[:200]:
                walk(v)

    for path in [*sorted((root / "reports" / "raw").glob("*.json")),
                 root / "reports" / "compat.json"]:
        if path.exists() and not path.name.endswith(".bench.json"):
            walk(json.loads(path.read_text(encoding="utf-8")))
    return keys


def string_lookups(src: Path, vocabulary: set[str]) -> tuple[int, int]:
    total = on_records = 0
    for path in src.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            key = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in LOOKUP_METHODS and node.args
                  and isinstance(node.args[0], ast.Constant)):
                key = node.args[0].value
            if isinstance(key, str):
                total += 1
                on_records += key in vocabulary
    return total, on_records


def complexity(src: Path) -> tuple[int, str]:
    try:
        from radon.complexity import cc_visit
    except ImportError:
        return 0, "radon not installed"
    worst = (0, "")
    for path in src.rglob("*.py"):
        for block in cc_visit(path.read_text(encoding="utf-8")):
            if block.complexity > worst[0]:
                worst = (block.complexity, f"{path.relative_to(src.parent)}:{block.name}")
    return worst


def summary(src: Path, vocabulary: set[str] | None = None) -> dict[str, object]:
    """The figures of one source tree; `vocabulary`: the record keys lookups are counted
    against (default: the keys of this tree's own reports)."""
    edges = graph(src)
    rooms = sorted({room_of(m) for m in edges})
    sizes = {str(p.relative_to(src.parent)): len(p.read_text(encoding="utf-8").splitlines())
             for p in src.rglob("*.py")}
    largest = max(sizes.items(), key=lambda kv: kv[1])
    total, on_records = string_lookups(src, vocabulary or record_keys(src.parents[1]))
    cc, where = complexity(src)
    return {"modules": len(edges), "lines": sum(sizes.values()), "rooms": rooms,
            "floors": len({floor_of(r) for r in rooms}), "circles": circles(edges),
            "back_arrows": back_arrows(edges), "string_key_lookups": total,
            "string_key_lookups_on_records": on_records,
            "largest_file": list(largest), "highest_complexity": [cc, where]}


def main(argv: list[str]) -> int:
    """`architecture.py [SRC] [--json] [--vocabulary TREE ...]`: with --vocabulary, lookups
    are counted against the union of the record keys of those trees' reports (to compare two
    trees whose reports differ in schema)."""
    trees = [Path(a) for a in argv[argv.index("--vocabulary") + 1:]] if "--vocabulary" in argv \
        else []
    argv = argv[:argv.index("--vocabulary")] if "--vocabulary" in argv else argv
    args = [a for a in argv if not a.startswith("--")]
    src = Path(args[0]).resolve() if args else ROOT / "src" / "mlxcompat"
    vocabulary = set().union(*(record_keys(t) for t in trees)) if trees else None
    found = summary(src, vocabulary)
    if "--json" in argv:
        print(json.dumps(found, indent=1))
        return 0
    print(f"{found['modules']} modules, {found['lines']} lines in {src}")
    print(f"rooms ({len(found['rooms'])}): {', '.join(found['rooms'])}; floors: {found['floors']}")
    print(f"circles: {len(found['circles'])}")
    for c in found["circles"]:
        print(f"  {' <-> '.join(c)}")
    print(f"back-arrows: {len(found['back_arrows'])}")
    for a, b in found["back_arrows"]:
        print(f"  {a} -> {b}")
    print(f"string-key lookups: {found['string_key_lookups']} "
          f"({found['string_key_lookups_on_records']} on record fields)")
    print(f"largest file: {found['largest_file'][0]} ({found['largest_file'][1]} lines)")
    print(f"highest complexity: {found['highest_complexity'][0]} "
          f"({found['highest_complexity'][1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
