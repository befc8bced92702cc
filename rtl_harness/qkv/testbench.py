"""cocotb testbench of the QKV accelerator RTL (qkv_top): the same cases as the ctypes driver, but
every cycle goes through cocotb coroutines and the HBM is served from Python.

Components: :class:`HbmModel` (a Python HBM behind qkv_top's request/response port, with random
read latency and request back-pressure), :class:`QkvDriver` (debug-port buffer access and the
instruction handshake, one instruction at a time, the next presented in the cycle of the previous
one's done, as the C++ shim does). The tests are parameterised through the environment:

- ``QKV_TB_CASES``: random cases per instruction (default 10); ``QKV_TB_SEED`` (default 1);
  ``QKV_TB_LATENCY`` / ``QKV_TB_JITTER`` / ``QKV_TB_READY`` (permille): HBM timing (default 1 / 3 / 700);
- ``QKV_TB_PROGRAM``: length of the random program of ``test_program`` (default 0: skipped);
- ``QKV_TB_OUT``: a JSON file the tests write their figures to.

Run through :func:`rtl_harness.verilate.cocotb_run` (tests/rtl_harness/test_qkv_rtl.py,
bench/rtl_speed_qkv.py).
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Sequence

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly

from compilers.program import Concrete
from compilers.targets.qkv.description import HBM_SIZE
from compilers.targets.qkv.encode import encode
from rtl_harness.qkv import cases as K


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


class HbmModel:
    """qkv_top's simulation HBM, served from Python: every cycle (at the falling edge) drive the
    response and ready inputs, then (in the read-only phase) see whether a request fires at the
    coming rising edge; reads answer in order after ``latency`` + 0..``jitter`` cycles."""

    def __init__(self, dut: object, mem: np.ndarray, latency: int, jitter: int, ready_permille: int,
                 rng: np.random.Generator) -> None:
        self.dut = dut
        self.mem = mem
        self.latency, self.jitter, self.ready = max(1, latency), jitter, ready_permille
        self.rng = rng
        self.queue: deque[tuple[int, bytes]] = deque()
        self.cycle = 0
        self.last_due = 0

    def drive(self) -> bool:
        """Inputs of this cycle (call right after the falling edge); returns whether a response
        is presented."""
        d = self.dut
        now = bool(self.queue) and self.queue[0][0] <= self.cycle
        d.hbm_rsp_valid.value = int(now)
        if now:
            d.hbm_rsp_rdata.value = int.from_bytes(self.queue[0][1], "little")
        d.hbm_req_ready.value = int(self.ready >= 1000 or self.rng.integers(0, 1000) < self.ready)
        return now

    def sample(self, presented: bool) -> None:
        """In the read-only phase: apply a request that fires at the coming edge."""
        d = self.dut
        if int(d.hbm_req_valid.value) and int(d.hbm_req_ready.value):
            addr = int(d.hbm_req_addr.value)
            if int(d.hbm_req_we.value):
                data = d.hbm_req_wdata.value.to_unsigned().to_bytes(64, "little")
                end = min(addr + 64, HBM_SIZE)
                self.mem[addr:end] = np.frombuffer(data[:end - addr], np.uint8)
            else:
                chunk = bytes(self.mem[addr:addr + 64]).ljust(64, b"\0")
                due = self.cycle + self.latency + (int(self.rng.integers(0, self.jitter + 1)) if self.jitter else 0)
                due = max(due, self.last_due)
                self.last_due = due
                self.queue.append((due, chunk))
        if presented:
            self.queue.popleft()
        self.cycle += 1


class QkvDriver:
    """Drives qkv_top: buffers through the debug port, instructions through the handshake."""

    def __init__(self, dut: object, hbm: HbmModel) -> None:
        self.dut = dut
        self.hbm = hbm

    def idle(self) -> None:
        d = self.dut
        for s in (d.instr_valid, d.dbg_en, d.dbg_we, d.dbg_buf, d.hbm_rsp_valid, d.hbm_req_ready):
            s.value = 0

    async def reset(self) -> None:
        d = self.dut
        self.idle()
        d.instr_word.value = 0
        d.dbg_row.value = 0
        d.dbg_wdata.value = 0
        d.hbm_rsp_rdata.value = 0
        d.rst_n.value = 0
        for _ in range(2):
            await FallingEdge(d.clk)
        d.rst_n.value = 1
        await FallingEdge(d.clk)

    async def write_buf(self, buf: int, rows: np.ndarray) -> None:
        d = self.dut
        for r in range(rows.shape[0]):
            d.dbg_en.value, d.dbg_we.value, d.dbg_buf.value, d.dbg_row.value = 1, 1, buf, r
            d.dbg_wdata.value = int.from_bytes(rows[r].astype("<u2").tobytes(), "little")
            await FallingEdge(d.clk)
        self.idle()

    async def read_buf(self, buf: int, nrows: int) -> np.ndarray:
        d = self.dut
        out = np.empty((nrows, 64), np.uint16)
        for r in range(nrows):
            d.dbg_en.value, d.dbg_we.value, d.dbg_buf.value, d.dbg_row.value = 1, 0, buf, r
            await FallingEdge(d.clk)
            d.dbg_en.value = 0
            out[r] = np.frombuffer(d.dbg_rdata.value.to_unsigned().to_bytes(128, "little"), "<u2")
        self.idle()
        await FallingEdge(d.clk)
        return out

    async def run(self, instrs: Sequence[Concrete], max_cycles: int = 200_000) -> int:
        """Run ``instrs`` back to back; cycles from the first accept to the last done. Raises
        AssertionError when the RTL rejects one or a run hangs."""
        d = self.dut
        words = [encode(i) for i in instrs]
        idx, outstanding, first, cycle, last_done = 0, -1, -1, 0, 0
        while True:
            presented = self.hbm.drive()
            d.instr_valid.value = 0
            if outstanding >= 0 and int(d.done.value):   # registered: settled since the edge
                assert not int(d.err.value), f"instruction {outstanding} '{instrs[outstanding]}' rejected by the RTL"
                outstanding, last_done = -1, cycle
            offer = outstanding < 0 and idx < len(words)
            if outstanding < 0 and idx == len(words):
                break
            if offer:
                d.instr_valid.value = 1
                d.instr_word.value = words[idx]
            await ReadOnly()
            if offer and int(d.instr_ready.value):
                outstanding = idx
                idx += 1
                if first < 0:
                    first = cycle
            self.hbm.sample(presented)
            await FallingEdge(d.clk)
            cycle += 1
            assert cycle < max_cycles * max(1, len(words)), f"no done after {cycle} cycles"
        self.idle()
        return last_done - first if first >= 0 else 0


async def _setup(dut: object, state: K.State | None = None, seed: int = 1) -> QkvDriver:
    cocotb.start_soon(Clock(dut.clk, 10, unit="ns").start())
    rng = np.random.default_rng(seed)
    mem = state.hbm.copy() if state is not None else np.zeros(HBM_SIZE, np.uint8)
    hbm = HbmModel(dut, mem, _env_int("QKV_TB_LATENCY", 1), _env_int("QKV_TB_JITTER", 3),
                   _env_int("QKV_TB_READY", 700), rng)
    drv = QkvDriver(dut, hbm)
    await drv.reset()
    return drv


async def _load_state(drv: QkvDriver, state: K.State) -> None:
    drv.hbm.mem[:] = state.hbm
    await drv.write_buf(0, state.d1)
    await drv.write_buf(1, state.d2)


async def _read_state(drv: QkvDriver) -> K.State:
    d1 = await drv.read_buf(0, 128)
    d2 = await drv.read_buf(1, 64)
    return K.State(drv.hbm.mem.copy(), d1, d2)


def _write_out(key: str, value: object) -> None:
    path = os.environ.get("QKV_TB_OUT")
    if not path:
        return
    data = json.loads(open(path).read()) if os.path.exists(path) else {}
    data[key] = value
    with open(path, "w") as f:
        json.dump(data, f, indent=1)


@cocotb.test()
async def test_random_cases(dut: object) -> None:
    """QKV_TB_CASES random cases of every instruction from random states; whole state compared
    with the simulator (first difference reported)."""
    n = _env_int("QKV_TB_CASES", 10)
    seed = _env_int("QKV_TB_SEED", 1)
    rng = np.random.default_rng(seed)
    drv = await _setup(dut, seed=seed)
    counts: dict[str, int] = {}
    cycles: dict[str, int] = {}
    t0 = time.perf_counter()
    for name in K.NAMES:
        for _ in range(n):
            state = K.random_state(rng)
            ins = K.random_instruction(rng, name)
            await _load_state(drv, state)
            c = await drv.run([ins])
            got = await _read_state(drv)
            want = K.reference_run(state, [ins])
            diff = K.compare_states(want, got)
            if diff is not None:
                diff = K.compare_states(want, got, ins, state)
            assert diff is None, f"{ins}: {diff}"
            counts[name] = counts.get(name, 0) + 1
            cycles[name] = cycles.get(name, 0) + c
    _write_out("random_cases", {"cases": counts, "cycles": cycles, "seconds": time.perf_counter() - t0})


@cocotb.test()
async def test_program(dut: object) -> None:
    """A QKV_TB_PROGRAM-instruction random program back to back (the speed figure of
    bench/rtl_speed_qkv.py); final state compared with the simulator."""
    length = _env_int("QKV_TB_PROGRAM", 0)
    if length <= 0:
        return
    seed = _env_int("QKV_TB_SEED", 1)
    rng = np.random.default_rng(seed)
    state = K.random_state(rng)
    prog = K.random_program(rng, length)
    drv = await _setup(dut, seed=seed)
    await _load_state(drv, state)
    t0 = time.perf_counter()
    cycles = await drv.run(prog)
    secs = time.perf_counter() - t0
    got = await _read_state(drv)
    want = K.reference_run(state, prog)
    diff = K.compare_states(want, got)
    _write_out("program", {"instructions": length, "cycles": cycles, "seconds": secs,
                           "exact": diff is None, "difference": str(diff) if diff else None})
    if diff is not None:   # only the declared softmax NaN-sign case may differ: check step by step
        cur = state
        for i, ins in enumerate(prog):
            await _load_state(drv, cur)
            await drv.run([ins])
            got = await _read_state(drv)
            want = K.reference_run(cur, [ins])
            step = K.compare_states(want, got, ins, cur)
            assert step is None, f"program instruction {i} '{ins}': {step}"
            cur = want
