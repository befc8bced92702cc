"""The Gemmini-ISA RTL (rtl_harness/gemmini/hdl) driven from Python through its C++ shim.

What belongs here: building the Verilated ``gemmini_top`` (through :mod:`rtl_harness.verilate`),
the ctypes binding of ``gemmini_shim.cpp`` (:class:`GemminiRtl`: DRAM image, scratchpad,
accumulator and PE state in and out, a command list run to completion in C++ with the DRAM
served there each cycle, the cycle count), and the entry point the rest of the project uses:

- :func:`run_commands` ``(commands, dram_image, dim, ...) -> (RtlState, cycles)``: a RoCC
  command stream (``compilers.targets.gemmini.stream.Command``) from a DRAM image (and optionally
  given scratchpad / accumulator contents) to the final DRAM, scratchpad, accumulator and PE
  state; the ``rtl`` backend (:mod:`rtl_harness.runner`) runs Gemmini programs through it.

The command words and what each command does are Gemmini's target package's
(:mod:`compilers.targets.gemmini.stream`); the design's default sizes are its description's
(:mod:`compilers.targets.gemmini.description`).

The design and where it differs from Chisel Gemmini: docs/rtl.md, "Gemmini-ISA RTL".
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from compilers.targets.gemmini.description import ACC_ROWS, DIM, HBM_SIZE, SPAD_ROWS
from compilers.targets.gemmini.stream import Command
from semantics.errors import AccvError

from .. import coverage, verilate

__all__ = ["GemminiRtl", "GemminiRtlError", "RtlTimeout", "RtlState", "SOURCES", "SHIM", "TOP", "DRAM_LATENCY", "build_args",
           "TB_DIR", "library", "run_commands", "cocotb_run", "scale_lane"]

HERE = Path(__file__).resolve().parent
RTL_DIR = HERE / "hdl"
SHIM_DIR = HERE / "shim"
TOP = "gemmini_top"
# dependency order (yosys reads them in this order too)
SOURCES = tuple(RTL_DIR / f for f in ("gemmini_fp.sv", "gemmini_pe.sv", "gemmini_ex.sv", "gemmini_load.sv",
                                       "gemmini_store.sv", "gemmini_queue.sv", "gemmini_top.sv"))
SHIM = SHIM_DIR / "gemmini_shim.cpp"
COV_SHIM = SHIM_DIR / "gemmini_cov_shim.cpp"      # SHIM plus the coverage calls (the coverage build)
LANE_SHIM = SHIM_DIR / "gemmini_lane_shim.cpp"
TB_DIR = HERE          # the cocotb testbench, testbench.py
DRAM_LATENCY = 8       # cycles from a DRAM read request to its data (the testbench's choice, >= 1)


class GemminiRtlError(AccvError):
    """The Gemmini RTL could not run a command list (the reason in one line)."""

    exit_code = 1


class RtlTimeout(GemminiRtlError):
    """The design did not finish within the cycle budget (a hang: names the budget)."""


@dataclass(frozen=True)
class RtlState:
    """Memories after a run: DRAM bytes, scratchpad int8[rows, dim], accumulator int32[rows, dim],
    PE state int32[dim, dim] (the 20-bit values sign-extended)."""

    dram: np.ndarray
    spad: np.ndarray
    acc: np.ndarray
    pe: np.ndarray


def build_args(dim: int) -> list[str]:
    """Extra Verilator arguments: from DIM 8 up the sequential logic is one function of tens of
    thousands of lines; splitting it (and the files) lets g++ -O2 finish in about half the time
    (DIM 16: 56 s -> 33 s on 2 cores) at the same simulation speed. Small designs build faster
    unsplit."""
    return ["--output-split-cfuncs", "1000", "--output-split", "10000"] if dim >= 8 else []


@cache
def library(dim: int = DIM, sp_rows: int = SPAD_ROWS, acc_rows: int = ACC_ROWS, cov: bool = False) -> Path:
    """The shared library of ``gemmini_top`` at these parameters (built once, cached on disk;
    verilate serializes concurrent builds across processes); ``cov``: the line and toggle coverage
    build (:mod:`rtl_harness.coverage`)."""
    params = {"DIM": dim, "SP_ROWS": sp_rows, "ACC_ROWS": acc_rows}
    if cov:
        return verilate.build_model(TOP, SOURCES, params, COV_SHIM, extra_args=[*build_args(dim),
                                    *coverage.COVERAGE_ARGS], includes=[SHIM], variant="cov")
    return verilate.build_model(TOP, SOURCES, params, SHIM, extra_args=build_args(dim))


def cocotb_run(params: dict[str, int], extra_env: dict[str, str], testcase: str | None = None) -> Path:
    """Run the cocotb testbench rtl_harness/gemmini/testbench.py on ``gemmini_top`` with ``params``
    (verilate passes the precompiled-header flag to cocotb's make and serializes builds)."""
    return verilate.cocotb_run(TOP, SOURCES, params, "testbench", TB_DIR, testcase=testcase, extra_env=extra_env)


def scale_lane(x: np.ndarray, scale_bits: np.ndarray, lib: Path | None = None) -> np.ndarray:
    """The RTL scale lane (gemmini_scale_lane: int32 x, fp32 scale bits -> int8) on arrays."""
    if lib is None:
        lib = verilate.build_model("gemmini_scale_lane", [RTL_DIR / "gemmini_fp.sv"], {}, LANE_SHIM)
    so = ctypes.CDLL(str(lib))
    so.lane_new.restype = ctypes.c_void_p
    so.lane_free.argtypes = [ctypes.c_void_p]
    so.lane_eval.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64]
    xs = np.ascontiguousarray(np.asarray(x, np.int64).astype(np.uint32))
    ss = np.ascontiguousarray(np.broadcast_to(np.asarray(scale_bits, np.uint64).astype(np.uint32), xs.shape))
    q = np.zeros(xs.shape, np.uint8)
    h = so.lane_new()
    try:
        so.lane_eval(h, xs.ctypes.data, ss.ctypes.data, q.ctypes.data, xs.size)
    finally:
        so.lane_free(h)
    return q.view(np.int8)


