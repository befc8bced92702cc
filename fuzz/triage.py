"""Buckets of a campaign, their reduced reproducers, and the nightly comparison with the previous
campaign in the same database.

:func:`triage` gives every bucket of a campaign that has no reproducer yet one: its first case's
stored graph reduced by :func:`fuzz.reduce.reduce_case` (in a process with a time limit unless
``in_process``) and written beside the database. A bucket whose case cannot be re-run to the same
signature (a timeout, a dead worker) gets its unreduced graph. :func:`compare_with_previous` lists
the buckets that are new and those that vanished since the previous finished campaign.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from semantics.hlo_parser import parse_hlo

from .reduce import Reduced, operator_count, reduce_case, reproducer_dir, write_reduced
from .store import Store

__all__ = ["Comparison", "compare_with_previous", "triage"]


def _reduce_job(target: str, text: str, backends: tuple[str, ...], seed: int, proofs: str,
                budget: float, host: bool = False, withhold: tuple[str, ...] = ()) -> Reduced | None:
    return reduce_case(target, parse_hlo(text), backends, seed, proofs, budget, host, withhold)


def triage(db: str | Path, campaign: int, backends: tuple[str, ...] = (), proofs: str = "prove",
           budget_s: float = 120.0, in_process: bool = False, host: bool | None = None) -> list[dict]:
    """Reduce and write a reproducer for each bucket of ``campaign`` that lacks one (``host``: its
    cases were compiled with host partitioning, and so are the reductions; default: as the
    campaign's stored arguments say); returns the campaign's buckets (store rows) afterwards."""
    from check.verdict import Verdict

    store = Store(db)
    try:
        if host is None:
            args = next((a for i, a, _, _ in store.campaign_rows() if i == campaign), {})
            host = bool(args.get("host", False))
        for b in store.buckets(store.bucket_signatures(campaign)):
            if b["reproducer"]:
                continue
            graph = store.case_graph(b["campaign"], b["target"], b["seed"])
            if graph is None:
                continue
            from .opsets import GENERATOR_WITHHOLD

            gen = store.case_generator(b["campaign"], b["target"], b["seed"])
            withhold = GENERATOR_WITHHOLD.get((b["target"], gen or ""), ())
            args = (b["target"], graph, backends, int(b["seed"]), proofs, budget_s, host, withhold)
            red: Reduced | None = None
            try:
                if b["signature"].split(" | ")[1] in ("timeout", "crash"):
                    pass        # a case that hangs or kills its worker: its whole graph is the reproducer
                elif in_process:
                    red = _reduce_job(*args)
                else:
                    from pebble import ProcessPool

                    with ProcessPool(max_workers=1) as pool:
                        red = pool.schedule(_reduce_job, args=args, timeout=4 * budget_s + 120).result()
            except Exception:  # noqa: BLE001 - the reduction itself hung or died: keep the whole graph
                red = None
            if red is None:
                g = parse_hlo(graph)
                red = Reduced(g, Verdict("unknown", reason=b["signature"]), operator_count(g), operator_count(g), 0, 0.0)
            folder = reproducer_dir(db, b["signature"])
            cmd = write_reduced(folder, b["target"], red, int(b["seed"]), b["signature"], host, withhold)
            store.set_reproducer(b["signature"], str(folder), cmd)
        return store.buckets(store.bucket_signatures(campaign))
    finally:
        store.close()


@dataclass
class Comparison:
    previous: int | None
    new: list[str] = field(default_factory=list)
    vanished: list[str] = field(default_factory=list)


def compare_with_previous(db: str | Path, campaign: int) -> Comparison:
    """Buckets of ``campaign`` absent from the previous finished campaign (new) and the reverse."""
    store = Store(db)
    try:
        prev = store.previous_campaign(campaign)
        now = store.bucket_signatures(campaign)
        before = store.bucket_signatures(prev) if prev is not None else set()
        return Comparison(prev, sorted(now - before), sorted(before - now))
    finally:
        store.close()
