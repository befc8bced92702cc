"""Convolution layers through the middle end (compilers/middle/conv.py) on Gemmini: compile, check
bit for bit on the simulator, and RTL cycles for one layer.

    python bench/tiling_conv.py [--no-rtl] [--json bench/results/tiling_conv.json]

- ``layers``: s8 NHWC input x s8 HWIO weights -> s32 (jax's ``conv_general_dilated`` with
  ``preferred_element_type=int32``), stride 1 and 2, padding 0 and 1 ('SAME' for 3x3), 1x1 and
  3x3 windows, C_in 3..64, C_out 8..64, spatial 5..32, with and without bias and the tails (raw
  int32, saturate, f32 scale + ReLU); each compiles for Gemmini and one input set (edge values on
  odd cases) runs on the simulator against the reference interpreter.
- ``rtl``: one 3x3 'SAME' layer on the Verilated Gemmini-ISA RTL: measured cycles, utilization
  = MACs / (cycles x DIM^2), the description's estimate, the outputs compared with the reference.

Prints the table and writes JSON (docs/middle.md's conv table reads it).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from check.backends import get_backend  # noqa: E402
from compilers.compile import compile  # noqa: E402
from compilers.middle.conv import conv_graph, recognize_conv  # noqa: E402
from compilers.targets import load_target  # noqa: E402
from compilers.targets.gemmini import DIM  # noqa: E402
from semantics.inputs import random_inputs  # noqa: E402
from semantics.interp import evaluate  # noqa: E402

TAILS = {"raw": (None, False), "sat": (1.0, False), "scale 1/16+relu": (0.0625, True)}
# (N, H, W, C_in, K, C_out, stride, pad, bias, tail)
LAYERS = [
    (1, 5, 5, 3, 3, 8, 1, 0, False, "raw"),
    (1, 8, 8, 3, 3, 16, 1, 1, True, "scale 1/16+relu"),
    (1, 9, 9, 8, 3, 8, 2, 1, False, "sat"),
    (1, 16, 16, 16, 1, 32, 1, 0, True, "scale 1/16+relu"),
    (1, 17, 13, 24, 1, 40, 2, 0, False, "sat"),
    (2, 12, 12, 17, 3, 24, 2, 0, True, "raw"),
    (1, 32, 32, 3, 3, 32, 2, 1, True, "scale 1/16+relu"),
    (1, 28, 28, 64, 3, 64, 1, 1, True, "scale 1/16+relu"),
    (1, 32, 32, 64, 1, 64, 1, 0, False, "sat"),
]
RTL_LAYER = (1, 16, 16, 16, 3, 16, 1, 1, True, "scale 1/16+relu")


def _name(spec: tuple) -> str:
    n, h, w, c, k, o, s, p, _, _ = spec
    return f"{n}x{h}x{w}x{c} * {k}x{k}x{c}x{o} s{s} p{p}"


def _run(spec: tuple, backend: str, seed: int) -> dict:
    n, h, w, c, k, o, s, p, bias, tail = spec
    scale, relu = TAILS[tail]
    g = conv_graph(n, h, w, c, k, o, s, p, bias=bias, scale=scale, relu=relu)
    cv = recognize_conv(g)
    assert cv is not None
    acc = load_target("gemmini")
    t0 = time.perf_counter()
    res = compile(g, acc)
    dt = time.perf_counter() - t0
    xs = random_inputs(g, seed, edges=bool(seed % 2))
    (want,) = evaluate(g, xs)
    t1 = time.perf_counter()
    r = get_backend(acc, backend).run(res.program, xs)
    run_s = time.perf_counter() - t1
    return {"layer": _name(spec), "n": n, "h": h, "w": w, "c_in": c, "k": k, "c_out": o, "stride": s, "pad": p,
            "bias": bias, "tail": tail, "out": [cv.n, cv.oh, cv.ow, cv.o], "macs": cv.macs,
            "instructions": len(res.program), "micro_kernels": res.stats.micro_kernels, "compile_ms": dt * 1e3,
            "estimate": res.cost, "cycles": r.cycles, "checked": bool(np.array_equal(want, r.outputs[0])),
            "edge_values": bool(seed % 2), f"{backend}_s": run_s}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-rtl", action="store_true", help="skip the RTL measurement")
    ap.add_argument("--json", help="default bench/results/tiling_conv.json (docs tables read it)")
    args = ap.parse_args(argv)
    from bench._meta import RESULTS, run_meta

    print("conv layers (Gemmini, simulator):")
    lay = []
    for i, spec in enumerate(LAYERS):
        rec = _run(spec, "sim", i)
        print(f"  {rec['layer']} bias={rec['bias']} {rec['tail']}: {rec['instructions']} instructions, "
              f"{rec['micro_kernels']} micro-kernels, compile {rec['compile_ms']:.1f} ms, sim {rec['sim_s']:.1f} s, "
              f"{'checked' if rec['checked'] else 'WRONG'}", flush=True)
        lay.append(rec)
    meas = []
    if not args.no_rtl:
        rec = _run(RTL_LAYER, "rtl", 0)
        rec["utilization"] = rec["macs"] / (rec["cycles"] * DIM * DIM)
        print(f"RTL: {rec['layer']}: {rec['cycles']} cycles, utilization {rec['utilization']:.1%}, "
              f"{'checked' if rec['checked'] else 'WRONG'}", flush=True)
        meas.append(rec)
    cmd = "python bench/tiling_conv.py" + (" --no-rtl" if args.no_rtl else "")
    out = Path(args.json) if args.json else RESULTS / "tiling_conv.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**run_meta(), "command": cmd, "dim": DIM, "layers": lay, "rtl": meas}, indent=1) + "\n")
    print(f"JSON: {out}")
    return 1 if any(not r["checked"] for r in lay + meas) else 0


if __name__ == "__main__":
    raise SystemExit(main())
