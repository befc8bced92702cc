"""cocotb testbench of gemmini_top: the same random cases as the ctypes driver, DRAM served from Python.

What belongs here: cocotb coroutines that reset the design, set and read the scratchpad /
accumulator through VPI (the arrays are public), serve the DRAM port from a Python bytearray with
the same fixed-latency protocol as rtl_harness/gemmini/shim/gemmini_shim.cpp, feed a command list
and count cycles; two cocotb tests:

- ``random_cases``: ``GEMMINI_TB_PER_KIND`` cases of every kind in rtl_harness.gemmini.cases
  (seeds from ``GEMMINI_TB_SEED0``), each compared in full (DRAM, scratchpad, accumulator, PE
  state) with StreamMachine; per-case cycle counts go to ``GEMMINI_TB_OUT`` (JSON) so the caller can
  check them against the ctypes run of the same cases.
- ``bench_program``: runs the command list in ``GEMMINI_TB_BENCH`` (.npy uint64[n, 3]) from the
  DRAM image in ``GEMMINI_TB_BENCH_DRAM`` (.npy uint8) and, when given, the scratchpad / accumulator
  images ``GEMMINI_TB_BENCH_SPAD`` / ``_ACC`` (.npy); writes cycles and the wall seconds of the
  command loop to ``GEMMINI_TB_OUT`` (JSON) and the final DRAM, scratchpad and accumulator beside
  it (``<out>.dram.npy`` ...), for bench/rtl_speed_gemmini.py.

Run through ``rtl_harness.verilate.cocotb_run("gemmini_top", SOURCES, params, "gemmini_tb",
rtl_harness/tb, extra_env=...)``; the design parameters must match GEMMINI_TB_DIM / _SP_ROWS /
_ACC_ROWS.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from pathlib import Path
from typing import Any

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

from compilers.targets.gemmini.description import ARRAY_BITS
from rtl_harness.gemmini import cases as gc

DIM = int(os.environ.get("GEMMINI_TB_DIM", "4"))
SP_ROWS = int(os.environ.get("GEMMINI_TB_SP_ROWS", "256"))
ACC_ROWS = int(os.environ.get("GEMMINI_TB_ACC_ROWS", "64"))
DRAM_SIZE = int(os.environ.get("GEMMINI_TB_DRAM", "4096"))
PER_KIND = int(os.environ.get("GEMMINI_TB_PER_KIND", "20"))
SEED0 = int(os.environ.get("GEMMINI_TB_SEED0", "0"))
OUT = os.environ.get("GEMMINI_TB_OUT")
BENCH = os.environ.get("GEMMINI_TB_BENCH")


async def reset(dut: Any) -> None:
    """Two cycles of reset; returns at a falling edge with rst_n high (inputs idle)."""
    dut.rst_n.value = 0
    dut.cmd_valid.value = 0
    dut.cmd_funct.value = 0
    dut.cmd_rs1.value = 0
    dut.cmd_rs2.value = 0
    dut.dram_resp_valid.value = 0
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    await FallingEdge(dut.clk)
    dut.rst_n.value = 1


def set_memories(dut: Any, spad: np.ndarray, acc: np.ndarray) -> None:
    for i in range(spad.shape[0]):
        dut.spad[i].value = int.from_bytes(spad[i].astype(np.int8).tobytes(), "little")
    for i in range(acc.shape[0]):
        dut.acc[i].value = int.from_bytes(acc[i].astype("<i4").tobytes(), "little")


def read_memories(dut: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    spad = np.zeros((SP_ROWS, DIM), np.int8)
    acc = np.zeros((ACC_ROWS, DIM), np.int32)
    for i in range(SP_ROWS):
        spad[i] = np.frombuffer(dut.spad[i].value.to_unsigned().to_bytes(DIM, "little"), np.int8)
    for i in range(ACC_ROWS):
        acc[i] = np.frombuffer(dut.acc[i].value.to_unsigned().to_bytes(4 * DIM, "little"), "<i4")
    bits = dut.dbg_pe.value.to_unsigned()
    pe = np.zeros((DIM, DIM), np.int32)
    for k in range(DIM * DIM):   # ARRAY_BITS-bit two's complement values, packed
        v = (bits >> (ARRAY_BITS * k)) & ((1 << ARRAY_BITS) - 1)
        pe[k // DIM, k % DIM] = v - (1 << ARRAY_BITS) if v >> (ARRAY_BITS - 1) else v
    return spad, acc, pe


async def run_commands(dut: Any, cmds: np.ndarray, dram: bytearray, latency: int, max_cycles: int) -> int:
    """Feed ``cmds`` (uint64[n, 3]) until all are accepted and the design is idle; serve the DRAM
    port from ``dram`` (writes land in the cycle they are requested, reads answer ``latency``
    cycles later). Starts and ends at a falling edge; returns the rising edges taken."""
    bus = 4 * DIM
    size = len(dram)
    reads: deque[tuple[int, int]] = deque()
    n = cmds.shape[0]
    i = 0
    cycles = 0
    while True:
        # inputs of this cycle (sampled at the next rising edge)
        if i < n:
            dut.cmd_valid.value = 1
            dut.cmd_funct.value = int(cmds[i, 0])
            dut.cmd_rs1.value = int(cmds[i, 1])
            dut.cmd_rs2.value = int(cmds[i, 2])
        else:
            dut.cmd_valid.value = 0
        if reads and reads[0][0] == cycles:
            a = reads.popleft()[1]
            line = bytes(dram[a:a + bus]) if a < size else b""
            dut.dram_resp_rdata.value = int.from_bytes(line.ljust(bus, b"\0"), "little")
            dut.dram_resp_valid.value = 1
        else:
            dut.dram_resp_valid.value = 0
        accepted = i < n and int(dut.cmd_ready.value) == 1
        if not accepted and i >= n and int(dut.busy.value) == 0 and not reads:
            break
        if int(dut.dram_wr_valid.value):
            a = int(dut.dram_wr_addr.value)
            data = dut.dram_wr_wdata.value.to_unsigned().to_bytes(bus, "little")
            strb = dut.dram_wr_wstrb.value.to_unsigned()
            for b in range(bus):
                if strb >> b & 1:
                    if a + b >= size:
                        raise AssertionError(f"DRAM write to byte {a + b} outside [0, {size})")
                    dram[a + b] = data[b]
        if int(dut.dram_rd_valid.value):
            reads.append((cycles + latency, int(dut.dram_rd_addr.value)))
        await FallingEdge(dut.clk)
        cycles += 1
        if accepted:
            i += 1
        if cycles > max_cycles:
            raise AssertionError(f"gemmini_top did not finish {n} command(s) within {max_cycles} cycles")
    return cycles


def _budget(n: int, latency: int) -> int:
    return 1000 + n * (40 * DIM + 64 * (latency + 4) + 200)   # as GemminiRtl.cycle_budget


@cocotb.test(skip=BENCH is not None)
async def random_cases(dut: Any) -> None:
    """Every kind's sample of random cases, compared in full with StreamMachine."""
    Clock(dut.clk, 10, unit="ns").start()
    failures: list[str] = []
    cycles: dict[str, list[int]] = {}
    for kind in gc.KINDS:
        cycles[kind] = []
        for s in range(SEED0, SEED0 + PER_KIND):
            case = gc.make_case(kind, DIM, s, SP_ROWS, ACC_ROWS, DRAM_SIZE)
            model = gc.expected(case)
            await reset(dut)
            set_memories(dut, case.spad, case.acc)
            dram = bytearray(case.dram.tobytes())
            cmds = np.array([(c.funct, c.rs1, c.rs2) for c in case.commands], np.uint64).reshape(-1, 3)
            cyc = await run_commands(dut, cmds, dram, case.latency, _budget(len(cmds), case.latency))
            cycles[kind].append(cyc)
            spad, acc, pe = read_memories(dut)
            diff = gc.first_difference(model, np.frombuffer(bytes(dram), np.uint8), spad, acc, pe)
            if diff is not None:
                failures.append(f"{kind} seed {s}: {diff}\n{case.describe()}")
    if OUT:
        Path(OUT).write_text(json.dumps({"dim": DIM, "per_kind": PER_KIND, "seed0": SEED0, "cycles": cycles,
                                         "failures": len(failures)}))
    assert not failures, f"{len(failures)} case(s) differ from StreamMachine; first: {failures[0]}"


