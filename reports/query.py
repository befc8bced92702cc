"""What a campaign report shows, shaped from the campaign database's aggregate reads.

What belongs here: turning the rows of a read-only :class:`fuzz.store.Store` (its
:class:`fuzz.aggregates.Aggregates` queries, each grouped in SQLite) into a :class:`ReportData` of
small tables: a database of hundreds of thousands of cases is read in well under two seconds
(``python bench/report_scale.py``). Rendering is in :mod:`reports.html` and :mod:`reports.markdown`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fuzz.schema import FAILURES
from fuzz.store import Store, StoreError
from semantics.errors import AccvError

from .cache import TrendCache

__all__ = ["ReportError", "CampaignRow", "ReportData", "load", "COMPILE_PARTS", "FAILURES", "compile_bin_edges"]

#: the compile-time parts drawn as stacked bars: the modules M1-M6 with CP-SAT's share of M5 apart,
#: and the first-use work a compile does beside them (rule instantiation and pattern generation, proofs)
COMPILE_PARTS = ("M1", "M2", "M3", "M4", "M5 (CSP)", "solver", "M6", "gen", "proofs")
#: most failure buckets listed in full (the rest are counted)
MAX_BUCKETS = 200
#: most points of the cycles scatter per target (a deterministic sample by seed)
MAX_POINTS = 1500


class ReportError(AccvError):
    """The database cannot be reported on (missing file, not a campaign database, unknown campaign)."""


@dataclass
class CampaignRow:
    """One campaign with its totals (a row of the night-over-night trend)."""

    id: int
    args: dict[str, Any]
    started: float
    finished: float | None
    cases: int = 0
    passed: int = 0
    failures: int = 0
    unsupported: int = 0
    last_done: float | None = None
    ops: int = 0                 # distinct (target, operator:dtype) generated
    instructions: int = 0        # distinct (target, instruction) used
    alpha: int = 0               # distinct (target, instruction.attribute=value) used
    buckets: set[str] = field(default_factory=set)
    new: list[str] = field(default_factory=list)        # buckets not in the previous campaign
    vanished: list[str] = field(default_factory=list)   # buckets of the previous campaign not seen here

    @property
    def minutes(self) -> float | None:
        end = self.finished or self.last_done
        return (end - self.started) / 60 if end and end > self.started else None

    @property
    def per_minute(self) -> float | None:
        m = self.minutes
        return self.cases / m if m else None


@dataclass
class ReportData:
    """Everything the page and the summary show for one campaign (``campaign``) of ``db``."""

    db: str
    campaign: CampaignRow
    campaigns: list[CampaignRow]
    targets: list[str]
    has_done: bool                                   # the cases carry completion times
    per_minute: list[tuple[int, str, int]]           # (minute since start, target, cases finished)
    outcomes: dict[str, dict[str, int]]              # target -> outcome -> cases
    backends: list[dict[str, Any]]                   # target, backend, runs, seconds, mismatch, crash
    ops: list[tuple[str, str, str, int]]             # target, operator, dtype, cases
    unsupported: list[tuple[str, str, int]]          # target, operator the compiler gave up on, cases
    instructions: list[tuple[str, str, int, int]]    # target, instruction, cases, uses
    alpha: list[tuple[str, str, str, int]]           # target, instruction.attribute, value, cases
    rtl_coverage: dict[str, Any] | None              # {"table", "columns", "rows"} or None: not collected
    compile_bins: list[dict[str, Any]]               # target, bin, cases, total; with_parts (cases with a
    #                                                  module breakdown), their parts_total and parts -> seconds
    compile_stats: dict[str, dict[str, float]]       # target -> n, p50, p90, max, seconds
    cycles: list[dict[str, Any]]                     # target, backend, cases, p50, p90, max
    cycle_pairs: dict[str, list[tuple[int, int, int]]]   # target -> (seed, sim cycles, rtl cycles)
    buckets: list[dict[str, Any]]                    # newest first
    more_buckets: int = 0
    #: per target: cases, partitioned, macs_acc, macs_total, ops_acc, ops_total (compiled cases)
    placement: list[tuple[str, int, int, int, int, int, int]] = field(default_factory=list)
    placement_ops: list[tuple[str, str, int, int]] = field(default_factory=list)   # target, op, on acc, on host
    host_reasons: list[tuple[str, str, str, int]] = field(default_factory=list)     # target, op, why, instances
    #: per target: the coverage goals (fuzz/goals.py): instructions and α classes hit of the package's
    goals: list[Any] = field(default_factory=list)


def compile_bin_edges() -> list[float]:
    """Upper edges (seconds) of the compile-time histogram: half decades from 3 ms to 300 s."""
    return [10 ** (k / 2) for k in range(-5, 6)]


def load(path: str | Path, campaign: int | None = None, cache: bool = True) -> ReportData:
    """Aggregate campaign ``campaign`` (default: the newest) of the database at ``path``; with ``cache``
    the finished campaigns' trend totals are kept in (and read from) :class:`reports.cache.TrendCache`."""
    try:
        store = Store(path, read_only=True)
    except StoreError as e:
        raise ReportError(str(e)) from None
    try:
        return _load(store, str(path), campaign, cache)
    finally:
        store.close()


