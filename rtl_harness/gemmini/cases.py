"""Random valid Gemmini command cases, shared by the ctypes tests, the cocotb testbench and the bench.

What belongs here: the generator of cases (a random starting state — scratchpad, accumulator and
DRAM contents — plus a command list: random configurations, a warm-up that leaves the array in a
random state reached by commands, then the command kind under test with the commands it needs),
the reference result (``compilers.targets.gemmini.stream.StreamMachine`` run on the same state) and the
comparison of a whole final state that names the first difference.

Every generated command is valid for StreamMachine (a StreamError while computing the expected
state is a bug of this generator and is raised, never skipped). Domain choices, each also
documented in docs/rtl.md:

- config_ld's DRAM stride stays below 2^63 (StreamMachine indexes DRAM with int64 numpy
  arithmetic; a larger stride raises OverflowError even for a one-row load).
- sys_shift is drawn from [0, 64] under OS (StreamMachine's rounding shift overflows Python-int to
  int64 conversion beyond 64; every shift >= 20 gives 0 on a 20-bit value anyway); under WS,
  where it is ignored, any 32-bit value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from compilers.targets.gemmini import stream as gs
from compilers.targets.gemmini.stream import Command, StreamMachine
from semantics.errors import AccvError

__all__ = ["concurrent_program", "KINDS", "Case", "CaseError", "make_case", "random_program", "expected", "first_difference", "run_case",
           "random_scale", "SCALE_SPECIAL", "TIE_SCALES", "scale_edge_vectors"]

KINDS = ("CONFIG_EX", "CONFIG_LD", "CONFIG_ST", "MVIN", "MVIN2", "MVIN3", "MVOUT", "PRELOAD",
         "COMPUTE_PRELOADED", "COMPUTE_ACCUMULATED", "FLUSH")
MVIN_FUNCT = {0: gs.MVIN, 1: gs.MVIN2, 2: gs.MVIN3}
M64 = (1 << 64) - 1


class CaseError(AccvError):
    """A generated case that StreamMachine rejects (a generator bug; names the case)."""


def _f32bits(v: float) -> int:
    return int(np.array(v, np.float32).view(np.uint32))


# fp32 scales that exercise the edges of the scale datapath: signed zeros, infinities, NaNs (quiet,
# signalling, negative), subnormals, the smallest and largest normals, huge and tiny values.
SCALE_SPECIAL = (0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF,
                 0x00000001, 0x007FFFFF, 0x80000001, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,
                 _f32bits(1e30), _f32bits(1e-30), _f32bits(-1e-30), _f32bits(3e38), _f32bits(2.0 ** -126 * 1.5))
SCALE_COMMON = tuple(_f32bits(v) for v in (1.0, 1.0, 0.5, 1.5, 0.25, 2.0, -1.0, -0.5, 1 / 3, 0.75, 2.0 ** -3,
                                           2.0 ** -7, 2.0 ** -20, 1e-3, 4.0, 127.5, 3.0, -2.5, 1e-6, 0.1))


def _f32_exact(v: Fraction) -> int | None:
    """The fp32 bits of ``v`` if it is a finite nonzero fp32 value, else None."""
    f = np.float32(float(v))
    if f == 0 or not np.isfinite(f) or Fraction(float(f)) != v:
        return None
    return int(np.array(f).view(np.uint32))


def _tie_scales() -> tuple[tuple[int, int], ...]:
    """(x, scale bits) such that the exact product x * scale lies exactly halfway between two
    adjacent fp32 values next to k + 0.5 (k = 0..127): the fp32 multiply's tie-to-even decides on
    which side of the .5 the product lands, so the int8 result depends on it."""
    out = []
    for x in (3, 5, 7, 9, 11, 13, 15, 25, 27, 49, 51, 99, 101, 125, 127):
        for k in range(128):
            for d in (1, -1):
                t = Fraction(2 * k + 1, 2)
                e = math.floor(math.log2(t))
                t += d * Fraction(2) ** (e - 24)
                bits = _f32_exact(t / x)
                if bits is not None:
                    out.append((x, bits))
    return tuple(out)


TIE_SCALES = _tie_scales()


def scale_edge_vectors(rng: np.random.Generator, n_int32: int = 2000) -> tuple[np.ndarray, np.ndarray]:
    """(int32 x, fp32 scale bits) pairs at the rounding edges of the scale datapath: the fmul ties
    of TIE_SCALES with every sign combination, and int32 values above 2^24 (their conversion to
    fp32 rounds, ties included) with a scale that puts the two neighbouring fp32 values on either
    side of k + 0.5."""
    xs, ss = [], []
    for x, bits in TIE_SCALES:
        for sx, sb in ((1, 0), (-1, 0), (1, 1 << 31), (-1, 1 << 31)):
            xs.append(sx * x)
            ss.append(bits | sb)
    for _ in range(n_int32):
        top = int(rng.integers(25, 32))
        x = int(rng.integers(1 << (top - 1), 1 << top))
        if rng.random() < 0.5:   # an exact tie in the int32 -> fp32 conversion
            drop = top - 24
            x = (x >> drop << drop) | (1 << (drop - 1))
        lo = int(np.float32(x)) if int(np.float32(x)) <= x else x
        hi = lo + 2 ** (top - 24)
        k = int(rng.integers(0, 128))
        bits = int(np.array(np.float32((k + 0.5) / ((lo + hi) / 2))).view(np.uint32))
        sign = -1 if rng.random() < 0.5 else 1
        xs.append(sign * min(x, 2**31 - 1))
        ss.append(bits | (1 << 31 if rng.random() < 0.25 else 0))
    return np.array(xs, np.int64).astype(np.int32), np.array(ss, np.uint64)


def random_scale(rng: np.random.Generator) -> int:
    """fp32 bits: common scales, the special values above, fp32-multiply ties (TIE_SCALES),
    random bit patterns, log-uniform values and dyadic rationals (rounding ties)."""
    r = rng.random()
    if r < 0.1:
        return TIE_SCALES[int(rng.integers(0, len(TIE_SCALES)))][1]
    if r < 0.3:
        return int(rng.choice(SCALE_COMMON))
    if r < 0.5:
        return int(rng.choice(SCALE_SPECIAL))
    if r < 0.65:
        return int(rng.integers(0, 1 << 32))
    if r < 0.85:
        v = float(2.0 ** rng.uniform(-34, 12)) * (1 if rng.random() < 0.7 else -1)
        return _f32bits(v)
    v = int(rng.integers(1, 512)) / float(2 ** int(rng.integers(0, 12))) * (1 if rng.random() < 0.8 else -1)
    return _f32bits(v)


@dataclass
class Case:
    """One case: sizes, starting memories, the command list, the testbench's DRAM latency."""

    kind: str
    seed: int
    dim: int
    sp_rows: int
    acc_rows: int
    dram: np.ndarray
    spad: np.ndarray
    acc: np.ndarray
    commands: list[Command] = field(default_factory=list)
    latency: int = 8

    def describe(self, limit: int = 12) -> str:
        lines = [f"case {self.kind} seed={self.seed} dim={self.dim} latency={self.latency}"]
        shown = self.commands[-limit:]
        if len(self.commands) > limit:
            lines.append(f"  ... {len(self.commands) - limit} earlier command(s)")
        lines += [f"  {gs.format_command(c)}" for c in shown]
        return "\n".join(lines)


