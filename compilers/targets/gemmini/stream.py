"""Gemmini's machine-level command stream: command words, decoder, simulator, encoder.

This is the second, independent model of Gemmini (the first is the compiler-level description in
:mod:`compilers.targets.gemmini.description`). It is written directly from ../shared/reference/gemmini.md and
never calls the description or the HLO interpreter:

- :class:`Command` is one RoCC command: ``funct`` and the 64-bit ``rs1``/``rs2`` words, exactly
  as gemmini.md lays them out (CONFIG ex / ld (three slots) / st, MVIN, MVIN2, MVIN3, MVOUT,
  PRELOAD, COMPUTE_PRELOADED, COMPUTE_ACCUMULATED, FLUSH; local addresses with bit 31 =
  accumulator, bit 30 = accumulate, bit 29 = raw read; GARBAGE_ADDR = 0xFFFFFFFF).
- :func:`decode` / :func:`format_command` turn words back into fields and text.
- :class:`StreamMachine` executes commands over DRAM bytes, the scratchpad, the accumulator,
  the array state and the config state (numpy, written from the gemmini.md rules).
- :func:`encode` turns a compiler-level :class:`~compilers.program.Program` into commands,
  emitting a CONFIG command only when a field the next command depends on changes.

The ``stream`` backend (:mod:`compilers.targets.gemmini.backend`) runs a program's encoding on
:class:`StreamMachine`. Sizes (DIM, rows, DRAM bytes) default to the description's.

Modelling choices of the stream model (see also the target's module docstring): the machine
starts unconfigured (a command that needs a config slot that was never written is an error);
every COMPUTE consumes the latch of the PRELOAD just before it (a COMPUTE without one is an
error); A, B and D are read from the scratchpad only; the array computes in 20 bits (results
wrapped, as the RTL's SInt(20)); the mvin scale applies to int8 loads (scratchpad and shrunk
accumulator loads), not to int32 accumulator loads; pooling, norm, the loop FSMs and activations
other than none/ReLU are rejected; FLUSH does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from semantics.errors import AccvError
from semantics.layout import bflat, byte_size, unbflat

from ...program import Concrete, Program, placed_inputs
from .description import ACC_ROWS, ARRAY_BITS, DIM, HBM_SIZE, SPAD_ROWS, build

__all__ = ["Command", "StreamError", "EncodeError", "StreamMachine", "decode", "format_command", "encode",
           "GARBAGE_ADDR", "CONFIG", "MVIN", "MVIN2", "MVIN3", "MVOUT", "PRELOAD",
           "COMPUTE_PRELOADED", "COMPUTE_ACCUMULATED", "FLUSH"]

CONFIG, MVIN2, MVIN, MVOUT, COMPUTE_PRELOADED, COMPUTE_ACCUMULATED, PRELOAD, FLUSH, MVIN3 = 0, 1, 2, 3, 4, 5, 6, 7, 14
NAMES = {CONFIG: "CONFIG", MVIN2: "MVIN2", MVIN: "MVIN", MVOUT: "MVOUT", COMPUTE_PRELOADED: "COMPUTE_PRELOADED",
         COMPUTE_ACCUMULATED: "COMPUTE_ACCUMULATED", PRELOAD: "PRELOAD", FLUSH: "FLUSH", MVIN3: "MVIN3"}
CONFIG_EX, CONFIG_LD, CONFIG_ST, CONFIG_NORM = 0, 1, 2, 3
SLOT = {MVIN: 0, MVIN2: 1, MVIN3: 2}
GARBAGE_ADDR = 0xFFFFFFFF
ACC_BIT, ACCUMULATE_BIT, RAW_BIT = 1 << 31, 1 << 30, 1 << 29
ROW_MASK = (1 << 29) - 1
OS, WS = 0, 1
MAX_BYTES = 64
M64 = (1 << 64) - 1


class StreamError(AccvError):
    """A command the machine cannot execute (names the command index)."""


class EncodeError(AccvError):
    """A compiler-level program that has no command-stream encoding (names the instruction index)."""


class Command(NamedTuple):
    funct: int
    rs1: int
    rs2: int

    def __str__(self) -> str:
        return format_command(self)


def operand(rows: int, cols: int, addr: int) -> int:
    """rows<<48 | cols<<32 | local_addr."""
    return ((rows & 0xFFFF) << 48) | ((cols & 0xFFFF) << 32) | (addr & 0xFFFFFFFF)


def fields(word: int) -> tuple[int, int, int]:
    return (word >> 48) & 0xFFFF, (word >> 32) & 0xFFFF, word & 0xFFFFFFFF


# --- constructors --------------------------------------------------------------------------------

def config_ex(dataflow: int, act: int = 0, a_transpose: int = 0, b_transpose: int = 0, a_stride: int = 1,
              sys_shift: int = 0, c_stride: int = 1) -> Command:
    rs1 = CONFIG_EX | (dataflow << 2) | (act << 3) | (a_transpose << 8) | (b_transpose << 9) | (a_stride << 16)
    rs2 = (sys_shift & 0xFFFFFFFF) | (c_stride << 48)
    return Command(CONFIG, rs1 & M64, rs2 & M64)


def config_ld(slot: int, stride: int, scale_bits: int, shrunk: int = 0, block_stride: int = DIM) -> Command:
    rs1 = CONFIG_LD | (shrunk << 2) | (slot << 3) | (block_stride << 16) | ((scale_bits & 0xFFFFFFFF) << 32)
    return Command(CONFIG, rs1 & M64, stride & M64)


def config_st(stride: int, act: int, scale_bits: int) -> Command:
    return Command(CONFIG, CONFIG_ST | (act << 2), (stride & 0xFFFFFFFF) | ((scale_bits & 0xFFFFFFFF) << 32))


# --- decoding ------------------------------------------------------------------------------------

def decode(c: Command) -> dict[str, int | str]:
    """The named fields of one command."""
    f, rs1, rs2 = c
    if f == CONFIG:
        kind = rs1 & 3
        if kind == CONFIG_EX:
            return {"op": "CONFIG_EX", "dataflow": (rs1 >> 2) & 1, "act": (rs1 >> 3) & 3, "a_transpose": (rs1 >> 8) & 1,
                    "b_transpose": (rs1 >> 9) & 1, "a_stride": (rs1 >> 16) & 0xFFFF,
                    "sys_shift": rs2 & 0xFFFFFFFF, "c_stride": (rs2 >> 48) & 0xFFFF}
        if kind == CONFIG_LD:
            return {"op": "CONFIG_LD", "shrunk": (rs1 >> 2) & 1, "slot": (rs1 >> 3) & 3,
                    "block_stride": (rs1 >> 16) & 0xFFFF, "scale": (rs1 >> 32) & 0xFFFFFFFF, "stride": rs2}
        if kind == CONFIG_ST:
            return {"op": "CONFIG_ST", "act": (rs1 >> 2) & 3, "stride": rs2 & 0xFFFFFFFF,
                    "acc_scale": (rs2 >> 32) & 0xFFFFFFFF}
        return {"op": "CONFIG_NORM"}
    name = NAMES.get(f, f"FUNCT{f}")
    if f in (MVIN, MVIN2, MVIN3, MVOUT):
        r, k, a = fields(rs2)
        return {"op": name, "dram": rs1, "rows": r, "cols": k, "addr": a}
    if f in (COMPUTE_PRELOADED, COMPUTE_ACCUMULATED, PRELOAD):
        r1, k1, a1 = fields(rs1)
        r2, k2, a2 = fields(rs2)
        n1, n2 = ("bd", "c") if f == PRELOAD else ("a", "bd")
        return {"op": name, f"{n1}_rows": r1, f"{n1}_cols": k1, f"{n1}_addr": a1,
                f"{n2}_rows": r2, f"{n2}_cols": k2, f"{n2}_addr": a2}
    return {"op": name, "rs1": rs1, "rs2": rs2}


def format_local(addr: int) -> str:
    if addr == GARBAGE_ADDR:
        return "GARBAGE"
    if addr & ACC_BIT:
        flags = ("+" if addr & ACCUMULATE_BIT else "") + ("raw" if addr & RAW_BIT else "")
        return f"acc[{addr & ROW_MASK}]" + (f"({flags})" if flags else "")
    return f"spad[{addr & ROW_MASK}]"


def format_command(c: Command) -> str:
    d = decode(c)
    op = d.pop("op")
    parts = []
    for k, v in d.items():
        if k.endswith("addr"):
            parts.append(f"{k}={format_local(int(v))}")
        elif k in ("scale", "acc_scale"):
            parts.append(f"{k}={float(_f32(int(v)))!r}")
        else:
            parts.append(f"{k}={v}")
    return f"{op:<20} " + " ".join(parts) + f"    # funct={c.funct} rs1={c.rs1:#x} rs2={c.rs2:#x}"


# --- numerics (gemmini.md) -----------------------------------------------------------------------

def _f32(bits: int) -> np.float32:
    return np.array(bits & 0xFFFFFFFF, np.uint32).view(np.float32)[()]


def _scale_to_int8(x: np.ndarray, scale_bits: int) -> np.ndarray:
    """x -> fp32 (RNE) -> x * scale (fp32, RNE) -> round half to even -> saturate int8."""
    with np.errstate(all="ignore"):
        y = np.rint(x.astype(np.float32) * _f32(scale_bits))
    y = np.where(np.isnan(y), 0, y)     # a NaN product saturates to 0 (as the RTL's converter does)
    return np.clip(y, -128, 127).astype(np.int8)


def _wrap20(x: np.ndarray) -> np.ndarray:
    """Wrap to the array's ARRAY_BITS-bit two's complement, sign-extended to int32."""
    x = x.astype(np.int64) & ((1 << ARRAY_BITS) - 1)
    return np.where(x >= 1 << (ARRAY_BITS - 1), x - (1 << ARRAY_BITS), x).astype(np.int32)


def _wrap32(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.int64) + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def _rounding_right_shift(x: np.ndarray, s: int) -> np.ndarray:
    x = x.astype(np.int64)
    if s <= 0:
        return x << -s
    s = min(s, 62)     # |x| < 2^61 here: any larger shift rounds to the same 0 (the field is 32 bits)
    q = x >> s
    half = (x >> (s - 1)) & 1
    sticky = (x & ((1 << (s - 1)) - 1)) != 0
    return q + (half & (sticky | (q & 1)))


# --- the machine ---------------------------------------------------------------------------------

@dataclass
class StreamMachine:
    dim: int = DIM
    dram_size: int = HBM_SIZE
    spad_rows: int = SPAD_ROWS
    acc_rows: int = ACC_ROWS
    dram: np.ndarray = field(init=False)
    spad: np.ndarray = field(init=False)
    acc: np.ndarray = field(init=False)
    pe: np.ndarray = field(init=False)
    ex: dict[str, int] | None = field(init=False, default=None)
    ld: list[dict[str, int] | None] = field(init=False)
    st: dict[str, int] | None = field(init=False, default=None)
    latch: tuple[int, int] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.dram = np.zeros(self.dram_size, np.uint8)
        self.spad = np.zeros((self.spad_rows, self.dim), np.int8)
        self.acc = np.zeros((self.acc_rows, self.dim), np.int32)
        self.pe = np.zeros((self.dim, self.dim), np.int32)
        self.ld = [None, None, None]

    def place(self, program: Program, inputs: Sequence[np.ndarray]) -> None:
        """Write ``inputs`` (one per ``.input`` placement, in index order) and the constants into
        DRAM, as :func:`compilers.simulator.simulate` does."""
        for pl, x in placed_inputs(program, inputs):
            img = np.frombuffer(bytes(bflat(x, pl.type)), np.uint8)
            self.dram[pl.addr:pl.addr + img.size] = img
        for addr, data in program.constants:
            self.dram[addr:addr + len(data)] = np.frombuffer(data, np.uint8)

    def outputs(self, program: Program) -> list[np.ndarray]:
        """The program's outputs read back from DRAM, in index order."""
        return [unbflat(self.dram[pl.addr:pl.addr + byte_size(pl.type)].copy(), pl.type)
                for pl in sorted(program.outputs, key=lambda p: p.index)]

    def run(self, commands: Sequence[Command]) -> None:
        for i, c in enumerate(commands):
            self.step(c, i)

    def step(self, c: Command, index: int) -> None:
        self._where = f"command {index} '{format_command(c).split('    #')[0].strip()}'"
        f = c.funct
        if f == CONFIG:
            self._config(c)
        elif f in SLOT:
            self._mvin(c, SLOT[f])
        elif f == MVOUT:
            self._mvout(c)
        elif f == PRELOAD:
            self.latch = (c.rs1, c.rs2)
        elif f in (COMPUTE_PRELOADED, COMPUTE_ACCUMULATED):
            self._compute(c, f == COMPUTE_PRELOADED)
        elif f == FLUSH:
            pass
        else:
            self._fail(f"funct {f} is not modelled (loop FSMs and unknown functs)")

    def _fail(self, msg: str) -> None:
        raise StreamError(msg, where=self._where)

    def _config(self, c: Command) -> None:
        d = decode(c)
        if d["op"] == "CONFIG_EX":
            if d["act"] > 1:
                self._fail(f"activation {d['act']} is not modelled")
            if d["dataflow"] == OS and d["b_transpose"] and not d["a_transpose"]:
                self._fail("OS with B_transpose and not A_transpose is not allowed")
            if d["dataflow"] == WS and d["a_transpose"] and d["b_transpose"]:
                self._fail("WS with both transposes is not allowed")
            self.ex = {k: int(v) for k, v in d.items() if k != "op"}
        elif d["op"] == "CONFIG_LD":
            if d["slot"] > 2:
                self._fail(f"load-config slot {d['slot']} does not exist")
            self.ld[int(d["slot"])] = {k: int(v) for k, v in d.items() if k not in ("op", "slot")}
        elif d["op"] == "CONFIG_ST":
            if d["act"] > 1:
                self._fail(f"activation {d['act']} is not modelled")
            self.st = {k: int(v) for k, v in d.items() if k != "op"}
        else:
            self._fail("config_norm is not modelled")

    def _local_rows(self, addr: int, rows: int, stride: int = 1, span: int = 1) -> tuple[np.ndarray, int]:
        """The buffer and first row of a local address; checks rows + (span - 1) * stride fit."""
        is_acc = bool(addr & ACC_BIT)
        buf = self.acc if is_acc else self.spad
        row = addr & ROW_MASK
        last = row + (rows - 1) * stride + (span - 1)
        if last >= buf.shape[0]:
            self._fail(f"{'accumulator' if is_acc else 'scratchpad'} rows up to {last} are outside [0, {buf.shape[0]})")
        return buf, row

    def _dram_range(self, addr: int, n: int) -> None:
        if addr < 0 or addr + n > self.dram.size:
            self._fail(f"DRAM bytes [{addr}, {addr + n}) are outside [0, {self.dram.size})")

    def _mvin(self, c: Command, slot: int) -> None:
        cfg = self.ld[slot]
        if cfg is None:
            self._fail(f"load-config slot {slot} was never configured")
        rows, cols, addr = fields(c.rs2)
        D = self.dim
        if addr == GARBAGE_ADDR:
            self._fail("mvin to GARBAGE_ADDR")
        is_acc = bool(addr & ACC_BIT)
        eb = 1 if (not is_acc or cfg["shrunk"]) else 4
        if not 1 <= rows <= D or cols < 1 or -(-cols // D) > max(1, MAX_BYTES // (D * eb)):
            self._fail(f"mvin of {rows} x {cols} exceeds DIM={D} rows / {MAX_BYTES} bytes per row")
        stride = cfg["stride"]
        if c.rs1 == 0:
            x = np.zeros((rows, cols), np.int32)   # Spike: DRAM address 0 loads zeros
        else:
            self._dram_range(c.rs1, (rows - 1) * stride + cols * eb)
            stride = stride if rows > 1 else 0      # (a one-row load ignores it, however large)
            idx = c.rs1 + np.arange(rows)[:, None] * stride + np.arange(cols * eb)[None, :]
            raw = self.dram[idx]
            x = raw.view(np.int8).astype(np.int32) if eb == 1 else raw.reshape(rows, cols, 4).copy().view("<i4")[..., 0]
        if eb == 1:
            x = _scale_to_int8(x, cfg["scale"]).astype(np.int32)
        nblocks = -(-cols // D)
        buf, row = self._local_rows(addr, rows, 1, (nblocks - 1) * cfg["block_stride"] + 1)
        for k in range(nblocks):
            blk = x[:, k * D:(k + 1) * D]
            r0 = row + k * cfg["block_stride"]
            dst = buf[r0:r0 + rows, :blk.shape[1]]
            if is_acc and addr & ACCUMULATE_BIT:
                blk = _wrap32(dst.astype(np.int64) + blk)
            dst[...] = blk.astype(buf.dtype)

    def _mvout(self, c: Command) -> None:
        if self.st is None:
            self._fail("config_st was never configured")
        rows, cols, addr = fields(c.rs2)
        D = self.dim
        if not (1 <= rows <= D and 1 <= cols <= D) or addr == GARBAGE_ADDR:
            self._fail(f"mvout of {rows} x {cols} from {format_local(addr)} is not allowed")
        buf, row = self._local_rows(addr, rows)
        x = buf[row:row + rows, :cols]
        if not addr & ACC_BIT:
            out = x.astype(np.int8).view(np.uint8)
        elif addr & RAW_BIT:
            out = x.astype("<i4").view(np.uint8).reshape(rows, cols * 4)
        else:
            q = _scale_to_int8(x, self.st["acc_scale"])
            if self.st["act"] == 1:
                q = np.maximum(q, 0)
            out = q.view(np.uint8)
        stride = self.st["stride"]
        self._dram_range(c.rs1, (rows - 1) * stride + out.shape[1])
        for i in range(rows):
            a = c.rs1 + i * stride
            self.dram[a:a + out.shape[1]] = out[i]

    def _spad_matrix(self, word: int, stride: int, transpose: int, what: str) -> np.ndarray:
        """A DIM x DIM int32 operand as the array sees it (0 outside rows/cols or GARBAGE): rows x
        cols bound the operand as the array sees it; transposed, element (i, j) is scratchpad row
        ``addr + stride * j``, column i (Spike's gemmini.cc: ``cols`` rows are read, ``rows`` lanes each)."""
        rows, cols, addr = fields(word)
        D = self.dim
        m = np.zeros((D, D), np.int32)
        if addr == GARBAGE_ADDR:
            return m
        if addr & ACC_BIT:
            self._fail(f"{what} must be in the scratchpad, not {format_local(addr)}")
        if not (1 <= rows <= D and 1 <= cols <= D):
            self._fail(f"{what} of {rows} x {cols} exceeds DIM={D}")
        if transpose:
            _, row = self._local_rows(addr, cols, stride)
            m[:rows, :cols] = self.spad[row + stride * np.arange(cols), :rows].T
        else:
            _, row = self._local_rows(addr, rows, stride)
            m[:rows, :cols] = self.spad[row + stride * np.arange(rows), :cols]
        return m

    def _compute(self, c: Command, preloaded: bool) -> None:
        if self.ex is None:
            self._fail("config_ex was never configured")
        if self.latch is None:
            self._fail("compute without a preceding preload")
        bd_word, c_word = self.latch
        self.latch = None
        ex = self.ex
        a = self._spad_matrix(c.rs1, ex["a_stride"], ex["a_transpose"], "A").astype(np.int64)
        if ex["dataflow"] == WS:
            if preloaded:
                self.pe = self._spad_matrix(bd_word, 1, ex["b_transpose"], "B")
            d = self._spad_matrix(c.rs2, 1, 0, "D").astype(np.int64)
            res = _wrap20(d + a @ self.pe.astype(np.int64))
        else:
            if preloaded:
                self.pe = self._spad_matrix(bd_word, 1, 0, "D")
            b = self._spad_matrix(c.rs2, 1, ex["b_transpose"], "B").astype(np.int64)
            self.pe = _wrap20(self.pe.astype(np.int64) + a @ b)
            res = self.pe
        rows, cols, addr = fields(c_word)
        if addr == GARBAGE_ADDR:
            return
        if not (1 <= rows <= self.dim and 1 <= cols <= self.dim):
            self._fail(f"C of {rows} x {cols} exceeds DIM={self.dim}")
        buf, row = self._local_rows(addr, rows, ex["c_stride"])
        r = res[:rows, :cols].astype(np.int64)
        if not addr & ACC_BIT:
            s = _rounding_right_shift(r, ex["sys_shift"] if ex["dataflow"] == OS else 0)
            q = np.clip(s, -128, 127)
            if ex["act"] == 1:
                q = np.maximum(q, 0)
            r = q
        # row by row, in order: with a C stride that maps several rows to one local row (stride 0)
        # the rows accumulate one after the other, or the last one wins when overwriting
        for i in range(rows):
            k = row + ex["c_stride"] * i
            if addr & ACC_BIT:
                v = r[i] + buf[k, :cols] if addr & ACCUMULATE_BIT else r[i]
                buf[k, :cols] = _wrap32(v)
            else:
                buf[k, :cols] = r[i].astype(np.int8)


# --- the encoder ---------------------------------------------------------------------------------

@dataclass
class _Enc:
    dim: int
    out: list[Command] = field(default_factory=list)
    ex: dict[str, int] | None = None
    ld: list[dict[str, int] | None] = field(default_factory=lambda: [None, None, None])
    st: dict[str, int] | None = None

    @staticmethod
    def _merge(cur: dict[str, int] | None, want: dict[str, int | None], defaults: dict[str, int]) -> dict[str, int] | None:
        """The new state if ``want`` (None = don't care) differs from ``cur``, else None."""
        base = dict(cur) if cur is not None else dict(defaults)
        new = {k: (base[k] if v is None else v) for k, v in want.items()}
        return None if cur is not None and new == cur else new

    def need_ex(self, **want: int | None) -> None:
        want.setdefault("b_transpose", 0 if want.get("dataflow") == OS else None)
        new = self._merge(self.ex, want, {"dataflow": WS, "act": 0, "sys_shift": 0, "b_transpose": 0})
        if new is not None:
            self.ex = new
            self.out.append(config_ex(new["dataflow"], new["act"], b_transpose=new["b_transpose"],
                                      sys_shift=new["sys_shift"]))

    def need_ld(self, slot: int, **want: int) -> None:
        new = self._merge(self.ld[slot], want, {})
        if new is not None:
            self.ld[slot] = new
            self.out.append(config_ld(slot, new["stride"], new["scale"], new["shrunk"], self.dim))

    def need_st(self, **want: int | None) -> None:
        new = self._merge(self.st, want, {"stride": 0, "act": 0, "scale": 0x3F800000})
        if new is not None:
            self.st = new
            self.out.append(config_st(new["stride"], new["act"], new["scale"]))


def encode(program: Program, dim: int = DIM) -> list[Command]:
    """Compiler-level instructions -> command stream (module doc; raises :class:`EncodeError`)."""
    e = _Enc(dim)
    G = operand(dim, dim, GARBAGE_ADDR)
    ins = program.instructions
    i = 0

    def fail(msg: str, k: int) -> None:
        raise EncodeError(msg, ins[k].loc, f"instruction {k} '{ins[k]}'")

    desc = build(dim).instructions   # the fused pairs: the description's followed_by / preceded_by
    for k, c in enumerate(ins):
        d = desc.get(c.name)
        if d is None:
            fail(f"unknown instruction '{c.name}'", k)
        if d.followed_by and (k + 1 >= len(ins) or ins[k + 1].name not in d.followed_by):
            fail(f"{c.name} must be followed directly by one of {', '.join(d.followed_by)}", k)
        if d.preceded_by and (k == 0 or ins[k - 1].name not in d.preceded_by):
            fail(f"{c.name} must directly follow one of {', '.join(d.preceded_by)}", k)

    while i < len(ins):
        c: Concrete = ins[i]
        a = c.env
        n = c.name
        if n == "mvin_spad":
            e.need_ld(0, shrunk=0, scale=a["scale"], stride=a["stride"])
            e.out.append(Command(MVIN, a["dram"], operand(a["rows"], a["cols"], a["sp"])))
        elif n in ("mvin_acc", "mvin_acc_s8"):
            slot, shrunk = (1, 0) if n == "mvin_acc" else (2, 1)
            e.need_ld(slot, shrunk=shrunk, scale=0x3F800000, stride=a["stride"])
            local = ACC_BIT | (ACCUMULATE_BIT if a["accumulate"] else 0) | a["ac"]
            e.out.append(Command(MVIN2 if slot == 1 else MVIN3, a["dram"], operand(a["rows"], a["cols"], local)))
        elif n == "mvin_acc_bcast":
            e.need_ld(1, shrunk=0, scale=0x3F800000, stride=0)
            local = ACC_BIT | (ACCUMULATE_BIT if a["accumulate"] else 0) | a["ac"]
            e.out.append(Command(MVIN2, a["dram"], operand(a["rows"], a["cols"], local)))
        elif n == "mvout_spad":
            e.need_st(stride=a["stride"], act=None, scale=None)
            e.out.append(Command(MVOUT, a["dram"], operand(a["rows"], a["cols"], a["sp"])))
        elif n == "mvout_acc":
            e.need_st(stride=a["stride"], act=a["relu"], scale=a["scale"])
            e.out.append(Command(MVOUT, a["dram"], operand(a["rows"], a["cols"], ACC_BIT | a["ac"])))
        elif n == "mvout_acc_raw":
            e.need_st(stride=a["stride"], act=None, scale=None)
            e.out.append(Command(MVOUT, a["dram"], operand(a["rows"], a["cols"], ACC_BIT | RAW_BIT | a["ac"])))
        elif n in ("preload_ws", "preload_ws_t", "preload_os", "preload_os_zero"):
            pass   # emitted with the compute that follows it (adjacency checked above)
        elif n.startswith("matmul_ws"):
            prev = ins[i - 1] if i > 0 else None
            pre = prev is not None and prev.name in ("preload_ws", "preload_ws_t")
            # B_transpose applies at the preload (WS): set for preload_ws_t, clear for preload_ws,
            # whatever it is for a compute that reuses the array's weights
            bt = (1 if prev.name == "preload_ws_t" else 0) if pre and prev else None
            if "_spad" in n:
                e.need_ex(dataflow=WS, act=a["relu"], sys_shift=None, b_transpose=bt)
                cl = a["c"]
            else:
                e.need_ex(dataflow=WS, act=None, sys_shift=None, b_transpose=bt)
                cl = ACC_BIT | (ACCUMULATE_BIT if a["accumulate"] else 0) | a["c"]
            bd = operand(prev.env["rows"], prev.env["cols"], prev.env["b"]) if pre and prev else G
            e.out.append(Command(PRELOAD, bd, operand(a["c_rows"], a["c_cols"], cl)))
            d = operand(a["c_rows"], a["c_cols"], a["d"]) if "_bias" in n else G
            e.out.append(Command(COMPUTE_PRELOADED if pre else COMPUTE_ACCUMULATED,
                                 operand(a["a_rows"], a["a_cols"], a["a"]), d))
        elif n == "matmul_os":
            nxt = ins[i + 1] if i + 1 < len(ins) and ins[i + 1].name.startswith("store_os") else None
            cw = G
            if nxt is None:
                e.need_ex(dataflow=OS, act=None, sys_shift=None)
            else:
                b = nxt.env
                if nxt.name == "store_os_spad":
                    e.need_ex(dataflow=OS, act=b["relu"], sys_shift=b["shift"])
                    cw = operand(b["rows"], b["cols"], b["c"])
                else:
                    e.need_ex(dataflow=OS, act=None, sys_shift=None)
                    cw = operand(b["rows"], b["cols"], ACC_BIT | (ACCUMULATE_BIT if b["accumulate"] else 0) | b["c"])
            prev = ins[i - 1] if i > 0 else None
            pre = prev is not None and prev.name in ("preload_os", "preload_os_zero")
            bd = operand(prev.env["rows"], prev.env["cols"], prev.env["d"]) if pre and prev and \
                prev.name == "preload_os" else G
            e.out.append(Command(PRELOAD, bd, cw))
            e.out.append(Command(COMPUTE_PRELOADED if pre else COMPUTE_ACCUMULATED,
                                 operand(a["a_rows"], a["a_cols"], a["a"]), operand(a["b_rows"], a["b_cols"], a["b"])))
            if nxt is not None:
                i += 1
        elif n.startswith("store_os"):
            fail(f"{n} must directly follow matmul_os", i)
        else:
            fail(f"unknown instruction '{n}'", i)
        i += 1
    return e.out

