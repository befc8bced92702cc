"""Random QKV test cases, shared by the ctypes tests, the cocotb testbench and the speed bench.

What belongs here: random starting states (HBM bytes, d1, d2 with bf16 edge values: +-0,
subnormals, +-inf, quiet and signalling NaNs of both signs, max finite, values whose products
overflow or flush to zero in a dot), random VALID instructions of each of the 7 kinds (random n
and addresses within the ISA's bounds, extremes favoured), random encodable but INVALID
instructions, random programs, the reference run on :class:`compilers.simulator.Machine`, and the
whole-state comparison that reports the first difference with its index.

The comparison honours each instruction's numeric contract (compilers/targets/qkv/description.py): ``exact``
is bit-for-bit; ``ulp``/``abs`` bounds apply to the output slice of that instruction only (every
other byte stays bit-exact, NaN-ness must match). One more difference is declared in the softmax
contract and allowed here, nowhere else: the SIGN of a NaN output in a row whose input holds NaNs
of both signs, at an element whose own input is not NaN (:func:`nan_sign_open`). There the row sum
adds two NaNs, and which one an add returns is open in IEEE 754: the RTL keeps the accumulator's
(first operand's), the reference's numpy loops pick the first operand's in full 8-wide SIMD
blocks and the second's in a loop's tail, i.e. by the element's position (so for n a multiple of
8, as in compiled kernels, the two agree bit for bit). A program is compared once at the end;
only if that differs is it re-checked one instruction at a time (:func:`check_stepwise`), each
step from the simulator's state, where the contracts apply to that step alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from compilers.isa import Accelerator, NumericContract
from compilers.program import Concrete
from compilers.simulator import Machine
from compilers.targets import qkv as qkv_target
from compilers.targets.qkv.description import D1_ROWS, D2_ROWS, HBM_SIZE, ROW
from compilers.targets.qkv.encode import field_limit

__all__ = ["NAMES", "EDGE_BF16", "State", "Difference", "target", "random_bf16", "random_state",
           "random_instruction", "random_invalid_instruction", "random_program", "reference_run",
           "compare_states", "check_case", "check_stepwise", "nan_sign_open", "ulp_distance_bf16", "RtlRun"]

NAMES = ("load_rm", "load_cm", "store_rm", "store_cm", "mov", "gemm", "softmax")

#: bf16 bit patterns every state mixes in
EDGE_BF16 = np.array([
    0x0000, 0x8000,             # +-0
    0x0001, 0x8001, 0x007F, 0x807F,   # subnormals (read as zeros: DAZ)
    0x0080, 0x8080,             # +-smallest normal
    0x3F80, 0xBF80, 0x3F81, 0xBF7F,   # +-1, 1 + ulp, -(1 - ulp/2)
    0x7F7F, 0xFF7F,             # +-max finite
    0x7F80, 0xFF80,             # +-inf
    0x7FC0, 0xFFC0, 0x7F81, 0xFF81, 0x7FFF, 0xFFFF,   # quiet / signalling NaNs, both signs
    0x5F80, 0xDF80, 0x5F00,     # +-2^64, 2^63: products overflow f32
    0x1F80, 0x9F80, 0x2000,     # +-2^-64, 2^-63: products flush to zero (FTZ)
    0x42B2, 0xC2B2, 0x42B1, 0xC2AF,   # ~ +-89, 88.5, -87.5: exp overflows / flushes
], dtype=np.uint16)

_ACC: Accelerator | None = None


def target() -> Accelerator:
    """The QKV ISA description (built once)."""
    global _ACC
    if _ACC is None:
        _ACC = qkv_target.build()
    return _ACC


def random_bf16(rng: np.random.Generator, shape: tuple[int, ...], profile: str | None = None) -> np.ndarray:
    """Random bf16 bit patterns (uint16). Profiles: ``normal`` (exponents 2^-8..2^8, so sums round
    often), ``wide`` (any finite exponent), ``edges`` (10% edge values), ``sprinkle`` (0.3% edge
    values), ``overflow`` (around 2^60: dot products overflow), ``tiny`` (around 2^-63: products
    flush), ``bits`` (uniform bit patterns), ``softmax`` (-30..30 with edges); None picks one."""
    profiles = ("normal", "normal", "sprinkle", "sprinkle", "edges", "wide", "overflow", "tiny", "bits", "softmax")
    p = profile or str(rng.choice(profiles))
    n = int(np.prod(shape))
    sign = rng.integers(0, 2, n).astype(np.uint32) << 15
    frac = rng.integers(0, 128, n).astype(np.uint32)
    if p == "bits":
        return rng.integers(0, 1 << 16, n).astype(np.uint16).reshape(shape)
    if p == "wide":
        exp = rng.integers(1, 255, n)
    elif p == "overflow":
        exp = rng.integers(127 + 56, 127 + 66, n)
    elif p == "tiny":
        exp = rng.integers(127 - 68, 127 - 58, n)
    elif p == "softmax":
        exp = rng.integers(127 - 10, 127 + 5, n)
    else:
        exp = rng.integers(127 - 8, 127 + 9, n)
    out = (sign | (exp.astype(np.uint32) << 7) | frac).astype(np.uint16)
    rate = {"edges": 0.10, "sprinkle": 0.003, "softmax": 0.01}.get(p, 0.0)
    if rate:
        hit = rng.random(n) < rate
        out[hit] = rng.choice(EDGE_BF16, int(hit.sum()))
    return out.reshape(shape)


@dataclass
class State:
    """The memory state of the QKV accelerator: HBM bytes and both buffers as bf16 bit patterns."""

    hbm: np.ndarray   # u8[2^20]
    d1: np.ndarray    # u16[128, 64]
    d2: np.ndarray    # u16[64, 64]

    def copy(self) -> State:
        return State(self.hbm.copy(), self.d1.copy(), self.d2.copy())


def random_state(rng: np.random.Generator) -> State:
    """Random HBM bytes (with bf16 edge values at random even offsets) and random buffers."""
    hbm = rng.integers(0, 256, HBM_SIZE, dtype=np.uint8)
    # most loads read bf16 values through HBM: make a random stretch of it well-behaved numbers
    lo = int(rng.integers(0, HBM_SIZE // 2)) & ~1
    vals = random_bf16(rng, (int(rng.integers(1, 1 << 18)),))
    hbm[lo:lo + 2 * vals.size] = vals.view(np.uint8)[:HBM_SIZE - lo]
    pos = rng.integers(0, HBM_SIZE // 2, 4096) * 2
    hbm.view(np.uint16)[pos // 2] = rng.choice(EDGE_BF16, pos.size)
    return State(hbm, random_bf16(rng, (D1_ROWS, ROW)), random_bf16(rng, (D2_ROWS, ROW)))


def _pick_n(rng: np.random.Generator, hi: int) -> int:
    r = rng.random()
    if r < 0.15:
        return 1
    if r < 0.3:
        return hi
    return int(rng.integers(1, hi + 1))


def _pick_addr(rng: np.random.Generator, hi: int, align: int = 1) -> int:
    """An address in [0, hi]: an end point, an aligned one, or any."""
    r = rng.random()
    if r < 0.1:
        return 0
    if r < 0.2:
        return hi
    if r < 0.45 and hi >= align:
        return int(rng.integers(0, hi // align + 1)) * align
    return int(rng.integers(0, hi + 1))


def random_instruction(rng: np.random.Generator, name: str) -> Concrete:
    """A valid concrete instruction ``name`` with random attributes inside the ISA's bounds."""
    def c(**kw: int) -> Concrete:
        return Concrete(name, tuple(kw.items()))

    if name in ("load_rm", "load_cm"):
        n = _pick_n(rng, 128) if name == "load_rm" else 64
        return c(n=n, addr_in=_pick_addr(rng, HBM_SIZE - 128 * n, 128), addr_out=_pick_addr(rng, D1_ROWS - n))
    if name in ("store_rm", "store_cm"):
        n = _pick_n(rng, 128) if name == "store_rm" else 64
        return c(n=n, addr_in=_pick_addr(rng, D1_ROWS - n), addr_out=_pick_addr(rng, HBM_SIZE - 128 * n, 128))
    if name == "mov":
        n = _pick_n(rng, 64)
        return c(n=n, addr_in=_pick_addr(rng, D2_ROWS - n), addr_out=_pick_addr(rng, D1_ROWS - n))
    if name == "gemm":
        return c(addr_1=_pick_addr(rng, 64), addr_2=_pick_addr(rng, 64), addr_out=0)
    if name == "softmax":
        n = _pick_n(rng, 64)
        return c(n=n, addr=_pick_addr(rng, D2_ROWS - n))
    raise ValueError(f"unknown QKV instruction {name}")


