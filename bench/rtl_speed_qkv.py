"""Speed of the QKV accelerator RTL simulation: the ctypes driver (C++ shim serving HBM) against the
cocotb testbench (HBM served from Python coroutines), on one random program of valid instructions
(all 7 kinds, random states with bf16 edge values), plus the cold Verilator build times.

Both runs execute the same program from the same state with the same HBM timing (latency 1, always
ready), so they must take the same number of cycles; both final states are checked against the
functional simulator. Prints a table and writes build/bench/rtl_speed_qkv.json.

    .venv/bin/python bench/rtl_speed_qkv.py [--length 1000] [--cocotb-length 1000] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rtl_harness import verilate  # noqa: E402
from rtl_harness.qkv import driver as qkv  # noqa: E402
from rtl_harness.qkv import cases as K  # noqa: E402


def _program(seed: int, length: int) -> tuple[K.State, list]:
    rng = np.random.default_rng(seed)      # the same draws as rtl_harness/qkv/testbench.py test_program
    state = K.random_state(rng)
    return state, K.random_program(rng, length)


def cold_builds() -> dict[str, float]:
    """Seconds to build the ctypes library and the cocotb model from an empty cache."""
    old = os.environ.get("ACCV_RTL_BUILD")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ACCV_RTL_BUILD"] = tmp
        try:
            t0 = time.perf_counter()
            qkv.build()
            ctypes_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            qkv.run_cocotb({"QKV_TB_CASES": "0", "QKV_TB_PROGRAM": "0"})
            cocotb_s = time.perf_counter() - t0
        finally:
            if old is None:
                os.environ.pop("ACCV_RTL_BUILD", None)
            else:
                os.environ["ACCV_RTL_BUILD"] = old
    return {"ctypes_build_s": ctypes_s, "cocotb_build_and_start_s": cocotb_s}


def run_ctypes(seed: int, length: int) -> dict[str, object]:
    state, prog = _program(seed, length)
    rtl = qkv.model()
    rtl.set_timing(1, 0, 1000)
    rtl.reset()
    rtl.write_hbm(state.hbm)
    rtl.write_buf("d1", state.d1)
    rtl.write_buf("d2", state.d2)
    words = [qkv.encode(i) for i in prog]
    t0 = time.perf_counter()
    cycles = rtl.run_words(words)
    secs = time.perf_counter() - t0
    got = K.State(rtl.read_hbm(), rtl.read_buf("d1").view(np.uint16), rtl.read_buf("d2").view(np.uint16))
    want = K.reference_run(state, prog)
    diff = K.compare_states(want, got)
    if diff is not None:   # only the declared softmax NaN-sign case may differ
        def run(st: K.State, instrs: list) -> tuple[K.State, int]:
            h, d1, d2, c = qkv.run_instructions(instrs, st.hbm, st.d1, st.d2)
            return K.State(h, d1.view(np.uint16), d2.view(np.uint16)), c
        step, _ = K.check_stepwise(run, state, prog)
        if step is not None:
            raise SystemExit(f"ctypes run differs from the simulator: {step}")
    mix = {n: sum(1 for i in prog if i.name == n) for n in K.NAMES}
    return {"instructions": length, "cycles": cycles, "seconds": secs, "cycles_per_s": cycles / secs,
            "instructions_per_s": length / secs, "bit_exact_at_end": diff is None, "mix": mix}


def run_cocotb(seed: int, length: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "tb.json"
        qkv.run_cocotb({"QKV_TB_CASES": "0", "QKV_TB_PROGRAM": str(length), "QKV_TB_SEED": str(seed),
                        "QKV_TB_LATENCY": "1", "QKV_TB_JITTER": "0", "QKV_TB_READY": "1000",
                        "QKV_TB_OUT": str(out)}, testcase="test_program")
        res = json.loads(out.read_text())["program"]
    secs = res["seconds"]
    return {"instructions": length, "cycles": res["cycles"], "seconds": secs, "cycles_per_s": res["cycles"] / secs,
            "instructions_per_s": length / secs, "bit_exact_at_end": res["exact"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--length", type=int, default=1000, help="instructions of the ctypes program")
    ap.add_argument("--cocotb-length", type=int, default=1000, help="instructions of the cocotb program")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold-build measurement")
    args = ap.parse_args()
    why = verilate.available()
    if why is not None:
        print(f"rtl_speed_qkv: {why}", file=sys.stderr)
        return 2
    result: dict[str, object] = {"verilator": verilate.verilator_version(), "params": qkv.DEFAULT_PARAMS,
                                 "seed": args.seed}
    if not args.no_cold:
        result["cold_build"] = cold_builds()
    c = run_ctypes(args.seed, args.length)
    result["ctypes"] = c
    k = run_cocotb(args.seed, args.cocotb_length)
    result["cocotb"] = k
    if args.length == args.cocotb_length and c["cycles"] != k["cycles"]:
        print(f"warning: ctypes took {c['cycles']} cycles, cocotb {k['cycles']}", file=sys.stderr)

    print(f"QKV RTL simulation speed (Verilator {result['verilator']}, LANES={qkv.DEFAULT_PARAMS['LANES']}, "
          f"seed {args.seed})")
    print(f"{'driver':<8} {'instructions':>12} {'cycles':>10} {'seconds':>9} {'cycles/s':>11} {'instr/s':>9}")
    for name, r in (("ctypes", c), ("cocotb", k)):
        print(f"{name:<8} {r['instructions']:>12} {r['cycles']:>10} {r['seconds']:>9.2f} {r['cycles_per_s']:>11,.0f} "
              f"{r['instructions_per_s']:>9,.1f}")
    print(f"speed-up ctypes / cocotb: {c['cycles_per_s'] / k['cycles_per_s']:.0f}x (cycles/s)")
    if "cold_build" in result:
        cb = result["cold_build"]
        print(f"cold build: ctypes library {cb['ctypes_build_s']:.1f} s, cocotb model (build + start) "
              f"{cb['cocotb_build_and_start_s']:.1f} s")
    print(f"instruction mix: {c['mix']}")
    out = REPO / "build" / "bench" / "rtl_speed_qkv.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
