"""Gemmini's command stream: word layout, decoder, encoder (config only on change), and the
property that the compiler-level simulator (derived from the description) and the independent
stream simulator agree on every random valid program."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compilers.isa import Accelerator
from compilers.program import Concrete, Program, read_asm
from compilers.simulator import Machine
from compilers.targets.gemmini import DIM, ONE, SCALES, bench_program, build, f32_bits
from compilers.targets.gemmini import stream as gs
from compilers.targets.gemmini.backend import StreamBackend

ROOT = Path(__file__).resolve().parents[2]


@cache
def target(dim: int) -> Accelerator:
    acc = build(dim)
    acc.validate()
    return acc


def test_word_layout() -> None:
    c = gs.Command(gs.MVIN, 0x1234, gs.operand(16, 16, gs.ACC_BIT | gs.ACCUMULATE_BIT | 5))
    assert c.rs2 == (16 << 48) | (16 << 32) | 0xC0000005
    d = gs.decode(c)
    assert d == {"op": "MVIN", "dram": 0x1234, "rows": 16, "cols": 16, "addr": 0xC0000005}
    assert "acc[5](+)" in gs.format_command(c)
    ex = gs.decode(gs.config_ex(gs.WS, act=1, a_stride=1, sys_shift=7, c_stride=2))
    assert (ex["dataflow"], ex["act"], ex["a_stride"], ex["sys_shift"], ex["c_stride"]) == (1, 1, 1, 7, 2)
    ld = gs.config_ld(2, 96, f32_bits(0.5), shrunk=1, block_stride=16)
    assert ld.rs1 == 1 | (1 << 2) | (2 << 3) | (16 << 16) | (0x3F000000 << 32) and ld.rs2 == 96
    stc = gs.config_st(64, 1, ONE)
    assert stc.rs1 == 2 | (1 << 2) and stc.rs2 == 64 | (ONE << 32)
    assert gs.decode(gs.Command(gs.PRELOAD, gs.operand(16, 16, gs.GARBAGE_ADDR), 0))["bd_addr"] == gs.GARBAGE_ADDR


def test_encoder_emits_config_only_on_change() -> None:
    p = read_asm(ROOT / "compilers" / "programs" / "gemmini_gemm.asm")
    cmds = gs.encode(p)
    functs = [c.funct for c in cmds]
    assert functs == [gs.CONFIG, gs.MVIN, gs.MVIN, gs.CONFIG, gs.PRELOAD, gs.COMPUTE_PRELOADED, gs.CONFIG, gs.MVOUT]
    big = gs.encode(bench_program())
    configs = [c for c in big if c.funct == gs.CONFIG]
    assert len(configs) <= 6, [gs.format_command(c) for c in configs]
    # no two consecutive identical configs of the same kind anywhere
    last: dict[int, gs.Command] = {}
    for c in big:
        if c.funct == gs.CONFIG:
            key = (c.rs1 & 3, (c.rs1 >> 3) & 3 if c.rs1 & 3 == 1 else 0)
            assert last.get(key) != c
            last[key] = c


def test_encoder_rejects_unpaired() -> None:
    p = Program("gemmini", (Concrete("preload_ws", (("rows", 4), ("cols", 4), ("b", 0))),))
    with pytest.raises(gs.EncodeError, match="instruction 0"):
        gs.encode(p)
    p = Program("gemmini", (Concrete("store_os_acc", (("rows", 4), ("cols", 4), ("accumulate", 0), ("c", 0))),))
    with pytest.raises(gs.EncodeError, match="directly follow"):
        gs.encode(p)


def test_stream_errors() -> None:
    m = gs.StreamMachine(4)
    with pytest.raises(gs.StreamError, match="command 0.*never configured"):
        m.run([gs.Command(gs.MVIN, 64, gs.operand(4, 4, 0))])
    m = gs.StreamMachine(4)
    with pytest.raises(gs.StreamError, match="command 1.*scratchpad rows"):
        m.run([gs.config_ld(0, 4, ONE, block_stride=4), gs.Command(gs.MVIN, 64, gs.operand(4, 4, 16383))])
    with pytest.raises(gs.StreamError, match="not modelled"):
        gs.StreamMachine(4).run([gs.Command(9, 0, 0)])
    with pytest.raises(gs.StreamError, match="without a preceding preload"):
        gs.StreamMachine(4).run([gs.config_ex(gs.WS), gs.Command(gs.COMPUTE_ACCUMULATED, 0, 0)])


def test_stream_spike_rules() -> None:
    """DRAM address 0 loads zeros; mvin of cols > DIM fills blocks block_stride rows apart;
    transposes and strides of config_ex."""
    m = gs.StreamMachine(4)
    m.dram[:64] = 7
    m.run([gs.config_ld(0, 8, ONE, block_stride=10), gs.Command(gs.MVIN, 0, gs.operand(2, 4, 0)),
           gs.Command(gs.MVIN, 16, gs.operand(2, 8, 20))])
    assert (m.spad[0:2] == 0).all() and (m.spad[20:22] == 7).all() and (m.spad[30:32] == 7).all()
    m = gs.StreamMachine(4)
    m.spad[0:4] = np.arange(16).reshape(4, 4)
    m.spad[8:12] = np.eye(4, dtype=np.int8)
    m.run([gs.config_ex(gs.WS, a_transpose=1, c_stride=2), gs.Command(gs.PRELOAD, gs.operand(4, 4, 8),
           gs.operand(4, 4, gs.ACC_BIT)), gs.Command(gs.COMPUTE_PRELOADED, gs.operand(4, 4, 0),
                                                     gs.operand(4, 4, gs.GARBAGE_ADDR))])
    assert np.array_equal(m.acc[0:8:2, :4], np.arange(16).reshape(4, 4).T)



def test_transposes_follow_gemmini_cc() -> None:
    """Spike's gemmini.cc: rows x cols bound a transposed operand as the array sees it and its
    element (i, j) is scratchpad row addr + stride * j, column i. A non-square transposed preload
    (3 x 2 of a B stored 2 x 3) and a non-square transposed A (2 x 3 of an A stored 3 x 2) read
    exactly those elements: the stored block's other rows and columns never enter the array."""
    m = gs.StreamMachine(4)
    m.spad[0:4] = np.arange(1, 17).reshape(4, 4)          # A^T storage (and junk past it)
    m.spad[8:12] = np.arange(-8, 8).reshape(4, 4)          # B^T storage (and junk past it)
    m.run([gs.config_ex(gs.WS, b_transpose=1), gs.Command(gs.PRELOAD, gs.operand(3, 2, 8), gs.operand(4, 4, gs.ACC_BIT)),
           gs.Command(gs.COMPUTE_PRELOADED, gs.operand(4, 3, 0), gs.operand(4, 4, gs.GARBAGE_ADDR))])
    b = np.zeros((4, 4), np.int64)
    b[:3, :2] = m.spad[8:10, :3].T                          # pe(i, j) = spad[8 + j][i], i < 3, j < 2
    a = np.zeros((4, 4), np.int64)
    a[:4, :3] = m.spad[0:4, :3]
    assert np.array_equal(m.acc[0:4, :4], a @ b)
    m.run([gs.config_ex(gs.WS, a_transpose=1), gs.Command(gs.PRELOAD, gs.operand(4, 4, 8), gs.operand(4, 4, gs.ACC_BIT | 8)),
           gs.Command(gs.COMPUTE_PRELOADED, gs.operand(2, 3, 0), gs.operand(4, 4, gs.GARBAGE_ADDR))])
    a = np.zeros((4, 4), np.int64)
    a[:2, :3] = m.spad[0:3, :2].T                           # a(i, k) = spad[0 + k][i], i < 2, k < 3
    assert np.array_equal(m.acc[8:12, :4], a @ m.spad[8:12, :4].astype(np.int64))