def random_invalid_instruction(rng: np.random.Generator) -> Concrete:
    """An instruction whose attributes fit the instruction word but break one of the ISA's bounds
    (n outside its domain, or a slice past the end of HBM / d1 / d2)."""
    name = str(rng.choice(NAMES))
    ins = random_instruction(rng, name)
    env = ins.env
    keys = [k for k in env if not (name == "gemm" and k == "addr_out")] + (["addr_out"] if name == "gemm" else [])
    k = str(rng.choice(keys))
    limit = field_limit(name, k)     # the largest value its instruction-word field holds
    if k == "n":
        bad = [0, 129, 255] if name in ("load_rm", "store_rm") else [0, 65, 128]
        if name in ("load_cm", "store_cm"):
            bad = [0, 1, 63, 65]
        env[k] = int(rng.choice(bad))
    else:
        # the smallest out-of-bounds value or anything beyond it
        hbm_side = (name.startswith("load") and k == "addr_in") or (name.startswith("store") and k == "addr_out")
        n = env.get("n", 64)
        if hbm_side:
            first_bad = HBM_SIZE - 128 * n + 1
        elif name in ("mov", "softmax") and k in ("addr_in", "addr"):
            first_bad = D2_ROWS - n + 1
        elif name == "gemm" and k == "addr_out":
            first_bad = 1
        else:
            first_bad = D1_ROWS - n + 1
        env[k] = first_bad if rng.random() < 0.5 else int(rng.integers(first_bad, limit + 1))
    return Concrete(name, tuple((a, env[a]) for a, _ in ins.attrs))


