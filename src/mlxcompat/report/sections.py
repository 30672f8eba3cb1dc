"""compat.md's detail sections, each folded into a <details> block under the front page."""

from __future__ import annotations

from mlxcompat.bench import NOISY_SPREAD
from mlxcompat.records.report import Changes, CompatDoc
from mlxcompat.report.tables import (
    ENV_KEYS,
    MARK,
    STATUS_MARK,
    Table,
    env_rows,
    patch_table,
    verdict_tables,
)
from mlxcompat.report.tables import table as _table
from mlxcompat.report.throughput import bench_rows, by_backend, compact, full_rows, prefill_cost


def _fold(summary: str, body: list[str], open_: bool = False) -> list[str]:
    return [f"<details{' open' if open_ else ''}><summary>{summary}</summary>", "", *body,
            "</details>", ""]


def _unexpected(report: CompatDoc) -> list[str]:
    rows = [r for r in report.results if not r.outcome.expected]
    if not rows:
        return []
    body = [[r.cell, r.check, r.model, r.about.variant, r.subject, r.verdict, r.outcome.why,
             r.detail[:160]] for r in rows[:200]]
    return ["### Unexpected outcomes", "",
            *_table(["cell", "check", "model", "case", "subject", "verdict", "why", "detail"],
                    body)]


def _changes(changes: Changes) -> list[str]:
    if not changes.baseline:
        return ["No baseline yet (`mlxcompat report --accept` makes this report the baseline).",
                ""]
    out = []
    for title, found in (("Regressions", changes.regressions),
                         ("New passes", changes.new_passes)):
        rows = [[c.cell, c.check, c.model, c.about.variant, c.subject, c.change] for c in found]
        if rows:
            out += [f"**{title}**", "",
                    *_table(["cell", "check", "model", "case", "subject", "change"], rows)]
    digits = {"tok/s": 1, "overhead": 3}
    moves = [[t.cell, t.model, t.batch, t.subject, t.measure,
              f"{t.before or 0:.{digits[t.measure]}f}", f"{t.after or 0:.{digits[t.measure]}f}",
              f"{t.change:+.0%} ({t.ci95[0]:+.0%}…{t.ci95[1]:+.0%})"]
             for t in changes.throughput]
    if moves:
        out += ["**Throughput (gating profile, same machine)**", "",
                *_table(["cell", "model", "batch", "subject", "measure", "before", "after",
                         "change (95% CI)"], moves)]
    if changes.ungated:
        out += ["**Not gated (a failure: rerun on an idle machine)**", "",
                *_table(["cell", "model", "batch", "subject", "why"],
                        [[u.cell, u.model, u.batch, u.subject, u.why]
                         for u in changes.ungated])]
    out.append(f"{changes.new_rows} new row(s) not in the baseline." if changes.new_rows
               else "")
    return [*(out or ["Nothing changed."]), ""]


def _verdict_table(table: Table) -> list[str]:
    rows = [[*key, *(e.mark if e else "" for e in entries)] for key, entries in table.rows]
    return [f'<a id="matrix-{table.title}"></a>', "",
            *_fold(f"{table.title} ({len(table.rows)} rows)",
                   _table([*table.keys, *table.columns], rows))]


def _patches(report: CompatDoc) -> list[str]:
    table = patch_table(report)
    if not table.rows:
        return []
    rows = [[*key, *((STATUS_MARK.get(s.split(" ")[0], "") + ("!" if " " in s else ""))
                     if s else "" for s in entries)] for key, entries in table.rows]
    legend = " · ".join(f"`{g}` {s}" for s, g in STATUS_MARK.items())
    return _fold("Patch status (observed; ! = the entry point's own report disagrees)",
                 [legend, "", *_table([*table.keys, *table.columns], rows)])


