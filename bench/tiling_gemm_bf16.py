"""f32 GEMM layers of bf16 operands through the middle end on AMX: random shapes and two layers,
each program checked against the blocked-sum model bit for bit and against the reference within
the declared bound (compilers/targets/amx/bf16_sum.py).

    python bench/tiling_gemm_bf16.py [--random 12] [--seed 7] [--json bench/results/tiling_gemm_bf16.json]

- ``random``: M, K, N drawn from 1..200 (a third of them primes), B in pair layout
  (``bf16[K,N]{1,0:T(2,1)}``); one input set each on the simulator (edge values on odd cases:
  NaN, inf, -0.0, subnormals); the outputs compared with the model (every non-NaN bit, NaN
  positions) and with the reference interpreter within the bound: the largest ulp distance and
  the largest share of the bound used on finite outputs.
- ``layers``: 16x32x16, 128x256x128 and 256x256x256 (AMX's 8 MiB HBM holds them), the same
  checks on the simulator, and on the emulated C for the first two (gcc -O2 takes many minutes
  on the last one's 23,040 straight-line intrinsics on this machine).

Prints the rows and writes JSON (docs/middle.md's table ``tiling_bf16`` reads it).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from check.backends import get_backend, unavailable  # noqa: E402
from compilers.compile import compile  # noqa: E402
from compilers.middle.gemm_bf16 import layer_graph_bf16  # noqa: E402
from compilers.targets import load_target  # noqa: E402
from compilers.targets.amx.bf16_sum import blocked_sum, sum_bound  # noqa: E402
from semantics.compare import compare  # noqa: E402
from semantics.inputs import random_inputs  # noqa: E402
from semantics.interp import evaluate  # noqa: E402

PRIMES = [p for p in range(2, 201) if all(p % d for d in range(2, int(p ** 0.5) + 1))]
LAYERS = ((16, 32, 16, True), (128, 256, 128, True), (256, 256, 256, False))   # (M, K, N, emulated too)


def _size(rng: random.Random) -> int:
    return rng.choice(PRIMES) if rng.random() < 1 / 3 else rng.randint(1, 200)


def check_outputs(xs: list[np.ndarray], ref: np.ndarray, got: np.ndarray) -> dict:
    """The program's outputs against the model and the reference (module doc)."""
    model = blocked_sum(*xs)
    cm = compare([model], [got])
    bound = sum_bound(*xs)
    cb = compare([ref], [got], [bound])
    fin = np.isfinite(ref) & np.isfinite(got) & ~np.asarray(bound.anything)
    with np.errstate(all="ignore"):
        share = np.abs(ref.astype(np.float64) - got.astype(np.float64))[fin] / np.asarray(bound.abs_tol)[fin]
    return {"model_bit_exact": bool(cm.within_bound), "nan_bits_differ": cm.nan_diffs,
            "within_bound": bool(cb.within_bound), "reference_identical": bool(cb.identical),
            "max_ulp": float(cb.max_ulp), "bound_share": float(share.max()) if share.size else 0.0}


def _case(m: int, k: int, n: int, seed: int, backends: tuple[str, ...]) -> dict:
    g = layer_graph_bf16(m, k, n)
    acc = load_target("amx")
    t0 = time.perf_counter()
    res = compile(g, acc)
    dt = time.perf_counter() - t0
    xs = random_inputs(g, seed, edges=bool(seed % 2))
    (ref,) = evaluate(g, xs)
    rec: dict = {"m": m, "k": k, "n": n, "edge_values": bool(seed % 2), "instructions": len(res.program),
                 "micro_kernels": res.stats.micro_kernels, "compile_ms": dt * 1e3}
    for b in backends:
        t1 = time.perf_counter()
        got = np.asarray(get_backend(acc, b).run(res.program, xs).outputs[0])
        rec[b] = {**check_outputs(xs, ref, got), "run_s": time.perf_counter() - t1}
        r = rec[b]
        print(f"  {m}x{k}x{n} {b}: {len(res.program)} instructions, compile {dt * 1e3:.1f} ms, "
              f"model {'bit for bit' if r['model_bit_exact'] else 'DIFFERS'}, reference "
              f"{'within bound' if r['within_bound'] else 'OUTSIDE the bound'} (max {r['max_ulp']:g} ulp, "
              f"{r['bound_share']:.1%} of the bound)", flush=True)
    return rec


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=int, default=12, help="random shapes (default 12)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", help="default bench/results/tiling_gemm_bf16.json (docs tables read it)")
    args = ap.parse_args(argv)
    from bench._meta import RESULTS, run_meta

    rng = random.Random(args.seed)
    print("random shapes (AMX bf16, simulator):")
    rnd = [_case(_size(rng), _size(rng), _size(rng), i, ("sim",)) for i in range(args.random)]
    emu = ("emulated",) if unavailable("amx", "emulated") is None else ()
    print("layers (simulator" + (", emulated C" if emu else "") + "):")
    lay = [_case(m, k, n, 0, ("sim", *(emu if e else ()))) for m, k, n, e in LAYERS]
    cmd = f"python bench/tiling_gemm_bf16.py --random {args.random} --seed {args.seed}"
    out = Path(args.json) if args.json else RESULTS / "tiling_gemm_bf16.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**run_meta(), "command": cmd, "random": rnd, "layers": lay}, indent=1) + "\n")
    print(f"JSON: {out}")
    bad = [r for r in rnd + lay for b in ("sim", "emulated") if b in r
           and not (r[b]["model_bit_exact"] and r[b]["within_bound"])]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
