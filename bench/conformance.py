"""XLA conformance bench: the comparison of tests/semantics/test_conformance.py as a table.

Runs every corpus kernel (3 input seeds, the last with edge values) and N random graphs from
semantics.gen (multiply-add chains included, ``mul_add=0.25``; each on the input sets of
semantics.inputs.INPUT_SETS: edge-heavy, and standard normal / uniform integers) on the reference
interpreter (``mode="xla-strict"``) and on XLA:CPU (semantics.xla_oracle),
classifies each run with semantics.compare.check_graph (identical / within_bound / failed), prints
a table with per-operator counts and writes build/conformance.json.

Usage: python bench/conformance.py [--graphs N] [--no-corpus]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from semantics.compare import check_graph  # noqa: E402
from semantics.gen import random_graph  # noqa: E402
from semantics.hlo_parser import parse_file  # noqa: E402
from semantics.inputs import INPUT_SETS, input_set, random_inputs  # noqa: E402
from semantics.xla_oracle import available  # noqa: E402

STATUSES = ("identical", "within_bound", "failed")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=250)
    ap.add_argument("--no-corpus", action="store_true")
    args = ap.parse_args()
    ok, why = available()
    if not ok:
        print(why)
        return 2
    warnings.simplefilter("ignore")
    from bench._meta import ACT_CORPUS as corpus
    tally: dict[str, Counter] = {"kernels": Counter(), "graphs": Counter()}
    per_op: dict[str, Counter] = defaultdict(Counter)
    failures: list[str] = []
    runs = []
    if not args.no_corpus and corpus.exists():
        for p in sorted(corpus.rglob("*.hlo")):
            g = parse_file(p)
            runs += [("kernels", str(p.relative_to(corpus)), g, s, e) for s, e in ((0, False), (1, False), (2, True))]
    runs += [("graphs", f"gen seed {s} ({k} inputs)", None, s, k) for s in range(args.graphs) for k in INPUT_SETS]
    for kind, name, g, seed, edges in runs:
        if g is None:
            g = random_graph(seed, mul_add=0.25)
            res = check_graph(g, input_set(g, seed, edges))
        else:
            res = check_graph(g, random_inputs(g, seed, edges=edges))
        tally[kind]["compared"] += 1
        tally[kind][res.status] += 1
        for op in {i.opcode for c in g.computations for i in c.instructions}:
            per_op[op][res.status] += 1
        if res.status == "failed":
            failures.append(f"{name} (seed {seed}): {res.detail}")
    print(f"{'':10} {'compared':>9} {'identical':>10} {'within':>7} {'failed':>7}")
    for kind, c in tally.items():
        print(f"{kind:10} {c['compared']:9} {c['identical']:10} {c['within_bound']:7} {c['failed']:7}")
    print(f"\n{'operator':24} {'identical':>10} {'within':>7} {'failed':>7}")
    for op in sorted(per_op):
        c = per_op[op]
        print(f"{op:24} {c['identical']:10} {c['within_bound']:7} {c['failed']:7}")
    for f in failures:
        print("FAILED", f)
    out = {"kernels": dict(tally["kernels"]), "graphs": dict(tally["graphs"]),
           "per_op": {k: dict(v) for k, v in sorted(per_op.items())}, "failures": failures}
    (REPO / "build").mkdir(exist_ok=True)
    (REPO / "build" / "conformance.json").write_text(json.dumps(out, indent=2, sort_keys=True))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