def test_c_stride_zero_accumulates_every_row() -> None:
    """C rows that land on one accumulator row (C stride 0) are written one after the other:
    with bit 30 they all accumulate (a numpy scatter would keep only the last row's sum)."""
    m = gs.StreamMachine(4)
    m.spad[0:4] = np.arange(16).reshape(4, 4)
    m.spad[8:12] = np.eye(4, dtype=np.int8)
    m.acc[5, :4] = 1000
    m.run([gs.config_ex(gs.WS, c_stride=0), gs.Command(gs.PRELOAD, gs.operand(4, 4, 8),
           gs.operand(4, 4, gs.ACC_BIT | gs.ACCUMULATE_BIT | 5)),
           gs.Command(gs.COMPUTE_PRELOADED, gs.operand(4, 4, 0), gs.operand(4, 4, gs.GARBAGE_ADDR))])
    assert np.array_equal(m.acc[5, :4], 1000 + np.arange(16).reshape(4, 4).sum(axis=0))
    m.run([gs.Command(gs.PRELOAD, gs.operand(4, 4, gs.GARBAGE_ADDR), gs.operand(4, 4, gs.ACC_BIT | 6)),
           gs.Command(gs.COMPUTE_ACCUMULATED, gs.operand(4, 4, 0), gs.operand(4, 4, gs.GARBAGE_ADDR))])
    assert np.array_equal(m.acc[6, :4], np.arange(12, 16))   # overwriting: the last row wins

# --------------------------------------------------------------------------------------------
# the two levels agree (property test)
# --------------------------------------------------------------------------------------------

