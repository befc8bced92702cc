"""Benchmark: reference-interpreter time on the 100 act-gemmini-fuzz kernels (one random input each).

Usage: python bench/interp_corpus.py [--corpus DIR] [--repeat N] [--json build/bench/interp_corpus.json]
Prints a table (parse time, evaluation time; total, median, max) and writes the same as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from semantics.hlo_parser import parse_file  # noqa: E402
from semantics.inputs import random_inputs  # noqa: E402
from semantics.interp import evaluate  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", default=str(REPO / "tests" / "corpus" / "act" / "act-gemmini-fuzz"))
    ap.add_argument("--repeat", type=int, default=5, help="repetitions; the best total is reported")
    ap.add_argument("--json", default=str(REPO / "build" / "bench" / "interp_corpus.json"))
    args = ap.parse_args()
    files = sorted(Path(args.corpus).glob("*.hlo"))
    if not files:
        print(f"no .hlo files under {args.corpus}", file=sys.stderr)
        return 2
    graphs = []
    t0 = time.perf_counter()
    for f in files:
        graphs.append(parse_file(f))
    parse_s = time.perf_counter() - t0
    inputs = [random_inputs(g, 0) for g in graphs]
    best: list[float] | None = None
    for _ in range(args.repeat):
        per = []
        for g, x in zip(graphs, inputs, strict=True):
            t = time.perf_counter()
            evaluate(g, x)
            per.append(time.perf_counter() - t)
        if best is None or sum(per) < sum(best):
            best = per
    assert best is not None
    res = {
        "kernels": len(files),
        "instructions": sum(len(g) for g in graphs),
        "parse_total_s": parse_s,
        "eval_total_s": sum(best),
        "eval_median_ms": statistics.median(best) * 1e3,
        "eval_max_ms": max(best) * 1e3,
        "eval_max_kernel": files[best.index(max(best))].name,
        "repeat": args.repeat,
        "python": sys.version.split()[0],
    }
    print(f"{'kernels':<22}{res['kernels']}")
    print(f"{'instructions':<22}{res['instructions']}")
    print(f"{'parse total':<22}{parse_s * 1e3:.1f} ms")
    print(f"{'evaluate total':<22}{res['eval_total_s'] * 1e3:.1f} ms (best of {args.repeat})")
    print(f"{'evaluate median':<22}{res['eval_median_ms']:.3f} ms")
    print(f"{'evaluate max':<22}{res['eval_max_ms']:.3f} ms ({res['eval_max_kernel']})")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
