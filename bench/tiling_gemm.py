"""GEMM layers of any size through the middle end (compilers/middle): random shapes checked on the
simulator, the quantized linear layer, and Gemmini RTL cycles with the array's utilization.

    python bench/tiling_gemm.py [--random 16] [--seed 7] [--no-rtl] [--json bench/results/tiling_gemm.json]

- ``random``: M, K, N drawn from 1..300 (a third of them primes), with or without bias, the tails
  raw int32 / saturate / f32 scale / ReLU; each compiles for Gemmini and for AMX (B declared in
  VNNI layout) and one input set (edge values on odd cases) runs on each simulator against the
  reference, bit for bit.
- ``layers``: the quantized linear layer s8[M,K] x s8[K,N] + s32 bias, f32 scale 1/16, round,
  clamp, s8, ReLU at 32x64x32 and 1024x1024x1024: compile, the store path's instructions, checked
  on the simulator.
- ``rtl``: 64x64x64, 256x256x256 and 12544x64x256 (s8 in, s32 accumulate, s8 out) on the
  Verilated Gemmini-ISA RTL (rtl_harness/gemmini/hdl): measured cycles, utilization = MACs /
  (cycles x DIM^2), the description's estimate, compile time, instructions and RoCC commands,
  the RTL's outputs compared with the reference.

Prints the tables and writes JSON (docs/middle.md's tables read it).
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

from check.backends import get_backend  # noqa: E402
from compilers.compile import compile  # noqa: E402
from compilers.middle.gemm import layer_graph  # noqa: E402
from semantics.build import tensor  # noqa: E402
from compilers.targets import load_target  # noqa: E402
from compilers.targets.gemmini import DIM, encode  # noqa: E402
from semantics.inputs import random_inputs  # noqa: E402
from semantics.interp import evaluate  # noqa: E402

PRIMES = [p for p in range(2, 301) if all(p % d for d in range(2, int(p ** 0.5) + 1))]
TAILS = [("raw", None, False), ("sat", 1.0, False), ("sat+relu", 1.0, True), ("scale 1/16", 0.0625, False),
         ("scale 0.1+relu", 0.1, True), ("scale 3/16+relu", 3 / 16, True)]
AUTOCOMP = 0.93   # Autocomp's 12544x64x256 GEMM on a 16x16 Gemmini (seed 002 §4)


def _size(rng: random.Random) -> int:
    return rng.choice(PRIMES) if rng.random() < 1 / 3 else rng.randint(1, 300)


def _vnni(k: int, n: int):  # noqa: ANN202
    """B declared in VNNI layout, the operand AMX's TDPBSSD reads (weights pre-packed)."""
    return tensor("s8", k, n, layout=(1, 0), tiles=(4, 1))


def _compile(g: object, target: str = "gemmini") -> tuple[object, object, float]:
    acc = load_target(target)
    t0 = time.perf_counter()
    res = compile(g, acc)
    return g, res, time.perf_counter() - t0


def _check(g: object, prog: object, backend: str, seed: int, target: str = "gemmini"
           ) -> tuple[bool, int | None, float]:
    acc = load_target(target)
    xs = random_inputs(g, seed, edges=bool(seed % 2))  # type: ignore[arg-type]
    (want,) = evaluate(g, xs)  # type: ignore[arg-type]
    t0 = time.perf_counter()
    r = get_backend(acc, backend).run(prog, xs)  # type: ignore[arg-type]
    return bool(np.array_equal(want, r.outputs[0])), r.cycles, time.perf_counter() - t0