@cocotb.test(skip=BENCH is None)
async def bench_program(dut: Any) -> None:
    """One command list from files, timed (wall seconds of the simulation loop only)."""
    assert BENCH is not None and OUT is not None
    cmds = np.load(BENCH)
    dram = bytearray(np.load(os.environ["GEMMINI_TB_BENCH_DRAM"]).tobytes())
    latency = int(os.environ.get("GEMMINI_TB_LATENCY", "8"))
    Clock(dut.clk, 10, unit="ns").start()
    await reset(dut)
    if os.environ.get("GEMMINI_TB_BENCH_SPAD"):
        set_memories(dut, np.load(os.environ["GEMMINI_TB_BENCH_SPAD"]), np.load(os.environ["GEMMINI_TB_BENCH_ACC"]))
    t0 = time.perf_counter()
    cyc = await run_commands(dut, cmds, dram, latency, _budget(cmds.shape[0], latency))
    wall = time.perf_counter() - t0
    spad, acc, _ = read_memories(dut)
    out = Path(OUT)
    np.save(out.with_suffix(".dram.npy"), np.frombuffer(bytes(dram), np.uint8))
    np.save(out.with_suffix(".spad.npy"), spad)
    np.save(out.with_suffix(".acc.npy"), acc)
    out.write_text(json.dumps({"commands": int(cmds.shape[0]), "cycles": cyc, "seconds": wall}))
