"""A random-graph campaign against the Act compiler (issue 5): every graph must compile to a
program equal to the reference bit for bit on the target's simulator, or exit 3 with a reason.

Graphs come from :func:`semantics.gen.random_graph` restricted to the operator and dtype lists of
``fuzz/opsets.py`` (which the random-graph test uses too; ``--ops 1`` is the first list of the
target, ``--ops 2`` the second), one per seed. Prints the outcome counts, the
slowest answers and the exit-3 reasons grouped by the operator they name, writes JSON (with each
compiled program's SHA-256 over its assembly text, to compare two revisions' programs), and exits
1 if any graph crashed the compiler or compiled to a wrong program (a compiler bug: the JSON keeps
its seed).

A rule instantiation fires only with a passing proof in the proof cache. By default
(``--proofs prove``, as ``accv compile``) a missing one is proved on the spot and cached, so the
outcomes do not depend on what an earlier run happened to prove (with ``--proofs cached`` they
do: a graph that needs an unproven instantiation exits 3); the seconds of an answer exclude the
time spent proving, which is reported apart.

    python bench/random_campaign.py --target gemmini --seeds 300-419 [--ops 2] [--max-ops 4]
        [--check 2] [--check-moved] [--proofs prove|cached] [--json bench/results/random_gemmini.json]
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from check.run import check_program  # noqa: E402
from compilers.compile import compile, rules_for  # noqa: E402
from compilers.errors import Unsupported  # noqa: E402
from compilers.act.phase1.tiling import Tiler  # noqa: E402
from compilers.program import print_asm  # noqa: E402
from compilers.targets import load_target  # noqa: E402
from semantics.gen import random_graph  # noqa: E402
from fuzz.opsets import OPSETS as OPS  # noqa: E402  (operators, dtypes) per (target, list number)


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=sorted({t for t, _ in OPS}), required=True)
    ap.add_argument("--seeds", required=True, help="e.g. 300-419 or 1,5,9-12")
    ap.add_argument("--ops", type=int, choices=(1, 2), default=2, help="the test's first or second operator list")
    ap.add_argument("--max-ops", type=int, default=4)
    ap.add_argument("--check", type=int, default=2, help="random input sets per compiled program")
    ap.add_argument("--check-moved", action="store_true",
                    help="run the tiling's real search beside each moved result (Tiler.CHECK_MOVED; slower)")
    ap.add_argument("--proofs", choices=("prove", "cached"), default="prove",
                    help="prove a missing rule instantiation on the spot (default) or refuse it")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    ops, dtypes = OPS[(args.target, args.ops)]
    acc = load_target(args.target)
    gate = rules_for(acc, args.proofs).gate
    Tiler.CHECK_MOVED = args.check_moved
    seeds = _seeds(args.seeds)
    results: dict[int, dict] = {}
    try:
        from tqdm import tqdm
        it = tqdm(seeds, desc=args.target, file=sys.stderr)
    except ImportError:  # pragma: no cover - tqdm is a dev dependency
        it = seeds
    for seed in it:
        g = random_graph(seed, ops=ops.split(","), dtypes=dtypes.split(","), max_ops=args.max_ops)
        t0 = time.perf_counter()
        proving = gate.seconds
        rec: dict = {}
        try:
            res = compile(g, acc, proofs=args.proofs)
        except Unsupported as e:
            rec = {"outcome": "exit3", "reason": str(e), "operator": e.op}
        except Exception as e:  # noqa: BLE001 - a crash is what the campaign looks for
            rec = {"outcome": "crash", "reason": f"{type(e).__name__}: {e}"}
        else:
            chk = check_program(g, acc, res.program, args.check, seed=seed)
            rec = ({"outcome": "ok", "instructions": len(res.program)} if chk.ok
                   else {"outcome": "mismatch", "reason": chk.message})
            rec["sha256"] = hashlib.sha256(print_asm(res.program).encode()).hexdigest()   # the program's text
        rec["seconds"] = round(time.perf_counter() - t0 - (gate.seconds - proving), 3)
        results[seed] = rec
    counts = collections.Counter(r["outcome"] for r in results.values())
    by_op = collections.Counter()
    for r in results.values():
        if r["outcome"] == "exit3":
            by_op[r["operator"] or r["reason"][:60]] += 1
    slow = sorted(results.items(), key=lambda kv: -kv[1]["seconds"])[:3]
    print(f"{args.target}, list {args.ops}, seeds {args.seeds}, up to {args.max_ops} operators: "
          f"{counts['ok']} compiled and checked, {counts['exit3']} exit 3, "
          f"{counts['crash']} crashed, {counts['mismatch']} wrong")
    print("slowest answers: " + ", ".join(f"seed {s} {r['seconds']:.2f} s ({r['outcome']})" for s, r in slow))
    print("exit-3 reasons by operator: " + ", ".join(f"{op} {n}" for op, n in by_op.most_common()))
    print(f"proofs: {len(gate.proved_now)} rule instantiations proved on the spot ({gate.seconds:.1f} s, "
          f"not in the answers' seconds), {len(gate.skipped)} refused")
    for s, r in results.items():
        if r["outcome"] in ("crash", "mismatch"):
            print(f"  seed {s}: {r['outcome']}: {r['reason']}")
    from bench._meta import RESULTS, run_meta
    path = args.json or RESULTS / f"random_{args.target}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**run_meta(), "command": "python bench/random_campaign.py " + " ".join(
                                    sys.argv[1:] if argv is None else argv),
                                "target": args.target, "seeds": args.seeds, "ops_list": args.ops, "ops": ops,
                                "dtypes": dtypes, "max_ops": args.max_ops, "check": args.check,
                                "check_moved": args.check_moved, "proofs": args.proofs,
                                "counts": {k: counts[k] for k in ("ok", "exit3", "crash", "mismatch")},
                                "exit3_by_operator": dict(by_op.most_common()),
                                "proved_now": gate.proved_now, "refused": sorted(gate.skipped),
                                "results": results}, indent=1) + "\n")
    print(f"JSON: {path}")
    return 1 if counts["crash"] or counts["mismatch"] else 0


if __name__ == "__main__":
    sys.exit(main())
