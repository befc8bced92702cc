"""Gemmini-ISA RTL simulation speed: simulated cycles per second and commands per second of the
Verilated gemmini_top driven two ways — the ctypes binding (rtl_harness/gemmini/driver.py: the whole
command list runs in C++, the DRAM served by the shim) and the cocotb testbench
(rtl_harness/gemmini/testbench.py: Python coroutines drive every cycle and serve the DRAM) — plus the
cold Verilator build times of both.

Programs:
- ``gemm16``: the 1,000-instruction benchmark program (compilers.targets.gemmini.bench_program: a
  tiled 64x192x192 GEMM plus 40 raw mvouts) encoded to 1,436 RoCC commands, at the description's
  sizes (compilers.targets.gemmini.description: DIM, scratchpad and accumulator rows, DRAM bytes);
- ``mix4``: a random valid program of about 1,000 commands of every kind
  (rtl_harness/tb/gemmini_cases.random_program), DIM 4, 256 / 64 rows, 4 KiB DRAM.

Each program's final DRAM, scratchpad and accumulator are checked against StreamMachine for both
drivers before any figure is reported. ctypes: best of ``--reps`` runs (the run call only); cocotb:
one run, the seconds of its command loop as measured inside the simulator (and the wall time of
the whole cocotb_run call). Cold builds go to a fresh build directory under build/bench/ that is
removed afterwards. Writes build/bench/rtl_speed_gemmini.json.

    python bench/rtl_speed_gemmini.py [--reps 3] [--no-cold]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compilers.targets.gemmini import bench_program  # noqa: E402
from compilers.targets.gemmini import stream as gs  # noqa: E402
from compilers.targets.gemmini.description import ACC_ROWS, DIM, HBM_SIZE, SPAD_ROWS  # noqa: E402
from rtl_harness.gemmini import driver as g  # noqa: E402
from rtl_harness import verilate  # noqa: E402
from rtl_harness.gemmini import cases as gc  # noqa: E402
from semantics.layout import bflat  # noqa: E402

OUT = ROOT / "build" / "bench"


def _program(name: str) -> dict:
    """Commands, sizes and the starting memories of a benchmark program."""
    if name == "gemm16":
        p = bench_program()
        rng = np.random.default_rng(1)
        dram = np.zeros(HBM_SIZE, np.uint8)
        for pl in p.inputs:
            x = rng.integers(-128, 128, pl.type.shape).astype(np.int8)
            b = np.frombuffer(bytes(bflat(x, pl.type)), np.uint8)
            dram[pl.addr:pl.addr + b.size] = b
        return {"dim": DIM, "sp_rows": SPAD_ROWS, "acc_rows": ACC_ROWS, "commands": gs.encode(p, DIM), "dram": dram,
                "spad": np.zeros((SPAD_ROWS, DIM), np.int8), "acc": np.zeros((ACC_ROWS, DIM), np.int32), "latency": 8}
    kinds = [gc.KINDS[i % len(gc.KINDS)] for i in range(400)]
    c = gc.random_program(2026, 4, kinds, 256, 64, 4096)
    return {"dim": 4, "sp_rows": 256, "acc_rows": 64, "commands": c.commands, "dram": c.dram, "spad": c.spad,
            "acc": c.acc, "latency": 8}


def _expected(prog: dict) -> gs.StreamMachine:
    m = gs.StreamMachine(prog["dim"], prog["dram"].size, prog["sp_rows"], prog["acc_rows"])
    m.dram[:], m.spad[:], m.acc[:] = prog["dram"], prog["spad"], prog["acc"]
    with np.errstate(invalid="ignore"):
        m.run(prog["commands"])
    return m


def _params(prog: dict) -> dict[str, int]:
    return {"DIM": prog["dim"], "SP_ROWS": prog["sp_rows"], "ACC_ROWS": prog["acc_rows"]}


def measure(name: str, reps: int, cold: bool) -> dict:
    prog = _program(name)
    n = len(prog["commands"])
    want = _expected(prog)
    row: dict = {"program": name, "dim": prog["dim"], "commands": n}

    # --- ctypes ----------------------------------------------------------------------------------
    if cold:
        with tempfile.TemporaryDirectory(dir=OUT, prefix="rtl-cold-") as d:
            os.environ["ACCV_RTL_BUILD"] = d
            t0 = time.perf_counter()
            verilate.build_model(g.TOP, g.SOURCES, _params(prog), g.SHIM, extra_args=g.build_args(prog["dim"]))
            row["ctypes_build_cold_s"] = time.perf_counter() - t0
            os.environ.pop("ACCV_RTL_BUILD")
    lib = g.library(prog["dim"], prog["sp_rows"], prog["acc_rows"])
    best = float("inf")
    cycles = 0
    for _ in range(reps):
        with g.GemminiRtl(prog["dim"], prog["sp_rows"], prog["acc_rows"], prog["dram"].size, prog["latency"],
                          lib=lib) as m:
            m.load_dram(prog["dram"])
            m.set_spad(prog["spad"])
            m.set_acc(prog["acc"])
            t0 = time.perf_counter()
            cycles = m.run(prog["commands"])
            best = min(best, time.perf_counter() - t0)
            diff = gc.first_difference(want, m.read_dram(), m.spad(), m.acc())
            if diff is not None:
                raise SystemExit(f"{name}: the ctypes run differs from StreamMachine: {diff}")
    row.update(cycles=cycles, ctypes_s=best, ctypes_cycles_per_s=cycles / best, ctypes_commands_per_s=n / best)

    # --- cocotb ------------------------------------------------------------------------------------
    with tempfile.TemporaryDirectory(dir=OUT, prefix="rtl-cocotb-") as d:
        files = Path(d)
        np.save(files / "cmds.npy", g.command_array(prog["commands"]))
        np.save(files / "dram.npy", prog["dram"])
        np.save(files / "spad.npy", prog["spad"])
        np.save(files / "acc.npy", prog["acc"])
        env = {"GEMMINI_TB_DIM": str(prog["dim"]), "GEMMINI_TB_SP_ROWS": str(prog["sp_rows"]),
               "GEMMINI_TB_ACC_ROWS": str(prog["acc_rows"]), "GEMMINI_TB_BENCH": str(files / "cmds.npy"),
               "GEMMINI_TB_BENCH_DRAM": str(files / "dram.npy"), "GEMMINI_TB_BENCH_SPAD": str(files / "spad.npy"),
               "GEMMINI_TB_BENCH_ACC": str(files / "acc.npy"), "GEMMINI_TB_LATENCY": str(prog["latency"]),
               "GEMMINI_TB_OUT": str(files / "out.json")}
        if cold:   # both calls in a fresh build directory: the first builds, the second reuses it
            os.environ["ACCV_RTL_BUILD"] = str(files / "build")
            t0 = time.perf_counter()
            g.cocotb_run(_params(prog), env, testcase="bench_program")
            row["cocotb_build_and_run_cold_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        g.cocotb_run(_params(prog), env, testcase="bench_program")
        row["cocotb_call_warm_s"] = time.perf_counter() - t0
        os.environ.pop("ACCV_RTL_BUILD", None)
        res = json.loads((files / "out.json").read_text())
        out = files / "out.json"
        diff = gc.first_difference(want, np.load(out.with_suffix(".dram.npy")), np.load(out.with_suffix(".spad.npy")),
                                   np.load(out.with_suffix(".acc.npy")))
        if diff is not None:
            raise SystemExit(f"{name}: the cocotb run differs from StreamMachine: {diff}")
        if res["cycles"] != cycles:
            raise SystemExit(f"{name}: cocotb took {res['cycles']} cycles, ctypes {cycles}")
    row.update(cocotb_s=res["seconds"], cocotb_cycles_per_s=cycles / res["seconds"],
               cocotb_commands_per_s=n / res["seconds"])
    if cold:
        row["cocotb_build_cold_s"] = row["cocotb_build_and_run_cold_s"] - row["cocotb_call_warm_s"]
    row["speedup_ctypes_over_cocotb"] = row["ctypes_cycles_per_s"] / row["cocotb_cycles_per_s"]
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-cold", action="store_true", help="skip the cold builds (use the build cache)")
    ap.add_argument("--programs", default="gemm16,mix4")
    a = ap.parse_args(argv)
    why = verilate.available()
    if why is not None:
        print(f"rtl_speed_gemmini: {why}", file=sys.stderr)
        return 3
    OUT.mkdir(parents=True, exist_ok=True)
    rows = [measure(p, a.reps, not a.no_cold) for p in a.programs.split(",")]
    hdr = (f"{'program':<8} {'DIM':>3} {'cmds':>5} {'cycles':>7} | {'ctypes c/s':>11} {'cmd/s':>9} | "
           f"{'cocotb c/s':>10} {'cmd/s':>7} | {'x':>5} | {'build ctypes':>12} {'build cocotb':>12}")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        bc = f"{r['ctypes_build_cold_s']:.1f} s" if "ctypes_build_cold_s" in r else "-"
        bk = f"{r['cocotb_build_cold_s']:.1f} s" if "cocotb_build_cold_s" in r else "-"
        print(f"{r['program']:<8} {r['dim']:>3} {r['commands']:>5} {r['cycles']:>7} | "
              f"{r['ctypes_cycles_per_s']:>11,.0f} {r['ctypes_commands_per_s']:>9,.0f} | "
              f"{r['cocotb_cycles_per_s']:>10,.0f} {r['cocotb_commands_per_s']:>7,.0f} | "
              f"{r['speedup_ctypes_over_cocotb']:>5.0f} | {bc:>12} {bk:>12}")
    info = {"machine": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "verilator": verilate.verilator_version(), "reps": a.reps, "rows": rows}
    path = OUT / "rtl_speed_gemmini.json"
    path.write_text(json.dumps(info, indent=2))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