def _load(store: Store, path: str, campaign: int | None, use_cache: bool) -> ReportData:
    camps = [CampaignRow(i, a, s, f) for i, a, s, f in store.campaign_rows()]
    if not camps:
        raise ReportError(f"{path}: the database holds no campaign")
    by_id = {c.id: c for c in camps}
    cid = campaign if campaign is not None else camps[-1].id
    if cid not in by_id:
        raise ReportError(f"{path}: no campaign {cid} (campaigns: {', '.join(str(c.id) for c in camps)})")
    has_done = store.has_case_column("done")
    for i, n in store.case_counts().items():
        if i in by_id:
            by_id[i].cases = n
    cache = TrendCache(path) if use_cache else None
    fresh = [c for c in camps if c.id == cid or cache is None or not cache.fill(c)]
    ids = [c.id for c in fresh]
    for i, n, p, f, u, last in store.totals(ids, has_done):
        c = by_id[i]
        c.cases, c.passed, c.failures, c.unsupported, c.last_done = n, p, f, u, last
    ops, instructions, alpha = _items(store, fresh, cid, ids)
    for i, b in store.campaign_buckets(ids):
        by_id[i].buckets.add(b)
    _new_vanished(camps)
    if cache is not None:
        for c in fresh:
            cache.put(c)
        cache.save()
    cur = by_id[cid]
    outcomes: dict[str, dict[str, int]] = {}
    fails: dict[tuple[str, str], dict[str, int]] = {}      # (target, backend) -> outcome -> cases
    for t, o, stage, n in store.outcome_stages(cid):
        outcomes.setdefault(t, {})[o] = outcomes.get(t, {}).get(o, 0) + n
        if o in ("mismatch", "backend-crash") and stage:
            fails.setdefault((t, str(stage).split(".", 1)[-1]), {})[o] = n
    targets = _target_order(cur, outcomes)
    per_minute = store.finished_per_minute(cid, cur.started) if has_done else []
    unsupported = store.unsupported_operators(cid)
    cycles, pairs = _cycles(store, cid)
    bins, backends = _timings(store, cid, fails, {(c["target"], c["backend"]) for c in cycles})
    buckets, more = _buckets(store, cid, camps)
    table = store.rtl_coverage_table(cid)
    rtl = None if table is None else {"table": "rtl_coverage", "columns": table[0], "rows": table[1]}
    return ReportData(path, cur, camps, targets, has_done and bool(per_minute), per_minute, outcomes, backends, ops,
                      unsupported, instructions, alpha, rtl, bins, _compile_stats(store, cid, bins),
                      cycles, pairs, buckets, more, store.placement_totals(cid), store.placement_ops(cid),
                      store.host_reasons(cid), _goals(store, cid))


def _goals(store: Store, cid: int) -> list[Any]:
    from fuzz.goals import progress_of

    return list(progress_of(store, cid).values())


def _target_order(cur: CampaignRow, outcomes: dict[str, dict[str, int]]) -> list[str]:
    named = [t for t in cur.args.get("targets", []) if t in outcomes]
    return named + sorted(t for t in outcomes if t not in named)


def _items(store: Store, camps: list[CampaignRow], cid: int, ids: list[int]
           ) -> tuple[list[tuple[str, str, str, int]], list[tuple[str, str, int, int]], list[tuple[str, str, str, int]]]:
    """Coverage items of ``cid`` (operator:dtype, instruction, α value; cases each) and the distinct count of
    each kind for every campaign of ``ids`` (one grouped pass per kind)."""
    by_id = {c.id: c for c in camps}
    ops: list[tuple[str, str, str, int]] = []
    instr: list[tuple[str, str, int, int]] = []
    alpha: list[tuple[str, str, str, int]] = []
    for camp, t, v, n in store.coverage_values("ops", ids):
        by_id[camp].ops += 1
        if camp == cid:
            op, _, dt = v.partition(":")
            ops.append((t, op, dt, n))
    for camp, t, k, n, uses in store.coverage_counts("instructions", ids):
        by_id[camp].instructions += 1
        if camp == cid:
            instr.append((t, k, n, uses))
    for camp, t, v, n in store.coverage_values("alpha", ids):
        by_id[camp].alpha += 1
        if camp == cid:
            key, _, val = v.partition("=")
            alpha.append((t, key, val, n))
    return ops, instr, alpha


def _new_vanished(camps: list[CampaignRow]) -> None:
    prev: CampaignRow | None = None
    for c in camps:
        if prev is not None:
            c.new = sorted(c.buckets - prev.buckets)
            c.vanished = sorted(prev.buckets - c.buckets)
        else:
            c.new = sorted(c.buckets)
        if c.finished is not None:
            prev = c


