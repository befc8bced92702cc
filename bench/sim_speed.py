"""Functional-simulator speed: instructions per second for the QKV Fig. 10b program
(compilers/programs/qkv_fig10b.asm on load_target("qkv")) and the 1,000-instruction Gemmini
program (compilers.targets.gemmini.bench_program: a tiled 64x192x192 GEMM plus 40 raw mvouts),
on the description-derived simulator (compilers.simulator) and, for Gemmini, on the independent
command-stream simulator (compilers.targets.gemmini.stream). Best of ``--reps`` runs after one warm-up
run (which fills the per-α instantiation cache). Writes build/bench/sim_speed.json.

    python bench/sim_speed.py [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compilers.program import read_asm  # noqa: E402
from compilers.simulator import simulate  # noqa: E402
from compilers.targets import load_target  # noqa: E402
from compilers.targets.gemmini import bench_program  # noqa: E402
from compilers.targets.gemmini.backend import StreamBackend  # noqa: E402
from compilers.targets.gemmini.stream import encode  # noqa: E402


def _inputs(program, seed: int) -> list[np.ndarray]:  # noqa: ANN001
    rng = np.random.default_rng(seed)
    out = []
    for pl in sorted(program.inputs, key=lambda p: p.index):
        dt = pl.type.dtype.np
        if np.issubdtype(dt, np.integer):
            out.append(rng.integers(np.iinfo(dt).min, np.iinfo(dt).max + 1, pl.type.shape).astype(dt))
        else:
            out.append(rng.standard_normal(pl.type.shape).astype(dt))
    return out


def _best(fn, reps: int) -> float:  # noqa: ANN001
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    rows = []
    qkv = load_target("qkv")
    p = read_asm(ROOT / "compilers" / "programs" / "qkv_fig10b.asm")
    x = _inputs(p, 0)
    t = _best(lambda: simulate(qkv, p, x), args.reps)
    rows.append({"program": "qkv_fig10b", "simulator": "description (compilers.simulator)",
                 "instructions": len(p), "seconds": t, "instructions_per_second": len(p) / t})
    gem = load_target("gemmini")
    g = bench_program()
    y = _inputs(g, 0)
    t = _best(lambda: simulate(gem, g, y), args.reps)
    rows.append({"program": "gemmini_bench_1000", "simulator": "description (compilers.simulator)",
                 "instructions": len(g), "seconds": t, "instructions_per_second": len(g) / t})
    cmds = encode(g)
    stream = StreamBackend(gem)

    def run_stream() -> None:       # the stream alone: the encoding above is not timed
        m = stream.machine()
        m.place(g, y)
        m.run(cmds)
        m.outputs(g)

    t = _best(run_stream, args.reps)
    rows.append({"program": "gemmini_bench_1000", "simulator": f"command stream ({len(cmds)} commands)",
                 "instructions": len(g), "seconds": t, "instructions_per_second": len(g) / t})
    for r in rows:
        print(f"{r['program']:<20} {r['simulator']:<40} {r['instructions']:>5} instr  "
              f"{r['seconds'] * 1e3:8.2f} ms  {r['instructions_per_second']:>10,.0f} instr/s")
    out = ROOT / "build" / "bench" / "sim_speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"python": platform.python_version(), "machine": platform.machine(),
                               "reps": args.reps, "results": rows}, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
