"""compat.md: headline first, unexpected outcomes next, then one matrix per check group.

Everything taken from cell JSONs is untrusted text: `cell_text` escapes what would break a
table or inject HTML. The document is kept under GitHub's 1 MiB step-summary limit.
"""

from __future__ import annotations

from typing import Any

from mlxcompat.report.tables import (
    ENV_KEYS,
    GLYPH,
    STATUS_GLYPH,
    Notes,
    Table,
    bench_rows,
    by_backend,
    env_rows,
    patch_table,
    verdict_tables,
)

LIMIT_BYTES = 1_000_000


def cell_text(value: Any) -> str:
    """One table cell: no newlines, `|` escaped, HTML special characters entity-encoded."""
    text = " ".join(str(value if value is not None else "").split())
    for raw, safe in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        text = text.replace(raw, safe)
    return text


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(cell_text(h) for h in headers) + " |",
           "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell_text(v) for v in row) + " |" for row in rows]
    return [*out, ""]


def headline(report: dict[str, Any], changes: dict[str, Any]) -> list[str]:
    counts = report["counts"]
    failed = report["install_failed"]
    parts = [f"**{len(report['cells'])} cells**" + (f" ({len(failed)} install failed)"
                                                       if failed else "")]
    parts += [f"{GLYPH[v]} {v} {counts[v]}" for v in counts]
    parts.append(f"**unexpected: {report['unexpected']}**")
    lines = [" · ".join(parts), ""]
    if changes["baseline"]:
        lines += [f"Since the baseline: {len(changes['new_failures'])} new failures, "
                  f"{len(changes['new_passes'])} new passes, {len(changes['throughput'])} "
                  f"throughput changes beyond ±{changes['threshold']:.0%}.", ""]
    else:
        lines += ["No baseline yet (`mlxcompat report --accept` makes this one the baseline).", ""]
    return lines


def _unexpected(report: dict[str, Any]) -> list[str]:
    rows = [r for r in report["results"] if r["outcome"] == "unexpected"]
    if not rows:
        return ["## Unexpected outcomes", "", "None: every outcome is as expected.", ""]
    body = [[r["cell"], r["check"], r["model"], r["mode"], r["subject"], r["verdict"],
             r["expected"] or "pass", r["detail"][:200]] for r in rows]
    return ["## Unexpected outcomes", "",
            *_table(["cell", "check", "model", "mode", "subject", "verdict", "expected",
                     "detail"], body)]


def _changes(changes: dict[str, Any]) -> list[str]:
    if not changes["baseline"]:
        return []
    out = ["## Changes since the baseline", ""]
    for title, key in (("New failures", "new_failures"), ("New passes", "new_passes")):
        rows = [[c["cell"], c["check"], c["model"], c["mode"], c["subject"],
                 f"{c['was']} → {c['verdict']}"] for c in changes[key]]
        if rows:
            out += [f"**{title}**", "",
                    *_table(["cell", "check", "model", "mode", "subject", "change"], rows)]
    moves = [[t["cell"], t["model"], t["batch"], t["subject"], f"{t['before']:.1f}",
              f"{t['after']:.1f}", f"{t['change']:+.0%}"] for t in changes["throughput"]]
    if moves:
        out += ["**Throughput**", "", *_table(["cell", "model", "batch", "subject", "before",
                                              "after", "change"], moves)]
    return out if len(out) > 2 else [*out, "Nothing changed.", ""]


def _verdict_table(table: Table) -> list[str]:
    rows = [[*key, *(e.text if e else "" for e in entries)] for key, entries in table.rows]
    return [f"### {table.title}", "", *_table([*table.keys, *table.columns], rows)]


def _patches(report: dict[str, Any]) -> list[str]:
    table = patch_table(report)
    if not table.rows:
        return []
    rows = [[*key, *(STATUS_GLYPH.get(s, "") if s else "" for s in entries)]
            for key, entries in table.rows]
    legend = " · ".join(f"{g} {s}" for s, g in STATUS_GLYPH.items())
    return ["## Patch status", "", legend, "", *_table([*table.keys, *table.columns], rows)]


def _bench(report: dict[str, Any]) -> list[str]:
    rows = bench_rows(report)
    if not rows:
        return ["## Throughput", "", "No throughput rows (run with `--bench=quick|full`).", ""]
    out = ["## Throughput", "", "One table per backend: CPU and GPU figures are never compared "
           "with each other. Hosted macOS runners use a paravirtual GPU; figures from there are "
           "marked as not comparable to real hardware.", ""]
    for backend, group in by_backend(rows).items():
        body = []
        for b in group:
            mean = f"{b['mean']:.1f} ± {b['sd']:.1f}" if b["mean"] is not None else ""
            body.append([b["release"], b.get("model"), b.get("subject"), b.get("batch"), mean,
                         f"{b['cv']:.1%}" if b["cv"] is not None else "",
                         _num(b.get("prefill_tok_s"), "{:.0f}"),
                         _num(b.get("sequential_tok_s"), "{:.1f}"),
                         _num(b.get("speedup"), "{:.2f}×"), _num(b.get("overhead"), "{:+.1%}"),
                         _num(b.get("peak_memory_mb"), "{:.1f}"), b.get("error") or b["note"]])
        devices = ", ".join(sorted({b["device"] for b in group if b["device"]}))
        out += [f"### {backend}" + (f" ({devices})" if devices else ""), "",
                *_table(["release", "model", "subject", "batch", "gen tok/s", "CV",
                         "prefill tok/s", "sequential tok/s", "speedup", "overhead vs none",
                         "peak MB", "note"], body)]
    return out


def _num(value: Any, fmt: str) -> str:
    return fmt.format(value) if isinstance(value, int | float) else ""


def _environment(report: dict[str, Any]) -> list[str]:
    rows = [[r["cell"], *(r[k] for k in ENV_KEYS), r["backend"], r["device"], r["install"],
             r["install_s"]] for r in env_rows(report)]
    return ["## Environment", "", *_table(["cell", *ENV_KEYS, "backend", "device", "install",
                                           "install s"], rows)]


def render_markdown(report: dict[str, Any], changes: dict[str, Any],
                    extra: list[str] | None = None) -> str:
    """The whole compat.md; `extra` holds further sections (e.g. the API-drift table)."""
    notes = Notes()
    tables = verdict_tables(report, notes)
    legend = (" · ".join(f"{g} {v}" for v, g in GLYPH.items())
              + " · `*` expected per matrix.yaml · `!` unexpected · `[n]` footnote")
    lines = ["# mlxcompat compatibility report", "", *headline(report, changes)]
    lines += [f"> input problem: {cell_text(p)}" for p in report["problems"]]
    lines += ["", *_unexpected(report), *_changes(changes), "## Verdicts", "", legend, ""]
    for table in tables:
        lines += _verdict_table(table)
    lines += [*_patches(report), *_bench(report), *(extra or []), *_environment(report)]
    lines += ["## Footnotes", ""]
    lines += [f"{n}. {cell_text(text)}" for text, n in notes.texts.items()]
    text = "\n".join(lines) + "\n"
    if len(text.encode()) > LIMIT_BYTES:
        cut = text.encode()[: LIMIT_BYTES - 200].decode(errors="ignore")
        text = cut + "\n\n… truncated at GitHub's 1 MiB summary limit; see compat.json.\n"
    return text
