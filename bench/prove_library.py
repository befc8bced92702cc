"""Cold proof time of the rule library: every (rule, claimed dtype, rank) proved from scratch, as
``accv prove --all --jobs J`` does, with each proof's wall and CPU seconds.

CPU seconds are the worker process's ``time.process_time()`` around the proof (z3 runs in the
process, so they are the solver's time too); on a loaded machine they say what the proofs cost
where wall time says how long one waited. Per-rule figures add up a rule's instantiations.

The results (per instantiation and per rule, the totals, medians, maxima and the slowest 15 rules)
go to ``bench/results/prove_library.json`` (or ``--out``) and a table is printed. With
``--compare OLD.json`` every (rule, dtype, rank) whose verdict differs from OLD's is printed, and a
weaker verdict (PROVED -> BOUNDED/UNKNOWN, ...) is flagged WEAKER (exit 3). The cache is a fresh
temporary folder (the run is cold by construction; nothing else is touched).

    python bench/prove_library.py [--jobs 2] [--sample N [--seed S]] [--rules SUBSTR,...]
                                  [--compare bench/results/prove_library.json] [--out OUT.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

_ORDER = ("error", "refuted", "unknown", "bounded", "proved")


def _one(name: str, dtype: str, rank: int, timeout: float | None, bound: int, rlimit: int | None) -> dict[str, Any]:
    from rewrite_rules.library import load
    from verif import limits
    from verif.prover import ProverBug, prove

    rule = load()[name]
    limits.USAGE = usage = []
    w0, c0 = time.perf_counter(), time.process_time()
    try:
        r = prove(rule, dtype, rank, timeout, bound, rlimit)
        verdict, gen, detail = r.verdict, r.generality, r.detail
    except ProverBug as e:
        verdict, gen, detail = "error", "", f"prover bug: {e}"
    except Exception as e:  # noqa: BLE001 - one broken rule must not lose the other results
        verdict, gen, detail = "error", "", f"{type(e).__name__}: {e}".splitlines()[0]
    return {"rule": name, "dtype": dtype, "rank": rank, "verdict": verdict, "generality": gen,
            "wall_s": round(time.perf_counter() - w0, 4), "cpu_s": round(time.process_time() - c0, 4),
            "detail": detail[:300],
            # the largest rlimit a query of this proof used and got an answer with (sat/unsat)
            "rlimit_max": max((u for u, res in usage if res != "unknown"), default=0)}


def _key(r: dict[str, Any]) -> str:
    return f"{r['rule']} | {r['dtype']} | r{r['rank']}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--sample", type=int, default=0, help="prove N rules chosen at random (seeded) only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--rules", default="", help="comma-separated substrings: only rules whose name contains one")
    ap.add_argument("--rank", type=int, default=3)
    ap.add_argument("--bound", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=None,
                    help="wall-clock safety stop per query, s (default verif.limits.TIMEOUT_S)")
    ap.add_argument("--rlimit", type=int, default=None,
                    help="z3 resource limit per query (default verif.limits.RLIMIT; 0: none)")
    ap.add_argument("--compare", help="an earlier results JSON: print every verdict that changed")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "prove_library.json"))
    args = ap.parse_args(argv)

    import os
    os.environ["ACCV_PROOF_CACHE"] = tempfile.mkdtemp(prefix="accv-proofs-")
    from rewrite_rules.library import load
    from verif import limits
    from verif.run import tasks_for

    lib = load()
    names = sorted(lib)
    if args.rules:
        subs = [s for s in args.rules.split(",") if s]
        names = [n for n in names if any(s in n for s in subs)]
    if args.sample:
        names = sorted(random.Random(args.seed).sample(names, min(args.sample, len(names))))
    tasks = tasks_for([lib[n] for n in names], args.rank)
    print(f"{len(names)} rules, {len(tasks)} (rule, dtype, rank) proofs, {args.jobs} jobs", file=sys.stderr)

    w0, c0 = time.perf_counter(), time.process_time()
    recs: list[dict[str, Any]] = []
    if args.jobs <= 1:
        for t in tasks:
            recs.append(_one(t.rule, t.dtype, t.rank, args.timeout, args.bound, args.rlimit))
    else:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as ex:
            futs = [ex.submit(_one, t.rule, t.dtype, t.rank, args.timeout, args.bound, args.rlimit) for t in tasks]
            for k, f in enumerate(as_completed(futs), 1):
                recs.append(f.result())
                if k % 200 == 0:
                    print(f"  {k}/{len(tasks)} in {time.perf_counter() - w0:.0f}s", file=sys.stderr)
    wall = time.perf_counter() - w0
    recs.sort(key=_key)

    per_rule: dict[str, dict[str, Any]] = defaultdict(lambda: {"wall_s": 0.0, "cpu_s": 0.0, "n": 0, "verdicts": []})
    for r in recs:
        p = per_rule[r["rule"]]
        p["wall_s"] += r["wall_s"]
        p["cpu_s"] += r["cpu_s"]
        p["n"] += 1
        p["verdicts"].append(r["verdict"])
    rules_out = {k: {"wall_s": round(v["wall_s"], 3), "cpu_s": round(v["cpu_s"], 3), "instantiations": v["n"],
                     "verdict": next((o for o in _ORDER if o in v["verdicts"]), "proved")}
                 for k, v in sorted(per_rule.items())}

    def stats(xs: list[float]) -> dict[str, float]:
        xs = xs or [0.0]
        return {"total": round(sum(xs), 2), "median": round(statistics.median(xs), 4), "max": round(max(xs), 3)}

    slowest = sorted(rules_out.items(), key=lambda kv: -kv[1]["cpu_s"])[:15]
    counts = {v: sum(r["verdict"] == v for r in recs) for v in _ORDER}
    summary = {
        "command": "python bench/prove_library.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "rules": len(rules_out), "instantiations": len(recs), "jobs": args.jobs,
        "elapsed_wall_s": round(wall, 1),
        "per_rule_wall_s": stats([v["wall_s"] for v in rules_out.values()]),
        "per_rule_cpu_s": stats([v["cpu_s"] for v in rules_out.values()]),
        "per_instantiation_wall_s": stats([r["wall_s"] for r in recs]),
        "per_instantiation_cpu_s": stats([r["cpu_s"] for r in recs]),
        "verdicts": counts,
        "rlimit": args.rlimit if args.rlimit is not None else limits.RLIMIT,
        "rlimit_max_answered": max((r.get("rlimit_max", 0) for r in recs), default=0),
        "slowest": [{"rule": k, **v} for k, v in slowest],
    }
    out = Path(args.out)
    old = None
    if args.compare:
        old = json.loads(Path(args.compare).read_text())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "rules": rules_out, "instantiations": recs}, indent=1) + "\n")

    print(f"\n{'rule (slowest 15 by CPU)':<78}{'n':>4}{'wall s':>9}{'cpu s':>9}  verdict")
    for k, v in slowest:
        print(f"{k[:77]:<78}{v['instantiations']:>4}{v['wall_s']:>9.2f}{v['cpu_s']:>9.2f}  {v['verdict']}")
    print(f"\n{summary['rules']} rules, {summary['instantiations']} proofs, {args.jobs} jobs: elapsed {wall:.1f}s wall")
    for what in ("per_rule_wall_s", "per_rule_cpu_s", "per_instantiation_wall_s", "per_instantiation_cpu_s"):
        s = summary[what]
        print(f"  {what:<26} total {s['total']:>9.1f}  median {s['median']:>8.4f}  max {s['max']:>8.2f}")
    print("  verdicts: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"  rlimit per query {summary['rlimit']}; the largest query that answered used {summary['rlimit_max_answered']}")
    print(f"wrote {out}")

    if old is not None:
        before = {_key(r): r["verdict"] for r in old["instantiations"]}
        rank = {v: i for i, v in enumerate(_ORDER)}
        weaker = 0
        changed = 0
        for r in recs:
            b = before.get(_key(r))
            if b is None or b == r["verdict"]:
                continue
            changed += 1
            flag = "WEAKER " if rank[r["verdict"]] < rank[b] else ""
            weaker += bool(flag)
            print(f"{flag}verdict changed: {_key(r)}: {b} -> {r['verdict']} ({r['detail'][:120]})")
        common = sum(_key(r) in before for r in recs)
        print(f"compared with {args.compare}: {common} common proofs, {changed} verdicts changed, {weaker} weaker")
        if weaker:
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
