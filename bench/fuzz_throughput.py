"""Campaign throughput: cases per minute per target with the per-stage time breakdown, outcomes and
operator / instruction coverage, from one `accv fuzz` campaign (fuzz/campaign.py) run here.

    python bench/fuzz_throughput.py [--minutes 3] [--workers 2] [--targets gemmini,qkv,amx]
        [--backends ''] [--rtl-coverage] [--json bench/results/fuzz_throughput.json]

Cases per minute per target is the target's case count over the campaign's wall time (the workers
interleave the targets); the stage shares are sums of per-case seconds (generation, compile with
M1-M6, the reference interpreter, each backend; ``compile.unsupported`` is the compile time of
the cases the target cannot run). The RTL's share is the run.rtl stage over the target's case
seconds. The RTL models are built (or found in the build cache) before the timed campaign. With ``--rtl-coverage`` the campaign also collects Verilator line and toggle
coverage of the rtl backend's runs (fuzz/rtl_coverage.py) and the figure per design goes into the JSON.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fuzz.campaign import CampaignArgs, run_campaign  # noqa: E402
from fuzz.case import warm  # noqa: E402
from fuzz.store import Store  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=3.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--targets", default="gemmini,qkv,amx")
    ap.add_argument("--backends", default="")
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--rtl-coverage", action="store_true", help="collect RTL line/toggle coverage")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    db = Path(tempfile.mkdtemp()) / "bench.sqlite"
    ca = CampaignArgs(targets=tuple(args.targets.split(",")), backends=tuple(b for b in args.backends.split(",") if b),
                      minutes=args.minutes, seed=args.seed, rtl_coverage=args.rtl_coverage)
    t0 = time.monotonic()
    built = warm(ca.targets, ca.backends, ca.rtl_coverage)    # RTL models built outside the timed campaign
    build_s = time.monotonic() - t0
    t0 = time.monotonic()
    res = run_campaign(ca, db, workers=args.workers, progress=False)
    wall = time.monotonic() - t0
    cases = Store(db).cases(res.campaign)
    per: dict[str, dict] = {}
    for t in ca.targets:
        cs = [c for c in cases if c.target == t]
        stages: collections.Counter = collections.Counter()
        for c in cs:
            for k, v in c.timings.items():
                if k != "total":
                    stages[k] += v
            if c.outcome == "unsupported":      # compile time spent finding that the target cannot run it
                stages["compile.unsupported"] += c.timings.get("compile", 0.0)
        busy = sum(c.timings.get("total", 0.0) for c in cs)
        ops: collections.Counter = collections.Counter()
        ins: collections.Counter = collections.Counter()
        alpha: set = set()
        unsup: collections.Counter = collections.Counter()
        for c in cs:
            ops.update(c.coverage.get("ops", []))
            ins.update(c.coverage.get("instructions", {}))
            alpha |= set(c.coverage.get("alpha", []))
            if c.outcome == "unsupported":
                unsup[c.coverage.get("unsupported", "?")] += 1
        per[t] = {"cases": len(cs), "cases_per_min": round(len(cs) / (wall / 60), 1),
                  "outcomes": dict(collections.Counter(c.outcome for c in cs)),
                  "stage_seconds": {k: round(v, 2) for k, v in sorted(stages.items())},
                  "case_seconds": round(busy, 2),
                  "rtl_share": round(stages.get("run.rtl", 0.0) / busy, 3) if busy else 0.0,
                  "operators": dict(ops.most_common()), "instructions": dict(ins.most_common()),
                  "alpha_values": sorted(alpha), "unsupported_by_operator": dict(unsup.most_common()),
                  "informative_mean": round(sum(c.informative or 0 for c in cs if c.informative is not None)
                                            / max(1, sum(c.informative is not None for c in cs)), 3)}
    total = len(cases)
    print(f"{total} cases in {wall:.0f} s on {args.workers} workers: {total / (wall / 60):.1f} cases/min")
    for t, d in per.items():
        print(f"  {t}: {d['cases']} cases ({d['cases_per_min']}/min), {d['outcomes']}, RTL share {d['rtl_share']:.0%}")
        st = d["stage_seconds"]
        print("    seconds per stage (sum over cases): " + ", ".join(
            f"{k} {v:g}" for k, v in st.items() if not k.startswith("compile.")) + f"; of {d['case_seconds']:g} s")
        print("    compile: " + (", ".join(f"{k[8:]} {v:g}" for k, v in st.items() if k.startswith("compile.")) or "-"))
    for design, kinds in res.rtl_coverage.items():
        print(f"  RTL coverage {design}: " + ", ".join(f"{k} {c}/{n} ({c / max(n, 1):.1%})" for k, (c, n) in kinds.items()))
    from bench._meta import RESULTS, run_meta

    path = args.json or RESULTS / "fuzz_throughput.json"
    path.write_text(json.dumps({**run_meta(), "command": "python bench/fuzz_throughput.py " + " ".join(
        sys.argv[1:] if argv is None else argv), "minutes": args.minutes, "workers": args.workers,
        "wall_seconds": round(wall, 1), "setup_seconds": round(build_s, 1),
        "rtl_builds": {t: round(v, 1) for t, v in built.items()}, "cases": total, "cases_per_min": round(total / (wall / 60), 1),
        "targets": per, "rtl_coverage": {d: {k: {"covered": c, "total": n} for k, (c, n) in kinds.items()}
                                         for d, kinds in res.rtl_coverage.items()}}, indent=1) + "\n")
    print(f"JSON: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