SPAD_LO, ACC_LO, DRAM_LO = 40, 24, 3000
SCALE_PICKS = [f32_bits(v) for v in (0.0, 0.5, 1.0, 1.5, 2.0 ** -3, 0.75, 1 / 3, -1.0, 4.0)]
assert all(s in SCALES for s in SCALE_PICKS)


@st.composite
def programs(draw: st.DrawFn, dim: int) -> list[Concrete]:
    out: list[Concrete] = []
    R = st.integers(1, dim)

    def c(name: str, **attrs: int) -> None:
        out.append(Concrete(name, tuple(attrs.items())))

    def sp(rows: int) -> int:
        return draw(st.integers(0, SPAD_LO - rows))

    def ac(rows: int) -> int:
        return draw(st.integers(0, ACC_LO - rows))

    def mv(eb: int) -> dict[str, int]:
        rows, cols = draw(R), draw(R)
        stride = cols * eb + draw(st.sampled_from([0, 0, 1, 5, 16]))
        dram = draw(st.integers(1, DRAM_LO - (rows - 1) * stride - cols * eb))
        return {"rows": rows, "cols": cols, "stride": stride, "dram": dram}

    n = draw(st.integers(1, 30))
    for _ in range(n):
        kind = draw(st.sampled_from(["mvin_spad", "mvin_spad", "mvin_acc", "mvin_acc_s8", "mvout_spad", "mvout_acc",
                                     "mvout_acc_raw", "ws", "ws", "ws", "os", "os", "os"]))
        if kind == "mvin_spad":
            a = mv(1)
            c(kind, rows=a["rows"], cols=a["cols"], stride=a["stride"], scale=draw(st.sampled_from(SCALE_PICKS)),
              dram=a["dram"], sp=sp(a["rows"]))
        elif kind in ("mvin_acc", "mvin_acc_s8"):
            a = mv(4 if kind == "mvin_acc" else 1)
            c(kind, rows=a["rows"], cols=a["cols"], stride=a["stride"], accumulate=draw(st.integers(0, 1)),
              dram=a["dram"], ac=ac(a["rows"]))
        elif kind == "mvout_spad":
            a = mv(1)
            c(kind, rows=a["rows"], cols=a["cols"], stride=a["stride"], sp=sp(a["rows"]), dram=a["dram"])
        elif kind == "mvout_acc":
            a = mv(1)
            c(kind, rows=a["rows"], cols=a["cols"], stride=a["stride"], scale=draw(st.sampled_from(SCALE_PICKS)),
              relu=draw(st.integers(0, 1)), ac=ac(a["rows"]), dram=a["dram"])
        elif kind == "mvout_acc_raw":
            a = mv(4)
            c(kind, rows=a["rows"], cols=a["cols"], stride=a["stride"], ac=ac(a["rows"]), dram=a["dram"])
        elif kind == "ws":
            if draw(st.booleans()):
                r, cl = draw(R), draw(R)
                if draw(st.booleans()):
                    c("preload_ws", rows=r, cols=cl, b=sp(r))
                else:       # B stored transposed: cl rows of r bytes read (gemmini.cc's convention)
                    c("preload_ws_t", rows=r, cols=cl, b=sp(cl))
            bias, dest = draw(st.booleans()), draw(st.sampled_from(["acc", "spad"]))
            ar, cr = draw(R), draw(R)
            attrs = {"a_rows": ar, "a_cols": draw(R), "c_rows": cr, "c_cols": draw(R), "a": sp(ar)}
            if bias:
                attrs["d"] = sp(cr)
            attrs["c"] = ac(cr) if dest == "acc" else sp(cr)
            flag = {"accumulate": draw(st.integers(0, 1))} if dest == "acc" else {"relu": draw(st.integers(0, 1))}
            c("matmul_ws" + ("_bias" if bias else "") + "_" + dest, **attrs, **flag)
        else:
            pre = draw(st.sampled_from(["none", "d", "zero"]))
            if pre == "d":
                r = draw(R)
                c("preload_os", rows=r, cols=draw(R), d=sp(r))
            elif pre == "zero":
                c("preload_os_zero")
            for _ in range(draw(st.integers(1, 12))):  # long chains exercise the 20-bit wrap
                ar, br = draw(R), draw(R)
                c("matmul_os", a_rows=ar, a_cols=draw(R), b_rows=br, b_cols=draw(R), a=sp(ar), b=sp(br))
            store = draw(st.sampled_from(["none", "acc", "spad"]))
            r = draw(R)
            if store == "acc":
                c("store_os_acc", rows=r, cols=draw(R), accumulate=draw(st.integers(0, 1)), c=ac(r))
            elif store == "spad":
                c("store_os_spad", rows=r, cols=draw(R), shift=draw(st.sampled_from([0, 1, 1, 2, 2, 3, 5, 9, 12, 16, 20, 31])),
                  relu=draw(st.integers(0, 1)), c=sp(r))
    return out