_P = ctypes.c_void_p
_U8P = ctypes.POINTER(ctypes.c_uint8)
_U64P = ctypes.POINTER(ctypes.c_uint64)
_I32P = ctypes.POINTER(ctypes.c_int32)
_SIGS: dict[str, tuple[object, list[object]]] = {
    "gm_shape": (None, [_U64P]),
    "gm_new": (_P, [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint]),
    "gm_free": (None, [_P]),
    "gm_reset": (None, [_P]),
    "gm_set_latency": (None, [_P, ctypes.c_uint]),
    "gm_dram_size": (ctypes.c_uint64, [_P]),
    "gm_dram_resize": (None, [_P, ctypes.c_uint64]),
    "gm_dram_write": (None, [_P, ctypes.c_uint64, _U8P, ctypes.c_uint64]),
    "gm_dram_read": (None, [_P, ctypes.c_uint64, _U8P, ctypes.c_uint64]),
    "gm_spad_write": (None, [_P, _U8P, ctypes.c_uint64]),
    "gm_spad_read": (None, [_P, _U8P, ctypes.c_uint64]),
    "gm_acc_write": (None, [_P, _U8P, ctypes.c_uint64]),
    "gm_acc_read": (None, [_P, _U8P, ctypes.c_uint64]),
    "gm_pe_read": (None, [_P, _I32P]),
    "gm_counters": (None, [_P, _U64P]),
    "gm_run": (ctypes.c_int64, [_P, _U64P, ctypes.c_uint64, ctypes.c_uint64]),
}