def _memories(rng: np.random.Generator, dim: int, sp_rows: int, acc_rows: int,
              dram_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    def int8s(shape: tuple[int, ...], pattern: str) -> np.ndarray:
        if pattern == "small":
            return rng.integers(-3, 4, shape).astype(np.int8)
        if pattern == "extreme":
            return np.where(rng.random(shape) < 0.5, -128, 127).astype(np.int8)
        return rng.integers(-128, 128, shape).astype(np.int8)

    pats = ("uniform", "small", "extreme", "mixed")
    sp = rng.choice(pats)
    if sp == "mixed":   # each row from one of the three patterns
        which = rng.integers(0, 3, (sp_rows, 1))
        spad = np.select([which == 0, which == 1], [int8s((sp_rows, dim), "uniform"), int8s((sp_rows, dim), "small")],
                         int8s((sp_rows, dim), "extreme")).astype(np.int8)
    else:
        spad = int8s((sp_rows, dim), sp)
    ap = rng.choice(pats)
    if ap == "small":
        acc = rng.integers(-300, 301, (acc_rows, dim)).astype(np.int32)
    elif ap == "extreme":
        acc = rng.choice(np.array([-2**31, 2**31 - 1, -2**19, 2**19 - 1, 0, -1, 127, -128], np.int64),
                         (acc_rows, dim)).astype(np.int32)
    elif ap == "mixed":
        acc = np.where(rng.random((acc_rows, dim)) < 0.5, rng.integers(-2**31, 2**31, (acc_rows, dim)),
                       rng.integers(-1000, 1001, (acc_rows, dim))).astype(np.int32)
    else:
        acc = rng.integers(-2**31, 2**31, (acc_rows, dim)).astype(np.int32)
    dp = rng.choice(pats)
    if dp == "mixed":
        dram = np.where(rng.random(dram_size) < 0.5, rng.integers(0, 256, dram_size),
                        rng.integers(-3, 4, dram_size) & 0xFF).astype(np.uint8)
    else:
        dram = int8s((dram_size,), dp).view(np.uint8)
    return dram, spad, acc


class _Gen:
    """Emits valid commands, tracking the configuration StreamMachine will hold."""

    def __init__(self, rng: np.random.Generator, dim: int, sp_rows: int, acc_rows: int, dram_size: int) -> None:
        self.rng, self.dim, self.sp_rows, self.acc_rows, self.dram_size = rng, dim, sp_rows, acc_rows, dram_size
        self.cmds: list[Command] = []
        self.ex: dict[str, int] | None = None
        self.ld: list[dict[str, int] | None] = [None, None, None]
        self.st: dict[str, int] | None = None
        self.latched = False

    # --- small draws ------------------------------------------------------------------------------
    def _int(self, lo: int, hi: int) -> int:
        """Uniform in [lo, hi] (any Python ints, up to 64 bits)."""
        if hi < 1 << 62:
            return int(self.rng.integers(lo, hi + 1))
        return lo + int.from_bytes(self.rng.bytes(8), "little") % (hi - lo + 1)

    def _p(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def _pick(self, options: Sequence[int]) -> int:
        return int(options[int(self.rng.integers(0, len(options)))])

    def _row0(self, size: int, span: int) -> int:
        """A first row so that rows [row0, row0 + span) fit in ``size``; mostly in a low window
        (so operands and results overlap), sometimes anywhere."""
        hi = size - span
        assert hi >= 0, (size, span)
        if self._p(0.8):
            return self._int(0, min(hi, 6 * self.dim))
        return self._int(0, hi)

    def _flags(self) -> int:
        """Bits 30/29 of a scratchpad address (ignored there), random."""
        return (gs.ACCUMULATE_BIT if self._p(0.2) else 0) | (gs.RAW_BIT if self._p(0.2) else 0)

    def _rows_for_stride(self, stride: int, size: int) -> int:
        """Rows 1..dim such that (rows - 1) * stride + 1 <= size."""
        top = self.dim if stride == 0 else min(self.dim, 1 + (size - 1) // stride)
        return self._int(1, max(1, top))

    # --- configuration ------------------------------------------------------------------------------
    def config_ex(self, dataflow: int | None = None) -> None:
        df = self._pick([gs.OS, gs.WS]) if dataflow is None else dataflow
        combos = [(0, 0), (1, 0), (1, 1)] if df == gs.OS else [(0, 0), (1, 0), (0, 1)]
        at, bt = combos[int(self.rng.integers(0, 3))]
        a_stride = self._pick([1, 1, 1, 0, 2, 3, self._int(0, 2 * self.dim), self._int(0, 0xFFFF)])
        c_stride = self._pick([1, 1, 1, 0, 2, 3, self._int(0, 2 * self.dim), self._int(0, 0xFFFF)])
        if df == gs.OS:
            shift = self._int(0, 24) if self._p(0.85) else self._int(25, 64)
        else:
            shift = self._int(0, 24) if self._p(0.5) else self._int(0, (1 << 32) - 1)
        act = self._pick([0, 1])
        self.ex = {"dataflow": df, "act": act, "a_transpose": at, "b_transpose": bt, "a_stride": a_stride,
                   "sys_shift": shift, "c_stride": c_stride}
        self.cmds.append(gs.config_ex(df, act, at, bt, a_stride, shift, c_stride))

    def config_ld(self, slot: int) -> None:
        d = self.dim
        stride = self._pick([d, 4 * d, 64, 0, 1, self._int(0, 160), self._int(0, self.dram_size // d)])
        if self._p(0.05):
            # only rows = 1 loads are possible then; StreamMachine's index arithmetic is int64
            stride = self._int(self.dram_size, (1 << 63) - 1)
        bs = self._pick([d, d, 0, 1, self._int(0, 2 * d), self._int(0, 4 * d)])
        self.ld[slot] = {"shrunk": self._pick([0, 1]), "block_stride": bs, "scale": random_scale(self.rng),
                         "stride": stride}
        c = self.ld[slot]
        self.cmds.append(gs.config_ld(slot, c["stride"], c["scale"], c["shrunk"], c["block_stride"]))

    def config_st(self) -> None:
        stride = self._pick([self.dim, 4 * self.dim, 0, 1, self._int(0, 200), self._int(0, self.dram_size // self.dim)])
        if self._p(0.05):
            stride = self._int(self.dram_size, (1 << 32) - 1)   # only rows = 1 stores are possible then
        self.st = {"stride": stride, "act": self._pick([0, 1]), "scale": random_scale(self.rng)}
        self.cmds.append(gs.config_st(self.st["stride"], self.st["act"], self.st["scale"]))

    def configure_all(self) -> None:
        self.config_ex()
        for s in (0, 1, 2):
            self.config_ld(s)
        self.config_st()

    # --- data movement ------------------------------------------------------------------------------
    def mvin(self, slot: int) -> None:
        cfg = self.ld[slot]
        assert cfg is not None
        d = self.dim
        to_acc = self._p(0.45)
        eb = 1 if (not to_acc or cfg["shrunk"]) else 4
        size = self.acc_rows if to_acc else self.sp_rows
        maxblocks = max(1, gs.MAX_BYTES // (d * eb))
        stride, bs = cfg["stride"], cfg["block_stride"]
        zero = self._p(0.1)
        rows = self._int(1, d)
        for _ in range(100):
            nb = self._int(1, maxblocks)
            cols = self._int((nb - 1) * d + 1, nb * d)
            nb = -(-cols // d)
            rows = self._int(1, d)
            if not zero and stride > 0:
                rows = min(rows, max(1, 1 + (self.dram_size - 1 - cols * eb) // stride))
            if (nb - 1) * bs + rows <= size and (zero or (rows - 1) * stride + cols * eb < self.dram_size):
                break
        else:
            nb, cols, rows = 1, self._int(1, d), 1
        span = (nb - 1) * bs + rows
        row0 = self._row0(size, span)
        if to_acc:
            addr = gs.ACC_BIT | (gs.ACCUMULATE_BIT if self._p(0.5) else 0) | (gs.RAW_BIT if self._p(0.2) else 0) | row0
        else:
            addr = self._flags() | row0
        if zero:
            dram = 0
        else:
            n = (rows - 1) * stride + cols * eb
            dram = self._int(1, self.dram_size - n)
        self.cmds.append(Command(MVIN_FUNCT[slot], dram, gs.operand(rows, cols, addr)))

    def mvout(self) -> None:
        st = self.st
        assert st is not None
        d = self.dim
        src = self._pick([0, 1, 2])   # spad, acc scaled, acc raw
        eb = 4 if src == 2 else 1
        size = self.sp_rows if src == 0 else self.acc_rows
        cols = self._int(1, d)
        stride = st["stride"]
        rows = self._int(1, d)
        if stride > 0:
            rows = min(rows, max(1, 1 + (self.dram_size - cols * eb) // stride))
        row0 = self._row0(size, rows)
        if src == 0:
            addr = self._flags() | row0
        else:
            addr = gs.ACC_BIT | (gs.RAW_BIT if src == 2 else 0) | (gs.ACCUMULATE_BIT if self._p(0.3) else 0) | row0
        dram = self._int(0, self.dram_size - ((rows - 1) * stride + cols * eb))
        self.cmds.append(Command(gs.MVOUT, dram, gs.operand(rows, cols, addr)))

    # --- execution ----------------------------------------------------------------------------------
    def _operand(self, stride: int, p_garbage: float) -> int:
        """A scratchpad operand word rows<<48 | cols<<32 | addr (or GARBAGE with junk rows/cols)."""
        d = self.dim
        if self._p(p_garbage):
            return gs.operand(self._int(0, 0xFFFF) if self._p(0.3) else d, self._int(0, 0xFFFF) if self._p(0.3) else d,
                              gs.GARBAGE_ADDR)
        # a transposed operand reads cols rows (rows x cols bound it as the array sees it), so
        # both must fit the stride; non-square shapes either way
        rows = self._rows_for_stride(stride, self.sp_rows) if stride else self._int(1, d)
        cols = self._rows_for_stride(stride, self.sp_rows) if stride else self._int(1, d)
        if self._p(0.4):
            rows = d if stride == 0 or (d - 1) * stride < self.sp_rows else rows
            cols = d if stride == 0 or (d - 1) * stride < self.sp_rows else cols
        span = (max(rows, cols) - 1) * stride + 1
        return gs.operand(rows, cols, self._flags() | self._row0(self.sp_rows, span))

    def preload(self) -> None:
        assert self.ex is not None
        d = self.dim
        bd = self._operand(1, 0.2)
        cs = self.ex["c_stride"]
        kind = self._pick([0, 1, 1, 2, 2])   # garbage, acc, spad
        if kind == 0 and self._p(0.75):
            kind = self._pick([1, 2])
        if kind == 0:
            c = gs.operand(self._int(0, 0xFFFF) if self._p(0.3) else d, d, gs.GARBAGE_ADDR)
        else:
            size = self.acc_rows if kind == 1 else self.sp_rows
            accumulate = kind == 1 and self._p(0.5)
            rows = self._rows_for_stride(cs, size) if cs else self._int(1, d)
            cols = self._int(1, d)
            if self._p(0.4) and (cs == 0 or (d - 1) * cs < size):
                rows, cols = d, d
            row0 = self._row0(size, (rows - 1) * cs + 1)
            if kind == 1:
                addr = gs.ACC_BIT | (gs.ACCUMULATE_BIT if accumulate else 0) | (gs.RAW_BIT if self._p(0.2) else 0) | row0
            else:
                addr = self._flags() | row0
            c = gs.operand(rows, cols, addr)
        self.cmds.append(Command(gs.PRELOAD, bd, c))
        self.latched = True

    def compute(self, preloaded: bool) -> None:
        assert self.ex is not None and self.latched
        a = self._operand(self.ex["a_stride"], 0.1)
        b = self._operand(1, 0.2)
        self.cmds.append(Command(gs.COMPUTE_PRELOADED if preloaded else gs.COMPUTE_ACCUMULATED, a, b))
        self.latched = False

    def warmup(self) -> None:
        """Reach a random array state by commands: a preload/compute chain (long OS chains wrap the
        20-bit partial sums), sometimes switching the dataflow in between."""
        if not self._p(0.75):
            return
        self.config_ex()
        self.preload()
        self.compute(True)
        for _ in range(self._int(0, 10)):
            if self._p(0.15):
                self.config_ex()
            self.preload()
            self.compute(self._p(0.2))

    def flush(self) -> None:
        self.cmds.append(Command(gs.FLUSH, self._int(0, M64) if self._p(0.5) else self._pick([0, 1]),
                                 self._int(0, M64) if self._p(0.3) else 0))

    # --- one command kind with what it needs ----------------------------------------------------------
    def kind(self, kind: str) -> None:
        if kind == "CONFIG_EX":
            self.config_ex()
            self.preload()
            self.compute(self._p(0.6))
        elif kind == "CONFIG_LD":
            slot = self._int(0, 2)
            self.config_ld(slot)
            self.mvin(slot)
        elif kind == "CONFIG_ST":
            self.config_st()
            self.mvout()
        elif kind in ("MVIN", "MVIN2", "MVIN3"):
            self.mvin({"MVIN": 0, "MVIN2": 1, "MVIN3": 2}[kind])
        elif kind == "MVOUT":
            self.mvout()
        elif kind == "PRELOAD":
            self.preload()
            if self._p(0.2):
                self.flush()
            self.compute(self._p(0.5))
        elif kind in ("COMPUTE_PRELOADED", "COMPUTE_ACCUMULATED"):
            if self._p(0.3):
                self.config_ex()
            self.preload()
            self.compute(kind == "COMPUTE_PRELOADED")
        elif kind == "FLUSH":
            self.flush()
            other = self._pick([0, 1, 2])
            if other == 0:
                self.mvin(self._int(0, 2))
            elif other == 1:
                self.mvout()
            else:
                self.preload()
                self.flush()
                self.compute(self._p(0.5))
            self.flush()
        else:
            raise CaseError(f"unknown command kind '{kind}' (kinds: {', '.join(KINDS)})")


def random_program(seed: int, dim: int, kinds: Sequence[str], sp_rows: int, acc_rows: int, dram_size: int,
                   warmup: bool = True, label: str = "PROGRAM") -> Case:
    """A case whose commands cover ``kinds`` in order, after random configuration and warm-up."""
    rng = np.random.default_rng([seed, dim, len(kinds)])
    dram, spad, acc = _memories(rng, dim, sp_rows, acc_rows, dram_size)
    g = _Gen(rng, dim, sp_rows, acc_rows, dram_size)
    g.configure_all()
    if warmup:
        g.warmup()
    for k in kinds:
        if g.rng.random() < 0.1:
            g.configure_all()
        g.kind(k)
    latency = int(rng.choice([1, 2, 3, 8, 8, 13]))
    return Case(label, seed, dim, sp_rows, acc_rows, dram, spad, acc, g.cmds, latency)


# command kinds that occupy a unit (loads twice as often: back-to-back loads overlap in the load unit)
_BUSY = ("MVIN", "MVIN", "MVIN2", "MVIN3", "MVOUT", "MVOUT", "COMPUTE_PRELOADED", "COMPUTE_ACCUMULATED")


def concurrent_program(seed: int, dim: int, sp_rows: int, acc_rows: int, dram_size: int, n: int = 16) -> Case:
    """A program of ``n`` loads, stores and computes in random order, so the units run at once and
    the command queue's dependency checks decide (zero loads, overlapping rows and accumulations
    included, as the single-kind cases draw them)."""
    rng = np.random.default_rng([seed, dim, 7])
    kinds = [_BUSY[int(i)] for i in rng.integers(0, len(_BUSY), n)]
    return random_program(seed, dim, kinds, sp_rows, acc_rows, dram_size, label="CONCURRENT")


def make_case(kind: str, dim: int, seed: int, sp_rows: int, acc_rows: int, dram_size: int) -> Case:
    """One random case of command kind ``kind`` (one of KINDS)."""
    if kind not in KINDS:
        raise CaseError(f"unknown command kind '{kind}' (kinds: {', '.join(KINDS)})")
    c = random_program(seed * 131 + KINDS.index(kind), dim, [kind], sp_rows, acc_rows, dram_size, label=kind)
    c.seed = seed
    return c


def expected(case: Case) -> StreamMachine:
    """StreamMachine run on the case's starting state (raises CaseError if it rejects a command)."""
    m = StreamMachine(case.dim, case.dram.size, case.sp_rows, case.acc_rows)
    m.dram[:] = case.dram
    m.spad[:] = case.spad
    m.acc[:] = case.acc
    try:
        with np.errstate(invalid="ignore"):   # NaN scales: numpy warns on the float -> int8 cast
            m.run(case.commands)
    except gs.StreamError as e:
        raise CaseError(f"generated an invalid command: {e}", where=f"{case.kind} seed {case.seed}") from e
    return m


def first_difference(model: StreamMachine, dram: np.ndarray, spad: np.ndarray, acc: np.ndarray,
                     pe: np.ndarray | None = None) -> str | None:
    """None when the RTL state equals the model's, else the first difference with its index."""
    pairs = [("dram", model.dram, dram), ("spad", model.spad, spad), ("acc", model.acc, acc)]
    if pe is not None:
        pairs.append(("pe", model.pe, pe))
    for name, want, got in pairs:
        got = np.asarray(got)
        if want.shape != got.shape:
            return f"{name}: shape {got.shape} != model {want.shape}"
        bad = want != got
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            where = ", ".join(map(str, idx))
            return f"{name}[{where}]: rtl {got[idx]} != model {want[idx]} ({int(bad.sum())} element(s) differ)"
    return None


def run_case(rtl: object, case: Case) -> tuple[StreamMachine, str | None, int]:
    """Run ``case`` on a :class:`rtl_harness.gemmini.GemminiRtl` of the case's sizes (reset first)
    and on StreamMachine; return the model, the first difference (None if equal) and RTL cycles."""
    from rtl_harness.gemmini.driver import GemminiRtl

    assert isinstance(rtl, GemminiRtl)
    model = expected(case)
    rtl.reset()
    rtl.set_latency(case.latency)
    rtl.load_dram(case.dram, resize=True)
    rtl.set_spad(case.spad)
    rtl.set_acc(case.acc)
    cycles = rtl.run(case.commands)
    diff = first_difference(model, rtl.read_dram(), rtl.spad(), rtl.acc(), rtl.pe())
    return model, diff, cycles