def _agree(dim: int, instrs: list[Concrete], seed: int) -> None:
    acc = target(dim)
    rng = np.random.default_rng(seed)
    dram = rng.integers(0, 256, DRAM_LO, dtype=np.uint8)
    dram[1:257] = np.arange(256, dtype=np.uint8)  # every int8 value
    if seed % 3 == 0:  # saturating operands: -128/127 bytes
        dram = np.where(rng.random(DRAM_LO) < 0.5, np.uint8(0x80), np.uint8(0x7F))
    elif seed % 3 == 1:  # small operands: in-range results and frequent rounding ties
        dram = rng.integers(-3, 4, DRAM_LO).astype(np.int8).view(np.uint8)
    m = Machine(acc)
    m.state["d0"][:DRAM_LO] = dram
    for i, ins in enumerate(instrs):
        m.step(ins, i)
    s = gs.StreamMachine(dim)
    s.dram[:DRAM_LO] = dram
    cmds = gs.encode(Program("gemmini", tuple(instrs)), dim)
    s.run(cmds)
    np.testing.assert_array_equal(m.state["d0"], s.dram)
    np.testing.assert_array_equal(m.state["spad"], s.spad)
    np.testing.assert_array_equal(m.state["acc"], s.acc)
    np.testing.assert_array_equal(m.state["pe"], s.pe)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(instrs=programs(4), seed=st.integers(0, 2 ** 16))
def test_levels_agree_dim4(instrs: list[Concrete], seed: int) -> None:
    _agree(4, instrs, seed)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(instrs=programs(DIM), seed=st.integers(0, 2 ** 16))
def test_levels_agree_default_dim(instrs: list[Concrete], seed: int) -> None:
    _agree(DIM, instrs, seed)


def test_levels_agree_on_bench_program() -> None:
    p = bench_program()
    rng = np.random.default_rng(1)
    x = [rng.integers(-128, 128, pl.type.shape).astype(np.int8) for pl in p.inputs]
    from compilers.simulator import simulate
    r = simulate(target(DIM), p, x)
    outs = StreamBackend(target(DIM)).run(p, x).outputs
    assert np.array_equal(r.outputs[0], outs[0])


@pytest.mark.parametrize("shift", (1, 2, 3))
@pytest.mark.parametrize("dim", (4, DIM))
def test_levels_agree_on_rounding_ties(shift: int, dim: int) -> None:
    """OS results that are exact .5 ties after the shift (pe = D = every int8 value)."""
    instrs = [Concrete("mvin_spad", (("rows", dim), ("cols", dim), ("stride", dim), ("scale", ONE), ("dram", 1),
                                     ("sp", 0))),
              Concrete("preload_os", (("rows", dim), ("cols", dim), ("d", 0))),
              Concrete("matmul_os", (("a_rows", 1), ("a_cols", 1), ("b_rows", 1), ("b_cols", 1), ("a", 39),
                                     ("b", 39))),
              Concrete("store_os_spad", (("rows", dim), ("cols", dim), ("shift", shift), ("relu", 0), ("c", 20)))]
    _agree(dim, instrs, 1)
    s = gs.StreamMachine(dim)
    s.dram[1:1 + dim * dim] = np.arange(dim * dim).astype(np.uint8)
    s.run(gs.encode(Program("gemmini", tuple(instrs)), dim))
    d = np.arange(dim * dim).astype(np.uint8).view(np.int8).astype(np.int64).reshape(dim, dim)
    want = np.array([[round(int(v) / 2 ** shift) for v in row] for row in d])
    np.testing.assert_array_equal(s.spad[20:20 + dim, :dim], want)


def test_extreme_fields_stay_in_the_model() -> None:
    """A sys_shift far beyond the data width rounds to 0, a NaN scale product saturates to 0 and a
    one-row mvin ignores a huge DRAM stride (no OverflowError, no numpy cast warning)."""
    import warnings

    x = np.array([-5, 5, 2 ** 40, -(2 ** 40)])
    assert np.array_equal(gs._rounding_right_shift(x, 2 ** 31), np.zeros(4))
    assert np.array_equal(gs._rounding_right_shift(np.array([-5, 5, 6, 7]), 1), [-2, 2, 3, 4])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(gs._scale_to_int8(np.array([1, -2]), 0x7FC00000), [0, 0])
    m = gs.StreamMachine(4)
    m.dram[16:20] = 3
    m.run([gs.config_ld(0, 2 ** 63 + 5, ONE), gs.Command(gs.MVIN, 16, gs.operand(1, 4, 0))])
    assert (m.spad[0] == 3).all()