def random_program(rng: np.random.Generator, length: int, names: Sequence[str] = NAMES) -> list[Concrete]:
    """``length`` random valid instructions (kinds drawn uniformly from ``names``)."""
    return [random_instruction(rng, str(rng.choice(list(names)))) for _ in range(length)]


def reference_run(state: State, instrs: Sequence[Concrete]) -> State:
    """The final state of the functional simulator run from ``state`` (raises SimError)."""
    m = Machine(target())
    m.state["d0"][:] = state.hbm
    m.state["d1"][:] = state.d1.view(ml_dtypes.bfloat16)
    m.state["d2"][:] = state.d2.view(ml_dtypes.bfloat16)
    with np.errstate(all="ignore"):
        for i, ins in enumerate(instrs):
            m.step(ins, i)
    return State(m.state["d0"].copy(), m.state["d1"].view(np.uint16).copy(), m.state["d2"].view(np.uint16).copy())


@dataclass(frozen=True)
class Difference:
    """The first element where two states differ beyond what the contracts allow."""

    buffer: str
    index: tuple[int, ...]
    expected: int
    actual: int
    count: int
    why: str = ""

    def __str__(self) -> str:
        w = 2 if self.buffer == "d0" else 4
        s = (f"{self.buffer}{list(self.index)}: expected 0x{self.expected:0{w}x}, got 0x{self.actual:0{w}x} "
             f"({self.count} element(s) differ)")
        return s + (f"; {self.why}" if self.why else "")


