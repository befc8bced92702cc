"""The campaign report's Markdown summary (for a CI job's page): the headline numbers and tables.

What belongs here: turning a :class:`reports.query.ReportData` into GitHub-flavoured Markdown:
the campaign line, outcomes per target, backends, coverage counts, compile time, buckets with their
replay commands (new ones first), and the comparison with the previous campaign.
"""

from __future__ import annotations

from .html import OUTCOME_COLORS, when
from .query import ReportData

__all__ = ["render_markdown"]


def _row(cells: list[object]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _table(head: list[str], rows: list[list[object]]) -> list[str]:
    return [_row(head), "|" + "---|" * len(head), *(_row(r) for r in rows), ""]


def _index(targets: list[str], t: str) -> int:
    return targets.index(t) if t in targets else len(targets)


def placement_tables(d: ReportData) -> list[str]:
    """Where the compiled cases ran (host partitioning, docs/partition.md): per target the
    accelerator's share of MACs and operators, per operator its instances on each side, and what
    went to the host and why."""
    if not d.placement:
        return []
    out = ["### Placement: accelerator and host", ""]
    out += _table(["target", "compiled cases", "partitioned", "MACs on the accelerator", "operators on the accelerator"],
                  [[t, n, k, f"{100 * ma / mt:.1f}%" if mt else "-", f"{100 * oa / ot:.1f}%" if ot else "-"]
                   for t, n, k, ma, mt, oa, ot in sorted(d.placement, key=lambda r: _index(d.targets, r[0]))])
    rows = [[t, op, a, h, f"{100 * a / (a + h):.0f}%"] for t, op, a, h in d.placement_ops if h]
    if rows:
        out += ["Operators that ran on the host in some case (instances on each side):", ""]
        out += _table(["target", "operator", "accelerator", "host", "accelerator share"],
                      sorted(rows, key=lambda r: (_index(d.targets, str(r[0])), -int(r[3]))))
    if d.host_reasons:
        out += ["Why (most frequent):", ""]
        out += _table(["target", "operator", "why it ran on the host", "instances"],
                      [[t, op, w[:140], n] for t, op, w, n in d.host_reasons[:15]])
    return out


def goal_tables(d: ReportData) -> list[str]:
    """The coverage goals (fuzz/goals.py): per target the instructions and α classes the
    campaign's programs used, of the package's, and what was never hit."""
    if not d.goals:
        return []
    out = ["### Coverage goals", ""]
    out += _table(list(d.goals[0].COLUMNS), [g.row() for g in d.goals])
    return out


def render_markdown(d: ReportData, html_name: str | None = None) -> str:
    """The summary; ``html_name`` (the page's file name) is linked when given."""
    c = d.campaign
    prev = [x for x in d.campaigns if x.id < c.id and x.finished is not None]
    rate = f"{c.per_minute:.1f} cases/min" if c.per_minute else "no rate (not finished)"
    mins = f"{c.minutes:.1f} min" if c.minutes else "-"
    out = [f"# accv campaign {c.id}", "",
           f"{c.cases:,} cases in {mins} ({rate}), started {when(c.started)}; {c.passed:,} pass, "
           f"{c.failures:,} failures in {len(c.buckets)} bucket(s)"
           + (f"; against campaign {prev[-1].id}: {len(c.new)} new, {len(c.vanished)} vanished" if prev else "")
           + ".", ""]
    if html_name:
        out += [f"The full report with the plots: [{html_name}]({html_name}).", ""]
    if not d.targets:
        return "\n".join([*out, "No case of this campaign has finished yet.", ""])
    outs = [o for o in OUTCOME_COLORS if any(o in d.outcomes[t] for t in d.targets)]
    out += ["## Outcomes", ""]
    out += _table(["target", *outs, "total"],
                  [[t, *(d.outcomes[t].get(o, 0) for o in outs), sum(d.outcomes[t].values())] for t in d.targets])
    if d.backends:
        out += _table(["target", "backend", "cases run", "seconds", "mismatches", "crashes"],
                      [[b["target"], b["backend"], b["runs"], f"{b['seconds']:.1f}", b["mismatch"], b["crash"]]
                       for b in sorted(d.backends, key=lambda b: (_index(d.targets, b["target"]), b["backend"]))])
    out += ["## Coverage", ""]
    rows = []
    for t in d.targets:
        rows.append([t, sum(1 for x in d.ops if x[0] == t), sum(1 for x in d.instructions if x[0] == t),
                     sum(1 for x in d.alpha if x[0] == t),
                     ", ".join([f"{op} {n}" for tt, op, n in d.unsupported if tt == t][:5]) or "-"])
    out += _table(["target", "operator:dtype pairs", "instructions", "α values", "exit 3 by operator (top 5)"], rows)
    out += goal_tables(d)
    out += placement_tables(d)
    if d.rtl_coverage and d.rtl_coverage["rows"]:
        out += _table(d.rtl_coverage["columns"], d.rtl_coverage["rows"])
    else:
        out += ["RTL code coverage: not collected.", ""]
    if d.compile_stats:
        out += ["## Compile time", ""]
        out += _table(["target", "compiles", "median s", "p90 s", "max s"],
                      [[t, int(s["n"]), f"{s['p50']:.3f}", f"{s['p90']:.3f}", f"{s['max']:.3f}"]
                       for t, s in sorted(d.compile_stats.items(), key=lambda kv: _index(d.targets, kv[0]))])
    out += ["## Failure buckets", ""]
    if not d.buckets:
        out += ["None.", ""]
    for b in sorted(d.buckets, key=lambda b: not b["new"]):
        out.append(f"- {'**new** ' if b['new'] else ''}`{b['signature']}` ({b['cases']} case(s)): "
                   + (f"`{b['replay']}`" if b["replay"] else f"no reproducer; the case again: `{b['rerun']}`"))
    if d.more_buckets:
        out.append(f"- ... {d.more_buckets} older bucket(s)")
    if c.vanished:
        out += ["", "Vanished since the previous campaign:", ""] + [f"- `{s}`" for s in c.vanished]
    camps = [x for x in d.campaigns if x.cases and x.id <= c.id][-7:]
    if len(camps) > 1:
        out += ["", "## Trends (the last campaigns of this database)", ""]
        out += _table(["campaign", "started", "cases", "cases/min", "pass", "failures", "buckets", "new", "vanished",
                       "op:dtype", "instructions", "α values"],
                      [[x.id, when(x.started), x.cases, f"{x.per_minute:.1f}" if x.per_minute else "-", x.passed,
                        x.failures, len(x.buckets), len(x.new), len(x.vanished), x.ops, x.instructions, x.alpha]
                       for x in camps])
    return "\n".join(out).rstrip() + "\n"
