"""The campaign report as one self-contained HTML page (inline CSS and SVG; no script, nothing fetched).

What belongs here: laying out a :class:`reports.query.ReportData` as the page's sections
(summary, throughput, outcomes, coverage, RTL coverage, compile time, cycles, failure buckets,
trends). The charts come from :mod:`reports.svg`; the numbers were aggregated in SQL by
:mod:`reports.query`.
"""

from __future__ import annotations

import time
from collections import defaultdict
from html import escape
from typing import Any

from . import svg
from .query import COMPILE_PARTS, ReportData, compile_bin_edges

__all__ = ["render_html", "OUTCOME_COLORS", "when", "bin_labels"]

OUTCOME_COLORS = {"pass": "#009E73", "unsupported": "#BBBBBB", "degenerate": "#F0E442", "mismatch": "#D55E00",
                  "compile-crash": "#E69F00", "backend-crash": "#CC79A7", "timeout": "#0072B2", "crash": "#000000",
                  "gen-error": "#DDDDDD"}
#: compile parts: the modules in blues and greens, CP-SAT orange, first-use work purple and pink, the rest greys
PART_COLORS = {"M1": "#9ecae1", "M2": "#4292c6", "M3": "#08519c", "M4": "#74c476", "M5 (CSP)": "#238b45",
               "solver": "#E69F00", "M6": "#00441b", "gen": "#8856a7", "proofs": "#CC79A7",
               "other": "#b0b0b0", "no breakdown": "#e4e4e4"}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:#1d1d1f;margin:0;background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:16px 28px 48px;background:#fff}
