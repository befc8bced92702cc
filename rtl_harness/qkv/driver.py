"""The QKV accelerator's RTL (rtl_harness/qkv/hdl) from Python: the ctypes driver of the
Verilated model.

What belongs here: :class:`QkvRtl` (one Verilated ``qkv_top`` with its C++ shim, which owns the
simulation HBM and serves the HBM port every cycle in C++), the floating-point unit probe, the
cocotb runner, and :func:`run_instructions`, which mirrors :class:`compilers.simulator.Machine`
and which the ``rtl`` backend (:mod:`rtl_harness.runner`) runs programs through. The instruction
words are QKV's target package's (:mod:`compilers.targets.qkv.encode`), the buffer and HBM sizes
its description's (:mod:`compilers.targets.qkv.description`).

Buffers come back in the simulator's representation: ``d1`` bf16[D1_ROWS, ROW], ``d2``
bf16[D2_ROWS, ROW], HBM u8[HBM_SIZE]. Cycles are measured by the RTL (instruction accept to done,
back to back).
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from pathlib import Path

import ml_dtypes
import numpy as np

from compilers.program import Concrete
from compilers.targets.qkv.description import D1_ROWS, D2_ROWS, HBM_SIZE, ROW
from compilers.targets.qkv.encode import encode
from semantics.errors import AccvError

from .. import coverage, verilate

__all__ = ["QkvRtlError", "QkvRtl", "RTL_DIR", "SOURCES", "SHIM", "DEFAULT_PARAMS", "FpuProbe", "build", "model",
           "run_instructions", "run_cocotb"]

HERE = Path(__file__).resolve().parent
RTL_DIR = HERE / "hdl"
SHIM_DIR = HERE / "shim"
SOURCES = tuple(RTL_DIR / f for f in ("qkv_fma.sv", "qkv_fp.sv", "qkv_exp_rom.sv", "qkv_sram.sv", "qkv_buf.sv",
                                      "qkv_dma.sv", "qkv_gemm.sv", "qkv_softmax.sv", "qkv_top.sv"))
SHIM = SHIM_DIR / "qkv_shim.cpp"
COV_SHIM = SHIM_DIR / "qkv_cov_shim.cpp"      # SHIM plus the coverage calls (the coverage build)
DEFAULT_PARAMS: dict[str, int] = {"LANES": 64, "DIV_LANES": 16}
#: extra Verilator arguments of the ctypes model (verilate adds the precompiled-header make flag)
VERILATOR_ARGS: tuple[str, ...] = ()

class QkvRtlError(AccvError):
    """The QKV RTL could not run an instruction stream (rejected instruction, hang, bad input)."""


def build(params: Mapping[str, int] | None = None, cov: bool = False) -> Path:
    """Verilate qkv_top with ``params`` (default :data:`DEFAULT_PARAMS`) and the shim; the .so path
    (cached under build/rtl); ``cov``: the line and toggle coverage build (:mod:`rtl_harness.coverage`).
    Raises :class:`verilate.RtlUnavailable` / :class:`verilate.RtlBuildError`."""
    p = dict(DEFAULT_PARAMS | dict(params or {}))
    if cov:
        return verilate.build_model("qkv_top", SOURCES, p, COV_SHIM, extra_args=[*VERILATOR_ARGS,
                                    *coverage.COVERAGE_ARGS], includes=[SHIM], variant="cov")
    return verilate.build_model("qkv_top", SOURCES, p, SHIM, extra_args=VERILATOR_ARGS)


_U8P = ctypes.POINTER(ctypes.c_uint8)
_U16P = ctypes.POINTER(ctypes.c_uint16)
_U64P = ctypes.POINTER(ctypes.c_uint64)


def _load(lib: Path) -> ctypes.CDLL:
    c = ctypes.CDLL(str(lib))
    vp = ctypes.c_void_p
    c.qkv_new.restype = vp
    c.qkv_new.argtypes = []
    c.qkv_free.argtypes = [vp]
    c.qkv_reset.argtypes = [vp]
    c.qkv_set_timing.argtypes = [vp, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_uint64]
    c.qkv_hbm_write.argtypes = [vp, ctypes.c_uint32, _U8P, ctypes.c_uint32]
    c.qkv_hbm_write.restype = ctypes.c_int
    c.qkv_hbm_read.argtypes = [vp, ctypes.c_uint32, _U8P, ctypes.c_uint32]
    c.qkv_hbm_read.restype = ctypes.c_int
    c.qkv_buf_write.argtypes = [vp, ctypes.c_int, _U16P, ctypes.c_int]
    c.qkv_buf_read.argtypes = [vp, ctypes.c_int, _U16P, ctypes.c_int]
    c.qkv_run.argtypes = [vp, _U64P, ctypes.c_int, ctypes.c_uint64, _U64P, _U64P, ctypes.POINTER(ctypes.c_int)]
    c.qkv_run.restype = ctypes.c_int
    c.qkv_cycle.argtypes = [vp]
    c.qkv_cycle.restype = ctypes.c_uint64
    return c


_BUFS = {"d1": (0, D1_ROWS), "d2": (1, D2_ROWS)}


class QkvRtl:
    """One Verilated qkv_top, driven through the C++ shim (rtl_harness/qkv/shim/qkv_shim.cpp).

    Example::

        rtl = QkvRtl()
        rtl.write_hbm(image)                       # u8[HBM_SIZE]
        cycles = rtl.run([Concrete("load_rm", (("n", 64), ("addr_in", 0), ("addr_out", 0)))])
        d1 = rtl.read_buf("d1")                    # bf16[D1_ROWS, ROW]
    """

    #: a run longer than this many cycles per instruction is a hang
    MAX_CYCLES_PER_INSTR = 200_000

    def __init__(self, params: Mapping[str, int] | None = None, cov: bool | None = None) -> None:
        """``cov``: the coverage build (default: while :func:`rtl_harness.coverage.active`); each
        run of it adds its counts to the process's coverage tally."""
        self.params = dict(DEFAULT_PARAMS | dict(params or {}))
        self.lib_path = build(self.params, coverage.active() if cov is None else cov)
        self._c = _load(self.lib_path)
        self._h = self._c.qkv_new()
        self.last_cycles: list[int] = []

    def close(self) -> None:
        if self._h:
            self._c.qkv_free(self._h)
            self._h = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:   # interpreter shutdown: the library may be gone already
            pass

    def reset(self) -> None:
        """Reset the control logic (HBM and buffer contents stay)."""
        self._c.qkv_reset(self._h)

    def set_timing(self, latency: int = 1, jitter: int = 0, ready_permille: int = 1000, seed: int = 1) -> None:
        """HBM timing the shim serves: read latency (>= 1) plus 0..jitter random cycles, request
        ready with probability ready_permille / 1000."""
        self._c.qkv_set_timing(self._h, latency, jitter, ready_permille, seed)

    @property
    def cycle(self) -> int:
        return int(self._c.qkv_cycle(self._h))

    # -- memories ------------------------------------------------------------------------------

    def write_hbm(self, data: np.ndarray | bytes, addr: int = 0) -> None:
        a = np.ascontiguousarray(np.frombuffer(bytes(data), np.uint8) if isinstance(data, bytes) else
                                 np.asarray(data).view(np.uint8).reshape(-1))
        if self._c.qkv_hbm_write(self._h, addr, a.ctypes.data_as(_U8P), a.size) != 0:
            raise QkvRtlError(f"HBM bytes [{addr}, {addr + a.size}) lie outside HBM of {HBM_SIZE} bytes")

    def read_hbm(self, addr: int = 0, n: int = HBM_SIZE) -> np.ndarray:
        out = np.empty(n, np.uint8)
        if self._c.qkv_hbm_read(self._h, addr, out.ctypes.data_as(_U8P), n) != 0:
            raise QkvRtlError(f"HBM bytes [{addr}, {addr + n}) lie outside HBM of {HBM_SIZE} bytes")
        return out

    def write_buf(self, name: str, data: np.ndarray) -> None:
        """Set buffer ``name`` (d1/d2) from a bf16 (or uint16 bit pattern) array of its shape."""
        idx, rows = _BUFS[name]
        a = np.asarray(data)
        if a.shape != (rows, ROW) or a.dtype.itemsize != 2:
            raise QkvRtlError(f"{name} is bf16[{rows}, {ROW}], got {a.dtype}{list(a.shape)}")
        bits = np.ascontiguousarray(a.view(np.uint16))
        self._c.qkv_buf_write(self._h, idx, bits.ctypes.data_as(_U16P), rows)

    def read_buf(self, name: str) -> np.ndarray:
        """Buffer ``name`` as bf16[rows, 64]."""
        idx, rows = _BUFS[name]
        out = np.empty((rows, ROW), np.uint16)
        self._c.qkv_buf_read(self._h, idx, out.ctypes.data_as(_U16P), rows)
        return out.view(ml_dtypes.bfloat16)

    # -- execution -----------------------------------------------------------------------------

    def run_words(self, words: Sequence[int], what: Sequence[str] | None = None) -> int:
        """Run encoded instruction words back to back; returns the total cycles (first accept to
        last done) and keeps each instruction's cycles in :attr:`last_cycles`."""
        n = len(words)
        self.last_cycles = []
        if n == 0:
            return 0
        w = np.asarray(words, dtype=np.uint64)
        per = np.zeros(n, np.uint64)
        total = ctypes.c_uint64(0)
        failed = ctypes.c_int(-1)
        status = self._c.qkv_run(self._h, w.ctypes.data_as(_U64P), n, self.MAX_CYCLES_PER_INSTR * n,
                                 per.ctypes.data_as(_U64P), ctypes.byref(total), ctypes.byref(failed))
        if coverage.active() and hasattr(self._c, "qkv_cov_take"):
            coverage.collect("qkv", self.lib_path, self._c, "qkv", self._h)
        self.last_cycles = [int(x) for x in per]
        if status != 0:
            i = failed.value
            name = what[i] if what is not None and 0 <= i < len(what) else f"word 0x{int(w[i]) if 0 <= i < n else 0:x}"
            if status == 1:
                raise QkvRtlError(f"instruction {i} '{name}' was rejected by the RTL (outside the ISA's bounds)")
            self.reset()
            raise QkvRtlError(f"instruction {i} '{name}' did not finish within {self.MAX_CYCLES_PER_INSTR * n} cycles")
        return int(total.value)

    def run(self, instrs: Sequence[Concrete]) -> int:
        """Encode and run ``instrs``; total cycles (see :meth:`run_words`)."""
        return self.run_words([encode(i) for i in instrs], [str(i) for i in instrs])