def _bench(report: CompatDoc) -> list[str]:
    rows = bench_rows(report)
    if not rows:
        return ["### Throughput", "", "No throughput rows (run with `--bench=quick`).", ""]
    noisy = [b for b in rows if b.measured and b.measured.calibration
             and b.measured.calibration.noisy]
    measured = [b for b in rows if b.measured is not None]
    paired = [b.measured.overhead for b in measured if b.measured and b.measured.overhead]
    flagged = sum(1 for o in paired if o.significant)
    out = ["### Throughput", "", "Decode tok/s: median of interleaved rounds with its 95% "
           "distribution-free interval; `spread` is the robust CV (1.4826·MAD/median) of the "
           "rounds; `vs none` is the median of paired per-round ratios (negative = slower); "
           "**speedup** is batched decode tok/s over the same model's decode tok/s one prompt "
           "at a time (`generate_step`, `none`, same cell, dtype and prompt shape). Prompts "
           "are `uniform` (all one length) or `mixed` (lengths log-uniform from a quarter to "
           "twice the profile's). A row is `noisy` when, during its timed rounds, other "
           "processes or the hypervisor took more than a set share of the bench CPU, or, "
           "where nothing is pinned (GPU backends), of all CPUs or the host core's own speed "
           "moved (a fixed loop timed before each round spread past "
           f"{NOISY_SPREAD:.0%}; the reason is on the row): "
           f"{len(noisy)} of {len(measured)} here. "
           "By chance alone a 95% interval misses \"no difference\" in about 1 pair in 20: "
           f"{flagged} of {len(paired)} `vs none` figures here are significant; an A/A "
           "test on this machine (three unpatched twins against `none`, fresh processes, "
           "`scripts/aa_processes.py`) flagged 8 of 108 decode and 6 of 108 prefill "
           "figures, and identical processes differed by about 1% (RMS): a figure of 1–2% "
           "a patch's code cannot cause (decode on a model it does not touch) is most likely "
           "one of those, or what the patch's own work left in its process (mlxcompat's "
           "capability probe: llama 1.4–3.6% slower in bench-only runs, `scripts/aa_history.py`). "
           "CPU and GPU figures are never compared. On the GPU the tiny models are "
           "host-bound, and what differs from one process to the next is not paired away: "
           "in an A/A on one H100 (five bench-only runs of llama) a timed twin that patches "
           "nothing measured −1.4% to +5.4% (each run's median) with 1 to 6 of 12 intervals "
           "a run excluding no difference, and mlxcompat's llama, a model its patch leaves "
           "alone, −0.8% to +3.1% in the same runs and −1.1% to −7.7% in four of one H200 "
           "lease (scripts/gpu/README.md), so a GPU `vs none` figure within about 8% is not "
           "known to be the patch's.", ""]
    for backend, group in by_backend(rows).items():
        release, headers, body = compact(report, group)
        devices = ", ".join(sorted({b.device for b in group if b.device}))
        out += [f"#### {backend}: {release}" + (f" ({devices})" if devices else ""), ""]
        if body:
            out += _table(headers, body)
        cost_head, cost = prefill_cost(group)
        if cost:
            out += _fold(f"mlxcompat's prefill cost on mixed-length prompts ({backend}, "
                         f"{len(cost)} rows)", _table(cost_head, cost))
        head, everything = full_rows(group)
        out += _fold(f"every {backend} row ({len(everything)})", _table(head, everything))
    return out


def _expectations(report: CompatDoc) -> list[str]:
    rows = []
    for e in report.expectations:
        state = "stale (covered nothing)" if report.full_run and not e.covered else (
            f"{e.covered} rows" + (f", {e.outside_bounds} outside its bounds"
                                   if e.outside_bounds else ""))
        rows.append([str(e.index), e.verdict, state, e.reason[:140],
                     e.link or ("open" if e.open else "")])
    if not rows:
        return []
    stale = sum(1 for e in report.expectations if not e.covered)
    note = (f"{stale} stale" if report.full_run else
            "stale entries are judged on a full run only")
    return _fold(f"Expectations ({len(rows)}; {note})",
                 _table(["#", "verdict", "covers", "reason", "link"], rows))


def _environment(report: CompatDoc) -> list[str]:
    rows = [[r.cell, *(r.packages[k] for k in ENV_KEYS), r.backend, r.device, r.install,
             r.install_s] for r in env_rows(report)]
    return _fold("Environment", _table(["cell", *ENV_KEYS, "backend", "device", "install",
                                        "install s"], rows))


def detail_sections(report: CompatDoc, changes: Changes, extra: list[str],
                    notes: dict[int, int]) -> list[str]:
    """Every detail block; `notes` numbers expectations (the front page's numbers first)."""
    tables = verdict_tables(report, notes)
    legend = (" · ".join(f"`{g}` {v}" for v, g in MARK.items())
              + " · `!` unexpected · `[n]` the note of the expectation that covers it")
    out = [*_unexpected(report), "### Changes since the baseline", "", *_changes(changes),
           "### Verdicts", "", legend, ""]
    for table in tables:
        out += _verdict_table(table)
    out += [*_patches(report), *_bench(report), *_expectations(report)]
    numbered = {n: i for i, n in notes.items()}
    by_index = {e.index: e for e in report.expectations}
    if numbered:
        refs = [f'<a id="note-{n}"></a>**[{n}]** (expectation #{i}) {by_index[i].reason}'
                + (f" {by_index[i].link}" if by_index[i].link else "") + "\n"
                for n, i in sorted(numbered.items()) if i in by_index]
        out += ["### Notes", "", *refs, ""]
    out += [*(extra or []), *_environment(report)]
    return out