h1{font-size:22px;margin:8px 0 4px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #ddd;padding-bottom:3px}
h3{font-size:15px;margin:16px 0 4px}p.note{color:#555;margin:4px 0 8px;max-width:900px}
table{border-collapse:collapse;margin:6px 0 10px;font-size:13px}th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
.kpis{display:flex;flex-wrap:wrap;gap:10px;margin:10px 0}.kpi{border:1px solid #ddd;border-radius:6px;padding:6px 10px;min-width:92px}
.kpi b{display:block;font-size:20px}.kpi span{color:#555;font-size:12px}
.legend{display:flex;flex-wrap:wrap;gap:12px;margin:2px 0 6px;font-size:12px}.key i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px;border-radius:2px}
.grid{display:flex;flex-wrap:wrap;gap:18px;align-items:flex-start}
div.bucket{border:1px solid #ddd;border-left:4px solid #D55E00;border-radius:4px;padding:4px 10px;margin:6px 0}
div.bucket.old{border-left-color:#999}div.bucket .sig{font-weight:600}div.bucket pre{margin:3px 0}summary{cursor:pointer}
div.bucket p{margin:2px 0;font-size:12px;color:#555}
pre{background:#f5f5f7;padding:8px;overflow-x:auto;font-size:12px;margin:6px 0}code{font-family:ui-monospace,Menlo,Consolas,monospace}
.tag{display:inline-block;font-size:11px;padding:0 6px;border-radius:8px;background:#D55E00;color:#fff;margin-left:6px}
.muted{color:#777}svg.plot{display:block;max-width:100%;height:auto;background:#fff;margin:2px 0 6px}
"""


def when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t)) if t else "-"


def bin_labels() -> list[str]:
    """Labels of the compile-time histogram's bins (the last is open)."""
    def s(v: float) -> str:
        return f"{v * 1000:.0f}ms" if v < 0.1 else f"{v:.1f}s" if v < 1 else f"{v:.0f}s"
    edges = compile_bin_edges()
    return [f"<{s(e)}" for e in edges] + [f"≥{s(edges[-1])}"]


def _table(head: list[str], rows: list[list[Any]], num: set[int] | None = None) -> str:
    num = num if num is not None else set()
    h = "".join(f"<th>{escape(x)}</th>" for x in head)
    body = "".join("<tr>" + "".join(f'<td class="n">{escape(_num(c))}</td>' if i in num else f"<td>{escape(str(c))}</td>"
                                    for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _num(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.2f}" if abs(v) < 100 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _summary(d: ReportData) -> str:
    c = d.campaign
    a = c.args
    args = ", ".join(f"{k} {v if not isinstance(v, list) else ','.join(map(str, v)) or 'all'}" for k, v in sorted(a.items()))
    prev = [x for x in d.campaigns if x.id < c.id and x.finished is not None]
    kpis = [("cases", f"{c.cases:,}"), ("cases / min", f"{c.per_minute:.1f}" if c.per_minute else "-"),
            ("minutes", f"{c.minutes:.1f}" if c.minutes else "-"), ("pass", f"{c.passed:,}"),
            ("failures", f"{c.failures:,}"), ("buckets", str(len(c.buckets))),
            ("new buckets", str(len(c.new)) if prev else "- (first)"),
            ("vanished", str(len(c.vanished)) if prev else "-")]
    k = "".join(f'<div class="kpi"><b>{escape(v)}</b><span>{escape(n)}</span></div>' for n, v in kpis)
    state = "finished " + when(c.finished) if c.finished else "unfinished (running, stopped or killed)"
    return (f"<h1>accv campaign {c.id}</h1><p class=note>Database <code>{escape(d.db)}</code>; started "
            f"{when(c.started)}, {state}. Arguments: {escape(args)}.</p><div class=kpis>{k}</div>")


def _throughput(d: ReportData) -> str:
    h = "<h2 id=throughput>Cases per minute</h2>"
    if not d.campaign.cases:
        return h + "<p class=note>No case of this campaign has finished yet.</p>"
    if not d.has_done:
        return h + ("<p class=note>Not available: the cases of this campaign carry no completion times "
                    f"(average over the campaign: {d.campaign.per_minute or 0:.1f} cases/min).</p>")
    last = max(m for m, _, _ in d.per_minute)
    per: dict[str, dict[int, int]] = defaultdict(dict)
    for m, t, n in d.per_minute:
        per[t][m] = n
        per["all targets"][m] = per["all targets"].get(m, 0) + n
    names = [t for t in d.targets if t in per] + ["all targets"]
    c = d.campaign
    end = c.finished or c.last_done or c.started
    part = min(max((end - c.started) / 60 - last, 0.0), 1.0)   # the share of the last minute the campaign ran
    scale = {m: (1 / part if m == last and 0.05 < part < 1 else 1.0) for m in range(last + 1)}
    series = {t: [(m + 0.5, per[t].get(m, 0) * scale[m]) for m in range(last + 1)] for t in names}
    return (h + "<p class=note>Cases finished in each minute since the campaign started, per target (the last, "
            "partial minute as a rate).</p>" + svg.legend(names) +
            svg.line_chart(series, xlabel="minutes since start", ylabel="cases finished per minute"))


def _outcomes(d: ReportData) -> str:
    outs = [o for o in OUTCOME_COLORS if any(o in d.outcomes[t] for t in d.targets)]
    stacks = [(o, [d.outcomes[t].get(o, 0) for t in d.targets]) for o in outs]
    cols = [OUTCOME_COLORS[o] for o in outs]
    order = {t: i for i, t in enumerate(d.targets)}
    rows = [[b["target"], b["backend"], b["runs"], b["seconds"], b["seconds"] / max(b["runs"], 1), b["mismatch"],
             b["crash"]] for b in sorted(d.backends, key=lambda b: (order.get(b["target"], 99), b["backend"]))]
    return ("<h2 id=outcomes>Outcomes per target and backend</h2>" + svg.legend(outs, cols) +
            svg.hbars(d.targets, stacks, xlabel="cases", colors=cols, label="outcomes per target") +
            "<p class=note>A case runs the compiled program on each backend of its target, three input sets each; "
            "the first disagreement with the reference interpreter (or crash) ends the case and is charged to "
            "that backend.</p>" +
            _table(["target", "backend", "cases run", "seconds", "s / case", "mismatches", "crashes"], rows,
                   {2, 3, 4, 5, 6}))


def _placement(d: ReportData) -> str:
    """Where the compiled cases ran: the accelerator's share per target and per operator, and why
    operators went to the host (host partitioning, docs/partition.md)."""
    if not d.placement:
        return ""
    order = {t: i for i, t in enumerate(d.targets)}
    out = ["<h3>Placement: accelerator and host</h3><p class=note>Compiled cases only. A graph the target "
           "cannot run whole is partitioned: its accelerator regions are compiled and checked, the rest runs on "
           "the host (the reference interpreter).</p>"]
    out.append(_table(["target", "compiled cases", "partitioned", "MACs on the accelerator", "operators on the accelerator"],
                      [[t, n, k, f"{100 * ma / mt:.1f}%" if mt else "-", f"{100 * oa / ot:.1f}%" if ot else "-"]
                       for t, n, k, ma, mt, oa, ot in sorted(d.placement, key=lambda r: order.get(r[0], 99))],
                      {1, 2, 3, 4}))
    rows = [[t, op, a, h, f"{100 * a / (a + h):.0f}%"] for t, op, a, h in d.placement_ops if h]
    if rows:
        out.append("<h4>Operators that ran on the host in some case</h4>" + _table(
            ["target", "operator", "on the accelerator", "on the host", "accelerator share"],
            sorted(rows, key=lambda r: (order.get(str(r[0]), 99), -int(r[3]))), {2, 3, 4}))
    if d.host_reasons:
        out.append("<h4>Why they ran on the host</h4>" + _table(
            ["target", "operator", "reason", "instances"], [[t, op, w, n] for t, op, w, n in d.host_reasons], {3}))
    return "".join(out)


def _goals(d: ReportData) -> str:
    """The coverage goals (fuzz/goals.py): what the campaign's programs used of each package."""
    if not d.goals:
        return ""
    return ("<h3>Coverage goals</h3><p class=note>Per target, the instructions of its package and the classes "
            "of their α values (docs/fuzzing.md) that the campaign's programs used; a class no value the compiler "
            "searches is in cannot be hit by any compiled program and is listed apart.</p>" + _table(list(d.goals[0].COLUMNS), [g.row() for g in d.goals], {1, 2}))


def _coverage(d: ReportData) -> str:
    out = ["<h2 id=coverage>Coverage</h2><h3>Operators and dtypes generated</h3>"
           "<p class=note>Cases whose graph computes the operator in the dtype, per target.</p><div class=grid>"]
    for t in d.targets:
        vals = {(op, dt): n for tt, op, dt, n in d.ops if tt == t}
        if not vals:
            continue
        rows = sorted({op for op, _ in vals}, key=lambda o: -sum(n for (op, _), n in vals.items() if op == o))
        cols = sorted({dt for _, dt in vals})
        out.append(f"<div><b>{escape(t)}</b> ({len(vals)} operator:dtype pairs)"
                   + svg.heatmap(rows, cols, vals, label=f"{t} operators by dtype") + "</div>")
    out.append("</div>")
    if d.unsupported:
        out.append("<h3>What the compiler declined (exit 3), by operator</h3>")
        rows = []
        for t in d.targets:
            mine = [(op, n) for tt, op, n in d.unsupported if tt == t]
            if mine:
                rows.append([t, sum(n for _, n in mine), ", ".join(f"{op} {n}" for op, n in mine[:12])
                             + (f", ... {len(mine) - 12} more" if len(mine) > 12 else "")])
        out.append(_table(["target", "cases", "by the operator the compiler could not compute (cases)"], rows, {1}))
    out.append(_goals(d))
    out.append(_placement(d))
    out.append("<h3>Instructions and attribute values exercised</h3><div class=grid>")
    for t in d.targets:
        ins = sorted(((k, n, u) for tt, k, n, u in d.instructions if tt == t), key=lambda r: -r[1])
        if not ins:
            continue
        out.append(f"<div><b>{escape(t)}</b> ({len(ins)} instructions)" + svg.hbars(
            [k for k, _, _ in ins], [("cases using it", [n for _, n, _ in ins])], xlabel="cases", width=340,
            label=f"{t} instructions used") + "</div>")
    out.append("</div>")
    attrs: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    for t, key, val, n in d.alpha:
        attrs[(t, key)].append((val, n))
    rows = []
    order = {t: i for i, t in enumerate(d.targets)}
    for (t, key), vs in sorted(attrs.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[0][1])):
        vs.sort(key=lambda p: -p[1])
        shown = ", ".join(f"{v} ({n})" for v, n in vs[:8]) + (f", ... {len(vs) - 8} more" if len(vs) > 8 else "")
        rows.append([t, key, len(vs), shown])
    if rows:
        table = _table(["target", "instruction.attribute", "distinct values", "values (cases)"], rows, {2})
        out.append(f"<details{' open' if len(rows) <= 30 else ''}><summary>Attribute (α) values used: {len(rows)} "
                   "instruction attributes, with the number of distinct values and the most used ones (cases)"
                   f"</summary>{table}</details>")
    return "".join(out)


def _rtl(d: ReportData) -> str:
    h = "<h2 id=rtl>RTL code coverage per design</h2>"
    cov = d.rtl_coverage
    if cov is None:
        return h + ("<p class=note>Not collected: this database has no <code>rtl_coverage</code> table (the campaign "
                    "ran without RTL coverage collection).</p>")
    cols, rows = cov["columns"], cov["rows"]
    if not rows:
        return h + "<p class=note>Not collected for this campaign (the <code>rtl_coverage</code> table has no row for it).</p>"
    out = [h]
    if {"design", "covered", "total"} <= set(cols):
        ix = {c: cols.index(c) for c in cols}
        kind = ix.get("kind")
        cats = [f"{r[ix['design']]} {r[kind]}" if kind is not None else str(r[ix["design"]]) for r in rows]
        pct = [100.0 * r[ix["covered"]] / r[ix["total"]] if r[ix["total"]] else 0.0 for r in rows]
        out.append(svg.hbars(cats, [("covered %", pct), ("not covered %", [100 - p for p in pct])],
                             xlabel="% of coverage points hit", colors=["#009E73", "#EEEEEE"],
                             label="RTL coverage per design"))
    out.append(_table([c for c in cols], rows))
    return "".join(out)


def _compile(d: ReportData) -> str:
    labels = bin_labels()
    used = sorted({b["bin"] for b in d.compile_bins if b["cases"]})
    out = ["<h2 id=compile>Compile time</h2>"]
    if not used:
        return out[0] + "<p class=note>No case reached the compiler.</p>"
    lo, hi = used[0], used[-1]
    cats = labels[lo:hi + 1]
    parts = [*COMPILE_PARTS, "other", "no breakdown"]
    out.append("<p class=note>Per target, the distribution of compile times: a bar's height is the number of "
               "compiles in that time bin. The compiles that produced a program are split by where their time "
               "went: the modules M1-M6 (CP-SAT's <i>solver</i> share of M5 apart), <i>gen</i> (rule instantiations "
               "and patterns generated at first use in the worker process), <i>proofs</i> (rules proved at first "
               "use) and <i>other</i> (outside the modules); <i>no breakdown</i> are compiles that stopped with "
               "exit 3 or a crash, which record only their total.</p>")
    out.append(svg.legend(parts, [PART_COLORS[p] for p in parts]))
    out.append("<div class=grid>")
    for t in d.targets:
        bins = {b["bin"]: b for b in d.compile_bins if b["target"] == t}
        if not bins:
            continue
        stacks: dict[str, list[float]] = {p: [] for p in parts}
        for k in range(lo, hi + 1):
            b = bins.get(k, {"cases": 0, "parts": {}})
            n, tot = b.get("with_parts", 0), b.get("parts_total", 0.0)
            for p in COMPILE_PARTS:
                stacks[p].append(n * b["parts"].get(p, 0.0) / tot if tot else 0.0)
            stacks["other"].append(n * max(tot - sum(b["parts"].values()), 0.0) / tot if tot else 0.0)
            stacks["no breakdown"].append(float(b["cases"] - n))
        notes = [str(bins[k]["cases"]) if k in bins and bins[k]["cases"] else "" for k in range(lo, hi + 1)]
        out.append(f"<div><b>{escape(t)}</b>" + svg.stacked_bars(
            cats, list(stacks.items()), ylabel="compiles", notes=notes, width=520, height=240,
            colors=[PART_COLORS[p] for p in parts], label=f"{t} compile times by module") + "</div>")
    out.append("</div>")
    order = {t: i for i, t in enumerate(d.targets)}
    rows = [[t, int(s["n"]), s["p50"], s["p90"], s["max"], s.get("seconds", 0.0)]
            for t, s in sorted(d.compile_stats.items(), key=lambda kv: order.get(kv[0], 99))]
    out.append(_table(["target", "compiles", "median s", "p90 s", "max s", "total s"], rows, {1, 2, 3, 4, 5}))
    return "".join(out)


def _cycles(d: ReportData) -> str:
    out = ["<h2 id=cycles>Cycles per kernel</h2>"]
    if not d.cycles:
        return out[0] + "<p class=note>No backend reported cycles in this campaign.</p>"
    out.append("<p class=note>Cycles each backend reported for the <i>scaled</i> input set: <i>sim</i> is the "
               "functional simulator's estimate (the compiler's cost model), <i>rtl</i> the Verilator model's count. "
               "Campaign cases are random kernels with no library-call sequence to compare with; the library-call "
               "comparison of the paper's composite kernels is bench/rtl_kernels.py (docs/rtl.md). Here the "
               "estimate is drawn against the RTL count where a case has both.</p>")
    out.append(_table(["target", "backend", "cases", "median", "p90", "max"],
                      [[c["target"], c["backend"], c["cases"], int(c["p50"]), int(c["p90"]), int(c["max"])]
                       for c in d.cycles], {2, 3, 4, 5}))
    series = {t: [(a, b) for _, a, b in p] for t, p in d.cycle_pairs.items() if p}
    if series:
        names = list(series)
        out.append(svg.legend(names) + svg.scatter(series, xlabel="sim estimate (cycles)", ylabel="RTL (cycles)"))
    return "".join(out)


def _buckets(d: ReportData) -> str:
    out = ["<h2 id=buckets>Failure buckets</h2>"]
    if not d.buckets:
        return out[0] + "<p class=note>No failure in this campaign.</p>"
    out.append(f"<p class=note>{len(d.buckets) + d.more_buckets} bucket(s), newest first. A bucket is target | "
               "outcome | stage | symptom; its first case was reduced to a reproducer folder, and the replay command "
               "exits 1 while the bug is there and 0 once it is fixed.</p>")
    for b in d.buckets:
        tag = '<span class="tag">new</span>' if b["new"] else ""
        first = (f"first seen {when(b['first_seen'])} in campaign {b['first_campaign']} (seed {b['seed']})"
                 if b["first_seen"] else "not in the buckets table")
        head = (f'<div class="bucket{"" if b["new"] else " old"}"><code class="sig">{escape(b["signature"])}</code>'
                f"{tag}<p>{b['cases']:,} case(s) in this campaign; {escape(first)}.</p>")
        if b["replay"]:
            head += f'<pre><code class="replay">{escape(b["replay"])}</code></pre>'
        else:
            head += ("<p>No reproducer folder is recorded for this bucket; its first case in this campaign "
                     f"(seed {b['first_seed_here']}) runs again with:</p>"
                     f'<pre><code class="rerun">{escape(b["rerun"])}</code></pre>')
        more = []
        if b["reason"]:
            more.append(f"<pre><code>{escape(b['reason'][:1200])}</code></pre>")
        if b["kernel"]:
            more.append(f"<p>Reduced kernel, <code>{escape(b['reproducer'])}/kernel.hlo</code>:</p>"
                        f"<pre><code>{escape(b['kernel'])}</code></pre>")
        elif b["reproducer"]:
            more.append(f"<p>Reproducer folder <code>{escape(b['reproducer'])}</code> (not on this machine).</p>")
        opened = " open" if len(out) <= 4 else ""
        if more:
            what = "reason and reduced kernel" if b["kernel"] else "reason"
            head += f"<details{opened}><summary>{what}</summary>{''.join(more)}</details>"
        out.append(head + "</div>")
    if d.more_buckets:
        out.append(f"<p class=note>{d.more_buckets} older bucket(s) not listed.</p>")
    return "".join(out)


def _trends(d: ReportData) -> str:
    camps = [c for c in d.campaigns if c.cases]
    if len(camps) < 2:
        return ("<h2 id=trends>Trends</h2><p class=note>One campaign in this database: trends appear once the "
                "same database holds several (nightly runs).</p>")
    ids = [f"#{c.id}" for c in camps]
    thr = svg.stacked_bars(ids, [("cases / min", [c.per_minute or 0 for c in camps])], ylabel="cases / min",
                           label="throughput per campaign", notes=[f"{c.per_minute:.0f}" if c.per_minute else "-" for c in camps], width=330, height=220)
    cov = svg.line_chart({"operator:dtype pairs": [(i, c.ops) for i, c in enumerate(camps, 1)],
                          "instructions": [(i, c.instructions) for i, c in enumerate(camps, 1)],
                          "α values": [(i, c.alpha) for i, c in enumerate(camps, 1)]},
                         xlabel="campaign", ylabel="distinct items covered", width=330, height=220,
                         xticks=[(i, f"#{c.id}") for i, c in enumerate(camps, 1)])
    bk = svg.stacked_bars(ids, [("new", [len(c.new) for c in camps]),
                                ("still open", [len(c.buckets) - len(c.new) for c in camps]),
                                ("vanished", [len(c.vanished) for c in camps])], ylabel="buckets", label="buckets per campaign", width=330,
                          height=220, colors=["#D55E00", "#999999", "#009E73"])
    rows = [[c.id, when(c.started), c.cases, round(c.per_minute, 1) if c.per_minute else "-", c.passed, c.failures,
             len(c.buckets), len(c.new), len(c.vanished), c.ops, c.instructions, c.alpha] for c in camps]
    changes = []
    for c in camps[1:]:
        for s in c.new:
            changes.append([c.id, "new", s])
        for s in c.vanished:
            changes.append([c.id, "vanished", s])
    return ("<h2 id=trends>Trends night over night</h2><p class=note>Every campaign of this database, oldest first; "
            "new and vanished buckets compare each campaign with the finished one before it.</p><div class=grid>"
            f"<div><b>Throughput</b>{thr}</div><div><b>Coverage</b>"
            + svg.legend(["operator:dtype pairs", "instructions", "α values"]) + f"{cov}</div>"
            "<div><b>Buckets</b>" + svg.legend(["new", "still open", "vanished"], ["#D55E00", "#999999", "#009E73"])
            + f"{bk}</div></div>"
            + _table(["campaign", "started", "cases", "cases/min", "pass", "failures", "buckets", "new", "vanished",
                      "op:dtype", "instructions", "α values"], rows, {2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
            + (f"<details><summary>{len(changes)} bucket change(s) night over night</summary>"
               + _table(["campaign", "change", "bucket"], changes[:500]) + "</details>" if changes else ""))


def render_html(d: ReportData) -> str:
    """The whole page."""
    nav = " · ".join(f'<a href="#{a}">{n}</a>' for a, n in (
        ("throughput", "throughput"), ("outcomes", "outcomes"), ("coverage", "coverage"), ("rtl", "RTL coverage"),
        ("compile", "compile time"), ("cycles", "cycles"), ("buckets", "buckets"), ("trends", "trends")))
    body = "".join((_summary(d), f"<p>{nav}</p>", _throughput(d), _outcomes(d), _coverage(d), _rtl(d), _compile(d),
                    _cycles(d), _buckets(d), _trends(d)))
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>accv campaign {d.campaign.id}'
            f'</title><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,"><style>{CSS}</style></head>'
            f"<body><main>{body}<p class=muted>Generated by accv report.</p></main></body></html>\n")