#: the compile timing keys and the part each is drawn as (``compile.solver`` is taken out of M5)
_PART_KEYS = {"M1": "M1", "M2": "M2", "M3": "M3", "M4": "M4", "M5": "M5 (CSP)", "solver": "solver", "M6": "M6",
              "gen": "gen", "proofs": "proofs"}


def _timings(store: Store, cid: int, fails: dict[tuple[str, str], dict[str, int]],
             measured: set[tuple[str, str]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Compile-time histogram bins with each part's seconds, and per-backend run totals of the backends that
    reported cycles (``measured``) or failed (``fails``: a backend failing every case reports none)."""
    bins = []
    for t, b, n, tot, n_parts, parts_tot, *secs in store.compile_bins(cid, compile_bin_edges(), tuple(_PART_KEYS)):
        d = {"target": t, "bin": int(b), "cases": int(n), "total": float(tot or 0), "with_parts": int(n_parts or 0),
             "parts_total": float(parts_tot or 0), "parts": dict.fromkeys(COMPILE_PARTS, 0.0)}
        for k, v in zip(_PART_KEYS.values(), secs, strict=True):
            d["parts"][k] += float(v or 0)
        d["parts"]["M5 (CSP)"] = max(d["parts"]["M5 (CSP)"] - d["parts"]["solver"], 0.0)
        bins.append(d)
    names = measured | set(fails) | store.cycle_backends(cid)    # with those that count no cycles (null)
    runs = []
    for t in sorted({t for t, _ in names}):
        mine = sorted(b for tt, b in names if tt == t)
        for b, (n, secs) in store.backend_runs(cid, t, mine).items():
            f = fails.get((t, b), {})
            runs.append({"target": t, "backend": b, "runs": n, "seconds": secs,
                         "mismatch": f.get("mismatch", 0), "crash": f.get("backend-crash", 0)})
    return sorted(bins, key=lambda d: (d["target"], d["bin"])), runs


def _compile_stats(store: Store, cid: int, bins: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    stats = store.compile_percentiles(cid)
    for t, s in stats.items():
        s["seconds"] = sum(b["total"] for b in bins if b["target"] == t)
    return stats


def _cycles(store: Store, cid: int) -> tuple[list[dict[str, Any]], dict[str, list[tuple[int, int, int]]]]:
    stats = store.cycle_percentiles(cid)
    cycles = []
    for tb, s in sorted(stats.items()):
        t, _, b = tb.partition(" ")
        cycles.append({"target": t, "backend": b, "cases": int(s["n"]), "p50": s["p50"], "p90": s["p90"],
                       "max": s["max"]})
    pairs: dict[str, list[tuple[int, int, int]]] = {}
    for t, n in ((c["target"], c["cases"]) for c in cycles if c["backend"] == "rtl"):
        step = max(1, -(-int(n) // MAX_POINTS))      # every step-th seed: a deterministic sample
        pairs[t] = store.cycle_pairs(cid, t, step, MAX_POINTS)
    return cycles, pairs


def _buckets(store: Store, cid: int, camps: list[CampaignRow]) -> tuple[list[dict[str, Any]], int]:
    """The buckets of campaign ``cid``, newest first, with their reduced reproducer's kernel when on disk."""
    cur = next(c for c in camps if c.id == cid)
    new = set(cur.new)
    out = []
    for r in store.bucket_summaries(cid, MAX_BUCKETS):
        out.append({"signature": r["signature"], "cases": int(r["cases"]), "first_seed_here": int(r["first_seed_here"]),
                    "outcome": r["outcome"], "first_campaign": r["first_campaign"], "target": r["target"],
                    "seed": r["seed"], "first_seen": r["first_seen"], "reproducer": r["reproducer"],
                    "replay": r["replay"], "reason": r["reason"], "new": r["signature"] in new,
                    "kernel": _kernel_text(r["reproducer"]),
                    "rerun": _rerun(cur.args, r["case_target"], int(r["first_seed_here"]), r["generator"])})
    return out, len(cur.buckets) - len(out)


def _rerun(args: dict[str, Any], target: str, seed: int, generator: str) -> str:
    """The command that runs one case again exactly (same target, seed, generator and campaign options)."""
    extra = [f"--backend {','.join(args['backends'])}"] if args.get("backends") else []
    extra += [f"--max-nodes {args['max_nodes']}"] if "max_nodes" in args else []
    extra += [f"--proofs {args['proofs']}"] if "proofs" in args else []
    return " ".join(["accv fuzz", f"--target {target}", f"--seed {seed}", "--cases 1", f"--generator {generator}",
                     *extra, "--db build/fuzz/rerun.sqlite"])


def _kernel_text(folder: str | None, limit: int = 6000) -> str | None:
    """The reduced kernel (``kernel.hlo``) of a reproducer folder, when it is on this machine."""
    if not folder:
        return None
    p = Path(folder) / "kernel.hlo"
    try:
        text = p.read_text()
    except OSError:
        return None
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more characters in {p})\n"