@cache
def _lib(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    for name, (res, args) in _SIGS.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


def _u8(a: np.ndarray) -> ctypes._Pointer:  # type: ignore[type-arg]
    return a.ctypes.data_as(_U8P)


def command_array(commands: Iterable[Command | tuple[int, int, int]]) -> np.ndarray:
    """Commands as a C-contiguous uint64[n, 3] (funct, rs1, rs2)."""
    rows = [(int(c[0]), int(c[1]) & (2**64 - 1), int(c[2]) & (2**64 - 1)) for c in commands]
    return np.ascontiguousarray(np.array(rows, dtype=np.uint64).reshape(len(rows), 3))


class GemminiRtl:
    """One Verilated ``gemmini_top`` with its simulation DRAM (``dram_size`` bytes).

    The design is reset on construction (PE state zero, unconfigured); the local memories start
    zero. ``run`` executes a command list to completion in C++ and returns the cycles it took.
    ``lib`` runs another build of the design (e.g. a mutant in the tests) instead of
    :func:`library`'s (its coverage build while :func:`rtl_harness.coverage.active`; each run then
    adds its counts to the process's coverage tally).
    """

    def __init__(self, dim: int = DIM, sp_rows: int = SPAD_ROWS, acc_rows: int = ACC_ROWS, dram_size: int = HBM_SIZE,
                 latency: int = DRAM_LATENCY, lib: Path | None = None) -> None:
        self.dim, self.sp_rows, self.acc_rows = dim, sp_rows, acc_rows
        self._path = str(lib if lib is not None else library(dim, sp_rows, acc_rows, coverage.active()))
        self._lib = _lib(self._path)
        shape = np.zeros(5, np.uint64)
        self._lib.gm_shape(shape.ctypes.data_as(_U64P))
        if tuple(int(v) for v in shape[:2]) != (sp_rows, acc_rows) or shape[2] < dim or shape[3] < 4 * dim:
            raise GemminiRtlError(f"library shape {shape.tolist()} does not match DIM={dim}, SP_ROWS={sp_rows}, "
                                  f"ACC_ROWS={acc_rows}")
        self._h = self._lib.gm_new(dim, dram_size, max(1, latency))
        self.latency = max(1, latency)
        self.reset()
        self.set_spad(np.zeros((sp_rows, dim), np.int8))
        self.set_acc(np.zeros((acc_rows, dim), np.int32))

    def close(self) -> None:
        if getattr(self, "_h", None):
            self._lib.gm_free(self._h)
            self._h = None

    def __enter__(self) -> GemminiRtl:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    # --- state ----------------------------------------------------------------------------------
    def reset(self) -> None:
        """Reset the design (PE state, configuration, latch); memories and DRAM keep their bytes."""
        self._lib.gm_reset(self._h)

    def set_latency(self, latency: int) -> None:
        self.latency = max(1, latency)
        self._lib.gm_set_latency(self._h, self.latency)

    @property
    def dram_size(self) -> int:
        return int(self._lib.gm_dram_size(self._h))

    def load_dram(self, data: bytes | np.ndarray, offset: int = 0, resize: bool = False) -> None:
        """Write bytes at ``offset``; with ``resize`` the DRAM becomes exactly ``data`` (zeros elsewhere)."""
        b = np.ascontiguousarray(np.frombuffer(bytes(data), np.uint8) if isinstance(data, bytes | bytearray)
                                 else np.asarray(data).reshape(-1).view(np.uint8))
        if resize:
            self._lib.gm_dram_resize(self._h, offset + b.size)
        if offset < 0 or offset + b.size > self.dram_size:
            raise GemminiRtlError(f"DRAM bytes [{offset}, {offset + b.size}) are outside [0, {self.dram_size})")
        self._lib.gm_dram_write(self._h, offset, _u8(b), b.size)

    def read_dram(self, offset: int = 0, n: int | None = None) -> np.ndarray:
        n = self.dram_size - offset if n is None else n
        if offset < 0 or n < 0 or offset + n > self.dram_size:
            raise GemminiRtlError(f"DRAM bytes [{offset}, {offset + n}) are outside [0, {self.dram_size})")
        out = np.zeros(n, np.uint8)
        self._lib.gm_dram_read(self._h, offset, _u8(out), n)
        return out

    def set_spad(self, spad: np.ndarray) -> None:
        a = np.ascontiguousarray(np.asarray(spad, np.int8))
        if a.shape != (self.sp_rows, self.dim):
            raise GemminiRtlError(f"scratchpad image is {a.shape}, the design has ({self.sp_rows}, {self.dim})")
        self._lib.gm_spad_write(self._h, _u8(a.view(np.uint8)), self.sp_rows)

    def spad(self) -> np.ndarray:
        out = np.zeros((self.sp_rows, self.dim), np.int8)
        self._lib.gm_spad_read(self._h, _u8(out.view(np.uint8)), self.sp_rows)
        return out

    def set_acc(self, acc: np.ndarray) -> None:
        a = np.ascontiguousarray(np.asarray(acc, "<i4"))
        if a.shape != (self.acc_rows, self.dim):
            raise GemminiRtlError(f"accumulator image is {a.shape}, the design has ({self.acc_rows}, {self.dim})")
        self._lib.gm_acc_write(self._h, _u8(a.view(np.uint8)), self.acc_rows)

    def acc(self) -> np.ndarray:
        out = np.zeros((self.acc_rows, self.dim), "<i4")
        self._lib.gm_acc_read(self._h, _u8(out.view(np.uint8)), self.acc_rows)
        return out.astype(np.int32)

    def pe(self) -> np.ndarray:
        out = np.zeros((self.dim, self.dim), np.int32)
        self._lib.gm_pe_read(self._h, out.ctypes.data_as(_I32P))
        return out

    def counters(self) -> dict[str, int]:
        """Cycles since construction and DRAM read / write requests served."""
        c = np.zeros(3, np.uint64)
        self._lib.gm_counters(self._h, c.ctypes.data_as(_U64P))
        return {"cycles": int(c[0]), "dram_reads": int(c[1]), "dram_writes": int(c[2])}

    def state(self) -> RtlState:
        return RtlState(self.read_dram(), self.spad(), self.acc(), self.pe())

    # --- running --------------------------------------------------------------------------------
    def cycle_budget(self, n: int) -> int:
        """A generous bound on the cycles of ``n`` commands (exceeding it means the design hung)."""
        return 1000 + n * (40 * self.dim + 64 * (self.latency + 4) + 200)

    def run(self, commands: Iterable[Command | tuple[int, int, int]], max_cycles: int | None = None) -> int:
        """Execute ``commands`` to completion; return the cycles taken."""
        cmds = command_array(commands)
        n = cmds.shape[0]
        budget = self.cycle_budget(n) if max_cycles is None else max_cycles
        r = int(self._lib.gm_run(self._h, cmds.ctypes.data_as(_U64P), n, budget))
        if coverage.active() and hasattr(self._lib, "gm_cov_take"):
            coverage.collect("gemmini", self._path, self._lib, "gm", self._h)
        if r == -1:
            raise RtlTimeout(f"gemmini_top did not finish {n} command(s) within {budget} cycles")
        if r == -2:
            raise GemminiRtlError("gemmini_top wrote DRAM bytes outside the simulation memory")
        return r


def run_commands(commands: Sequence[Command | tuple[int, int, int]], dram_image: bytes | np.ndarray, dim: int = DIM,
                 sp_rows: int = SPAD_ROWS, acc_rows: int = ACC_ROWS, spad: np.ndarray | None = None,
                 acc: np.ndarray | None = None, latency: int = DRAM_LATENCY) -> tuple[RtlState, int]:
    """Run a command stream on the RTL from ``dram_image`` (the whole DRAM; its size is the
    DRAM's size) and optional scratchpad / accumulator images; return the final state and cycles."""
    img = np.frombuffer(bytes(dram_image), np.uint8) if isinstance(dram_image, bytes | bytearray) \
        else np.asarray(dram_image).reshape(-1).view(np.uint8)
    with GemminiRtl(dim, sp_rows, acc_rows, dram_size=max(1, img.size), latency=latency) as m:
        m.load_dram(img)
        if spad is not None:
            m.set_spad(spad)
        if acc is not None:
            m.set_acc(acc)
        cycles = m.run(commands)
        return m.state(), cycles

