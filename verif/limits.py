"""Resource limits of the prover's z3 queries: a deterministic limit that decides, a wall-clock one
that only stops a runaway query.

What belongs here: :class:`Limits` (what one proof may spend), the solver constructor and the
check every query of :mod:`verif.prover` and :mod:`verif.queries` goes through, and the text an
UNKNOWN gives for a query that ran out.

- **rlimit** (z3's resource counter, ``Solver.set("rlimit", N)``): counts the solver's own steps,
  so a query that exhausts it does so on an idle machine and on a loaded one alike; an UNKNOWN then
  names it ("rlimit 60000000 exceeded"). The limit is per query (z3 adds it to the context's
  counter at each check). :data:`RLIMIT` is calibrated on the library: z3 spends about 3 million
  units a CPU second on these queries, so the limit is about the 20 s the wall timeout used to
  give an idle machine; the largest query that answered in the 40-rule sample
  (``bench/prove_library.py --sample 40 --rlimit 0``) used 6.5 million.
  A query that runs out is asked once more in a fresh z3 context (:func:`check_fresh`, with a
  quarter of the limit): z3's search depends on the context's history, so a long-running process
  can exhaust the limit on a query a fresh one answers cheaply; only an *unsat* there is taken.
- **wall timeout** (seconds): a safety stop only, well above what the rlimit takes on an idle
  machine. A query stopped by it says so ("wall-clock safety stop"), the one verdict that still
  depends on the machine's load.
- :data:`USAGE`: when a list is put there, every check appends (rlimit used, result), for
  calibration (``bench/prove_library.py`` records each proof's largest answered query).
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

__all__ = ["Limits", "RLIMIT", "TIMEOUT_S", "solver", "check", "check_fresh", "why_unknown", "USAGE"]

#: z3 resource units per query (about 20 s of one core for the bit-vector/float queries here)
RLIMIT = 60_000_000
#: the retry in a fresh context gets rlimit / FRESH_SHARE: enough for a query the context's history
#: made hard (the pad/reverse proof that ran out after hundreds of others takes 0.9 million units
#: fresh), a quarter of the cost for one that is hard anyway (and then falls back to bounded proofs)
FRESH_SHARE = 4
#: the wall-clock safety stop per query, seconds
TIMEOUT_S = 120.0

USAGE: list[tuple[int, str]] | None = None


@dataclass(frozen=True)
class Limits:
    """What one z3 query may spend: ``rlimit`` z3 resource units (0: unlimited), stopped anyway
    after ``timeout_s`` seconds of wall time."""

    timeout_s: float = TIMEOUT_S
    rlimit: int = RLIMIT

    def describe(self) -> str:
        return f"rlimit {self.rlimit}" if self.rlimit else f"timeout {self.timeout_s:g}s"


def solver(lim: Limits, timeout_s: float | None = None) -> z3.Solver:
    """A solver with ``lim``'s limits (``timeout_s``: a shorter wall stop, e.g. what is left of an
    instance's)."""
    s = z3.Solver()
    t = lim.timeout_s if timeout_s is None else min(timeout_s, lim.timeout_s)
    s.set("timeout", max(1, int(t * 1000)))
    s.accv_timeout_s = t        # type: ignore[attr-defined]
    if lim.rlimit:
        s.set("rlimit", lim.rlimit)
        s.accv_rlimit = lim.rlimit   # type: ignore[attr-defined]
    return s


def _count(s: z3.Solver) -> int:
    st = s.statistics()
    try:
        return int(st.get_key_value("rlimit count"))
    except z3.Z3Exception:
        return 0


def _check_once(s: z3.Solver) -> z3.CheckSatResult:
    before = _count(s)
    r = s.check()
    used = _count(s) - before
    s.accv_rlimit_used = used   # type: ignore[attr-defined]
    if USAGE is not None:
        USAGE.append((used, str(r)))
    return r


def check(s: z3.Solver) -> z3.CheckSatResult:
    """``s.check()``; the rlimit it used is kept on the solver (for :func:`why_unknown`) and
    recorded where :data:`USAGE` is a list. A query that ran out of rlimit is asked once more in a
    fresh context (:func:`check_fresh`), and its *unsat* there is the answer."""
    r = _check_once(s)
    rlimit = getattr(s, "accv_rlimit", 0)
    ran_out = rlimit and ("resource limit" in s.reason_unknown() or s.accv_rlimit_used >= rlimit)  # type: ignore[attr-defined]
    if r == z3.unknown and ran_out:
        retry = Limits(rlimit=rlimit // FRESH_SHARE, timeout_s=getattr(s, "accv_timeout_s", TIMEOUT_S))
        if check_fresh(s, retry) == z3.unsat:
            return z3.unsat
    return r


def check_fresh(s: z3.Solver, lim: Limits) -> z3.CheckSatResult:
    """``s``'s assertions asked again in a fresh z3 context, under the same limits.

    z3's search depends on the context's history (the order its terms were created in, what it
    learned and simplified before), so in a process that has already run many proofs a query can
    exhaust the rlimit that the same query, asked in a fresh process, answers with a few percent of
    it. :func:`check` asks again this way once where a query ran out of rlimit: an *unsat* here is
    the same answer (the assertions are translated, not changed); anything else leaves the query's
    own answer, unknown."""
    ctx = z3.Context()
    fresh = z3.Solver(ctx=ctx)
    fresh.set("timeout", max(1, int(lim.timeout_s * 1000)))
    if lim.rlimit:
        fresh.set("rlimit", lim.rlimit)
    fresh.add(*[a.translate(ctx) for a in s.assertions()])
    return _check_once(fresh)


def why_unknown(s: z3.Solver, lim: Limits) -> str:
    """Why ``s`` answered unknown, naming the limit it ran into (z3 reports an exhausted rlimit
    as "canceled" from some tactics, so the units used decide)."""
    reason = s.reason_unknown()
    used = getattr(s, "accv_rlimit_used", 0)
    if "resource limit" in reason or (lim.rlimit and used >= lim.rlimit):
        return f"rlimit {lim.rlimit} exceeded"
    if reason in ("timeout", "canceled"):
        return f"wall-clock safety stop ({lim.timeout_s:g}s; the machine's load decides this one)"
    return reason