def random_cases(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        m, k, nn = _size(rng), _size(rng), _size(rng)
        bias = rng.random() < 0.5
        name, scale, relu = rng.choice(TAILS)
        rec: dict = {"m": m, "k": k, "n": nn, "bias": bias, "tail": name, "edge_values": bool(i % 2)}
        for target, b_layout in (("gemmini", None), ("amx", _vnni(k, nn))):
            src = layer_graph(m, k, nn, bias=bias, scale=scale, relu=relu, b_layout=b_layout)
            g, res, dt = _compile(src, target)
            ok, cycles, run_s = _check(g, res.program, "sim", i, target)
            rec[target] = {"instructions": len(res.program), "micro_kernels": res.stats.micro_kernels,
                           "compile_ms": dt * 1e3, "checked": ok, "sim_s": run_s}
            print(f"  {target} {m}x{k}x{nn} bias={bias} {name}: {len(res.program)} instructions, "
                  f"{res.stats.micro_kernels} micro-kernels, compile {dt * 1e3:.1f} ms, sim {run_s:.1f} s, "
                  f"{'checked' if ok else 'WRONG'}", flush=True)
        out.append(rec)
    return out


def layers() -> list[dict]:
    out = []
    for m, k, n in ((32, 64, 32), (1024, 1024, 1024)):
        g, res, dt = _compile(layer_graph(m, k, n, bias=True, scale=0.0625, relu=True, name="qlinear"))
        prog = res.program
        stores = sorted({f"{c.name}(scale=0x{c.env['scale']:08x}, relu={c.env['relu']})"
                         for c in prog.instructions if c.name.startswith("mvout")})
        ok, cycles, run_s = _check(g, prog, "sim", 1)
        rec = {"m": m, "k": k, "n": n, "instructions": len(prog), "micro_kernels": res.stats.micro_kernels,
               "compile_ms": dt * 1e3, "store_path": stores, "checked": ok, "sim_s": run_s, "estimate": cycles}
        print(f"  qlinear {m}x{k}x{n}: {len(prog)} instructions, compile {dt * 1e3:.1f} ms, stores {stores}, "
              f"sim {run_s:.1f} s, {'checked' if ok else 'WRONG'}", flush=True)
        out.append(rec)
    return out


def rtl() -> list[dict]:
    out = []
    for m, k, n in ((64, 64, 64), (256, 256, 256), (12544, 64, 256)):
        g, res, dt = _compile(layer_graph(m, k, n, name="gemm"))
        prog = res.program
        commands = len(encode(prog, DIM))
        ok, cycles, run_s = _check(g, prog, "rtl", 0)
        assert cycles is not None
        util = m * k * n / (cycles * DIM * DIM)
        rec = {"m": m, "k": k, "n": n, "instructions": len(prog), "commands": commands, "compile_ms": dt * 1e3,
               "rtl_cycles": cycles, "estimate": res.cost, "utilization": util, "checked": ok, "rtl_s": run_s}
        print(f"  {m}x{k}x{n}: {len(prog)} instructions, {commands} commands, compile {dt * 1e3:.1f} ms, "
              f"RTL {cycles} cycles ({run_s:.1f} s), utilization {util:.1%}, {'checked' if ok else 'WRONG'}",
              flush=True)
        out.append(rec)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--random", type=int, default=16, help="random shapes (default 16)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-rtl", action="store_true", help="skip the RTL measurements")
    ap.add_argument("--json", help="default bench/results/tiling_gemm.json (docs tables read it)")
    args = ap.parse_args(argv)
    from bench._meta import RESULTS, run_meta

    print("random shapes (Gemmini and AMX, simulator):")
    rnd = random_cases(args.random, args.seed)
    print("quantized linear layers:")
    lay = layers()
    meas = []
    if not args.no_rtl:
        print("RTL:")
        meas = rtl()
    cmd = f"python bench/tiling_gemm.py --random {args.random} --seed {args.seed}" + (" --no-rtl" if args.no_rtl else "")
    out = Path(args.json) if args.json else RESULTS / "tiling_gemm.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**run_meta(), "command": cmd, "dim": DIM, "autocomp": AUTOCOMP, "random": rnd,
                               "layers": lay, "rtl": meas}, indent=1) + "\n")
    print(f"JSON: {out}")
    bad = [r for r in lay + meas if not r["checked"]] + [r for r in rnd if not (r["gemmini"]["checked"]
                                                                                  and r["amx"]["checked"])]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