PROBE_SOURCES = tuple(RTL_DIR / f for f in ("qkv_fma.sv", "qkv_fp.sv", "qkv_exp_rom.sv", "qkv_fpu_probe.sv"))
PROBE_SHIM = SHIM_DIR / "qkv_fpu_probe_shim.cpp"


class FpuProbe:
    """The datapath's floating-point units alone (qkv_fpu_probe.sv), evaluated on operand arrays:
    the gemm lanes' FMA, the softmax row-sum add, the divider and the exp."""

    def __init__(self) -> None:
        lib = verilate.build_model("qkv_fpu_probe", PROBE_SOURCES, {}, PROBE_SHIM, extra_args=VERILATOR_ARGS)
        c = ctypes.CDLL(str(lib))
        vp = ctypes.c_void_p
        u32p = ctypes.POINTER(ctypes.c_uint32)
        c.probe_new.restype = vp
        c.probe_new.argtypes = []
        c.probe_free.argtypes = [vp]
        c.probe_eval.argtypes = [vp, _U16P, _U16P, u32p, u32p, _U16P, _U16P, _U16P, ctypes.c_uint64]
        self._c = c
        self._h = c.probe_new()

    def eval(self, a: np.ndarray, b: np.ndarray, c: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """For bit patterns a, b (bf16 as uint16) and c (f32 as uint32) of one length: the bits of
        fma(a, b, c) (f32), a + b, a / b and exp(a) (bf16)."""
        a = np.ascontiguousarray(a, np.uint16)
        b = np.ascontiguousarray(b, np.uint16)
        c = np.ascontiguousarray(c, np.uint32)
        n = a.size
        if b.size != n or c.size != n:
            raise QkvRtlError("probe operands must have one length")
        fma = np.empty(n, np.uint32)
        add, div, ex = (np.empty(n, np.uint16) for _ in range(3))
        u32p = ctypes.POINTER(ctypes.c_uint32)
        self._c.probe_eval(self._h, a.ctypes.data_as(_U16P), b.ctypes.data_as(_U16P), c.ctypes.data_as(u32p),
                           fma.ctypes.data_as(u32p), add.ctypes.data_as(_U16P), div.ctypes.data_as(_U16P),
                           ex.ctypes.data_as(_U16P), n)
        return fma, add, div, ex

    def close(self) -> None:
        if self._h:
            self._c.probe_free(self._h)
            self._h = None


TB_DIR = HERE          # the cocotb testbench, testbench.py


def run_cocotb(env: Mapping[str, str], params: Mapping[str, int] | None = None, testcase: str | None = None) -> Path:
    """Run the cocotb testbench rtl_harness/qkv/testbench.py (its ``QKV_TB_*`` settings in ``env``) on
    qkv_top with ``params``; returns the results XML, raises when a test fails."""
    return verilate.cocotb_run("qkv_top", SOURCES, dict(DEFAULT_PARAMS | dict(params or {})), "testbench", TB_DIR,
                               testcase=testcase, extra_env=dict(env))


_MODELS: dict[tuple[tuple[tuple[str, int], ...], bool], QkvRtl] = {}


def model(params: Mapping[str, int] | None = None) -> QkvRtl:
    """A process-wide :class:`QkvRtl` for ``params`` (built and loaded once; the coverage build
    while :func:`rtl_harness.coverage.active`)."""
    p = dict(DEFAULT_PARAMS | dict(params or {}))
    key = (tuple(sorted(p.items())), coverage.active())
    if key not in _MODELS:
        _MODELS[key] = QkvRtl(p, key[1])
    return _MODELS[key]


def _bf16_buf(x: np.ndarray | None, rows: int, name: str) -> np.ndarray:
    if x is None:
        return np.zeros((rows, ROW), ml_dtypes.bfloat16)
    a = np.asarray(x)
    if a.shape != (rows, ROW) or a.dtype.itemsize != 2:
        raise QkvRtlError(f"{name} is bf16[{rows}, {ROW}], got {a.dtype}{list(a.shape)}")
    return a.view(ml_dtypes.bfloat16)


def run_instructions(instrs: Sequence[Concrete], hbm_image: np.ndarray, d1: np.ndarray | None = None,
                     d2: np.ndarray | None = None, params: Mapping[str, int] | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Run ``instrs`` on the RTL from HBM bytes ``hbm_image`` (u8, at most HBM_SIZE; the rest is
    zero) and buffers ``d1``/``d2`` (default zero). Returns (final HBM u8[HBM_SIZE], d1
    bf16[D1_ROWS, ROW], d2 bf16[D2_ROWS, ROW], cycles). Raises :class:`QkvRtlError` when the RTL rejects an instruction."""
    rtl = model(params)
    img = np.zeros(HBM_SIZE, np.uint8)
    src = np.asarray(hbm_image).view(np.uint8).reshape(-1)
    if src.size > HBM_SIZE:
        raise QkvRtlError(f"HBM image of {src.size} bytes is larger than HBM ({HBM_SIZE} bytes)")
    img[:src.size] = src
    rtl.reset()
    rtl.write_hbm(img)
    rtl.write_buf("d1", _bf16_buf(d1, D1_ROWS, "d1"))
    rtl.write_buf("d2", _bf16_buf(d2, D2_ROWS, "d2"))
    cycles = rtl.run(instrs)
    return rtl.read_hbm(), rtl.read_buf("d1"), rtl.read_buf("d2"), cycles