def ulp_distance_bf16(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in representable bf16 values between bit patterns (NaNs: 0 if both NaN, else
    2^16; -0 and +0 are 0 apart)."""
    def ordered(x: np.ndarray) -> np.ndarray:
        x = x.astype(np.int64)
        return np.where(x & 0x8000, -(x & 0x7FFF), x)
    na = ((a & 0x7F80) == 0x7F80) & ((a & 0x7F) != 0)
    nb = ((b & 0x7F80) == 0x7F80) & ((b & 0x7F) != 0)
    d = np.abs(ordered(a) - ordered(b))
    return np.where(na | nb, np.where(na & nb, 0, 1 << 16), d)


def _within(contract: NumericContract, exp: np.ndarray, act: np.ndarray) -> np.ndarray:
    """Elementwise: does act (bf16 bits) satisfy the contract against exp?"""
    if contract.kind == "exact":
        return exp == act
    if contract.kind == "ulp":
        return ulp_distance_bf16(exp, act) <= contract.bound
    fe = (exp.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    fa = (act.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    with np.errstate(invalid="ignore"):
        ok = np.abs(fe - fa) <= contract.bound
    return ok | (exp == act) | (np.isnan(fe) & np.isnan(fa))


def _output_rows(ins: Concrete) -> tuple[str, slice] | None:
    d = target().instructions[ins.name]
    if d.output.buffer == "d0":
        return None
    start, length = d.output.bounds(ins.env)
    return d.output.buffer, slice(start[0], start[0] + length[0])


def _is_nan_bf16(x: np.ndarray) -> np.ndarray:
    return ((x & 0x7F80) == 0x7F80) & ((x & 0x7F) != 0)


def nan_sign_open(before: State, ins: Concrete) -> np.ndarray:
    """d2 positions (bool[64, 64]) where softmax ``ins`` run from ``before`` may return a NaN of
    either sign (module docstring): rows it covers whose input holds NaNs of both signs, elements
    whose own input is not NaN. All False for every other instruction."""
    out = np.zeros((D2_ROWS, ROW), dtype=bool)
    if ins.name != "softmax":
        return out
    a, n = ins.env["addr"], ins.env["n"]
    x = before.d2[a:a + n]
    nan = _is_nan_bf16(x)
    neg = (x & 0x8000) != 0
    both = (nan & neg).any(axis=1) & (nan & ~neg).any(axis=1)
    out[a:a + n] = both[:, None] & ~nan
    return out


def compare_states(expected: State, actual: State, ins: Concrete | None = None,
                   before: State | None = None) -> Difference | None:
    """The first difference between two states, or None; bit-exact everywhere, except, when the
    states are the results of the single instruction ``ins`` run from ``before``, what its numeric
    contract allows on its output slice and the declared NaN-sign case of softmax. Order: d0 (by
    byte), d1, d2 (row-major)."""
    if expected.hbm.shape != actual.hbm.shape:
        return Difference("d0", (0,), expected.hbm.size, actual.hbm.size, 1, "HBM sizes differ")
    bad = np.nonzero(expected.hbm != actual.hbm)[0]
    if bad.size:
        i = int(bad[0])
        return Difference("d0", (i,), int(expected.hbm[i]), int(actual.hbm[i]), int(bad.size))
    for name in ("d1", "d2"):
        e, a = getattr(expected, name), getattr(actual, name)
        ok = e == a
        if ins is not None:
            contract = target().instructions[ins.name].contract
            where = _output_rows(ins)
            if contract.kind != "exact" and where is not None and where[0] == name:
                ok[where[1]] |= _within(contract, e[where[1]], a[where[1]])
            if name == "d2" and before is not None:
                ok |= nan_sign_open(before, ins) & _is_nan_bf16(e) & _is_nan_bf16(a) & ((e ^ a) == 0x8000)
        bad2 = np.argwhere(~ok)
        if bad2.size:
            r, c = (int(x) for x in bad2[0])
            return Difference(name, (r, c), int(e[r, c]), int(a[r, c]), int(bad2.shape[0]))
    return None


#: an RTL backend: (starting state, instructions) -> (final state, cycles)
RtlRun = Callable[[State, Sequence[Concrete]], tuple[State, int]]


def check_case(run: RtlRun, state: State, instrs: Sequence[Concrete]) -> tuple[Difference | None, int]:
    """Run ``instrs`` from ``state`` on the RTL (back to back) and on the simulator; returns (first
    difference beyond the contracts, RTL cycles). An exact match at the end passes; otherwise the
    program is re-checked step by step (:func:`check_stepwise`)."""
    want = reference_run(state, instrs)
    got, cycles = run(state, instrs)
    diff = compare_states(want, got)
    if diff is None:
        return None, cycles
    if len(instrs) == 1:
        return compare_states(want, got, instrs[0], state), cycles
    step, _ = check_stepwise(run, state, instrs)
    return step, cycles


def check_stepwise(run: RtlRun, state: State, instrs: Sequence[Concrete]) -> tuple[Difference | None, int]:
    """One instruction at a time, both sides starting each step from the simulator's state (so an
    allowed difference is checked where it arises and does not propagate)."""
    total = 0
    cur = state
    for i, ins in enumerate(instrs):
        want = reference_run(cur, [ins])
        got, cycles = run(cur, [ins])
        total += cycles
        diff = compare_states(want, got, ins, cur)
        if diff is not None:
            return Difference(diff.buffer, diff.index, diff.expected, diff.actual, diff.count,
                              f"after instruction {i} '{ins}'"), total
        cur = want
    return None, total
