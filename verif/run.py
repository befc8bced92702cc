"""Running the prover over the rule library: task list, parallel workers, cache, summary.

Used by ``accv prove``. Each task is one (rule, claimed dtype, rank); results come back as
:class:`~verif.prover.ProofResult` records, are cached when final, printed one line each in a
fixed format and summarized per rule: a rule is *proved* when every instantiation is, *refuted*
when any is, otherwise *unknown*; its generality is ``symbolic`` when every instantiation was
proved symbolically, else the weakest bounded generality used.
"""

from __future__ import annotations

import multiprocessing
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from rewrite_rules.dsl import Rule

from .cache import ProofCache
from .prover import ProofResult
from .worker import Task, _init_worker, _library, _work

__all__ = ["Task", "tasks_for", "run_tasks", "summarize", "RuleSummary", "table", "timing", "worst"]


def tasks_for(rules: Iterable[Rule], rank_bound: int) -> list[Task]:
    out = []
    for r in rules:
        ranks = r.ranks or tuple(range(1, rank_bound + 1))
        for d in r.dtypes:
            for k in ranks:
                out.append(Task(r.name, d, k))
    return out


def run_tasks(rules: dict[str, Rule], tasks: list[Task], *, timeout: float | None, bound: int, jobs: int,
              cache: ProofCache | None, progress: Callable[[ProofResult], None] | None = None,
              use_cache: bool = True, scheduler: str | None = None, rlimit: int | None = None) -> list[ProofResult]:
    """Prove ``tasks`` (cached results first), on ``jobs`` local workers or, with ``scheduler``,
    on the Dask cluster at that address (:mod:`verif.cluster`). ``rlimit``/``timeout``: z3's
    limits per query (default :mod:`verif.limits`'s)."""
    results: list[ProofResult] = []
    todo: list[Task] = []
    for t in tasks:
        rec = cache.get(rules[t.rule], t.dtype, t.rank, bound) if (cache is not None and use_cache) else None
        if rec is not None:
            r = ProofResult(rec["rule"], rec["dtype"], rec["rank"], rec["status"], rec["generality"], rec["seconds"],
                            rec.get("detail", ""), rec.get("uninterpreted", []))
            results.append(r)
            if progress:
                progress(r)
        else:
            todo.append(t)
    lib = _library()
    extra = {k: v for k, v in rules.items() if lib.get(k) is not v}
    _init_worker(extra)
    if scheduler and todo:
        from .cluster import run_on_cluster
        for r in run_on_cluster(scheduler, todo, extra, timeout, bound, rlimit=rlimit):
            _finish(rules, r, cache, bound, results, progress)
    elif jobs <= 1 or len(todo) <= 1:
        for t in todo:
            r = _work(t, timeout, bound, rlimit)
            _finish(rules, r, cache, bound, results, progress)
    else:
        # forked workers inherit the rules (a user's rules may be closures, which do not pickle)
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as ex:
            futs = [ex.submit(_work, t, timeout, bound, rlimit) for t in todo]
            for f in as_completed(futs):
                _finish(rules, f.result(), cache, bound, results, progress)
    return results


def _finish(rules: dict[str, Rule], r: ProofResult, cache: ProofCache | None, bound: int,
            results: list[ProofResult], progress: Callable[[ProofResult], None] | None) -> None:
    results.append(r)
    if cache is not None:
        cache.put(rules[r.rule], r, bound)
    if progress:
        progress(r)


@dataclass
class RuleSummary:
    """One rule's results: ``verdict`` is the weakest of its instantiations' (error < refuted <
    unknown < bounded < proved); ``status``/``generality`` as the cache records them."""

    rule: str
    family: str
    status: str
    generality: str
    seconds: float
    results: list[ProofResult]

    @property
    def verdict(self) -> str:
        return worst(r.verdict for r in self.results)


_ORDER = ("error", "refuted", "unknown", "bounded", "proved")


def worst(verdicts: Iterable[str]) -> str:
    """The weakest verdict (``proved`` for none)."""
    vs = set(verdicts)
    return next((v for v in _ORDER if v in vs), "proved")


def summarize(rules: dict[str, Rule], results: list[ProofResult]) -> list[RuleSummary]:
    by_rule: dict[str, list[ProofResult]] = defaultdict(list)
    for r in results:
        by_rule[r.rule].append(r)
    out = []
    for name, rs in by_rule.items():
        statuses = {r.status for r in rs}
        status = "refuted" if "refuted" in statuses else ("error" if "error" in statuses else
                                                          ("proved" if statuses == {"proved"} else "unknown"))
        gens = {r.generality for r in rs if r.status == "proved"}
        if status == "proved":
            gen = "symbolic" if gens == {"symbolic"} else sorted(g for g in gens if g != "symbolic")[0]
        else:
            gen = ""
        out.append(RuleSummary(name, rules[name].family, status, gen, sum(r.seconds for r in rs), rs))
    return sorted(out, key=lambda s: (s.family, s.rule))


def table(summaries: list[RuleSummary]) -> str:
    """One row per family: rules by verdict (a rule counts under its weakest instantiation)."""
    fams: dict[str, list[RuleSummary]] = defaultdict(list)
    for s in summaries:
        fams[s.family].append(s)
    cols = ("proved", "bounded", "refuted", "unknown", "error")
    widths = (6, 8, 9, 9, 9, 7)
    lines = [f"{'family':<22}{'rules':>6}" + "".join(f"{c:>{w}}" for c, w in zip(cols, widths[1:], strict=True))]
    tot = [0] * 6
    for fam in sorted(fams):
        ss = fams[fam]
        row = [len(ss)] + [sum(s.verdict == c for s in ss) for c in cols]
        tot = [a + b for a, b in zip(tot, row, strict=True)]
        lines.append(f"{fam:<22}" + "".join(f"{v:>{w}}" for v, w in zip(row, widths, strict=True)))
    lines.append(f"{'total':<22}" + "".join(f"{v:>{w}}" for v, w in zip(tot, widths, strict=True)))
    return "\n".join(lines)


def timing(results: list[ProofResult]) -> dict[str, Any]:
    secs = [r.seconds for r in results] or [0.0]
    return {"instantiations": len(results), "total_s": round(sum(secs), 3),
            "median_s": round(statistics.median(secs), 4), "max_s": round(max(secs), 3)}


