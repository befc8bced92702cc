"""Gemmini compiler-level description: loads and validates; every instruction against an
independent gold model written from ../shared/reference/gemmini.md (plain Python/numpy, below);
bad programs; the hand-written corpus programs against the reference interpreter."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compilers.expr import parse_expr
from compilers.isa import Accelerator, IsaError
from compilers.program import Concrete, Program, parse_asm, read_asm
from compilers.simulator import Machine, SimError, simulate
from compilers.targets import load_target
from compilers.targets.gemmini import ACC_ROWS, DIM, ONE, SCALES, SPAD_ROWS, build, f32_bits, gemm_program
from semantics.hlo_parser import parse_hlo
from semantics.inputs import random_inputs
from semantics.interp import evaluate
from tests.paths import PAPER

ROOT = Path(__file__).resolve().parents[2]

# --------------------------------------------------------------------------------------------
# gold model (gemmini.md "Semantics"), independent of the HLO description
# --------------------------------------------------------------------------------------------


def g_round_half_even(v: float) -> int:
    return round(v)  # Python rounds half to even


def g_scale_int8(x: int, scale_bits: int) -> int:
    """x -> fp32 (RNE) -> x * scale (fp32 RNE) -> round half even -> saturate int8."""
    xf = np.float32(x)  # int -> float32 is RNE
    s = np.array(scale_bits, np.uint32).view(np.float32)[()]
    p = float(np.float32(xf * s))
    return max(-128, min(127, g_round_half_even(p)))


def g_acc_read(x: int, scale_bits: int, relu: int) -> int:
    q = g_scale_int8(x, scale_bits)
    return max(q, 0) if relu else q


def g_rshift(x: int, s: int) -> int:
    if s == 0:
        return x
    q = x >> s
    half = (x >> (s - 1)) & 1
    sticky = (x & ((1 << (s - 1)) - 1)) != 0
    return q + (half & (int(sticky) | (q & 1)))


def g_wrap(x: int, bits: int) -> int:
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def g_matmul(a: np.ndarray, b: np.ndarray) -> list[list[int]]:
    n = len(a)
    return [[sum(int(a[i][k]) * int(b[k][j]) for k in range(n)) for j in range(n)] for i in range(n)]


def padded(m: np.ndarray, dim: int) -> np.ndarray:
    out = np.zeros((dim, dim), np.int64)
    out[:m.shape[0], :m.shape[1]] = m
    return out


# --------------------------------------------------------------------------------------------

EDGE8 = np.array([-128, -127, -1, 0, 1, 126, 127], np.int64)
EDGE32 = np.array([-2 ** 31, 2 ** 31 - 1, -129, 128, -128, 127, 255, -255, 3, -3, 5, -5, 2 ** 24 + 1,
                   -(2 ** 24) - 3, 2 ** 20, 65535], np.int64)
GOLD_SCALES = [0.0, 0.5, 1.0, 1.5] + [2.0 ** -k for k in range(1, 9)] + [0.75, 1 / 3, 3.0, -1.0]


@pytest.fixture(scope="module")
def gem() -> Accelerator:
    return load_target("gemmini")


def mixed8(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.integers(-128, 128, shape)
    mask = rng.random(shape) < 0.3
    return np.where(mask, rng.choice(EDGE8, shape), x).astype(np.int8)


def mixed32(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.integers(-(2 ** 31), 2 ** 31, shape)
    small = rng.integers(-600, 600, shape)
    r = rng.random(shape)
    return np.where(r < 0.3, rng.choice(EDGE32, shape), np.where(r < 0.7, small, x)).astype(np.int32)


def fresh(acc: Accelerator, rng: np.random.Generator) -> Machine:
    m = Machine(acc)
    m.state["d0"][:8192] = rng.integers(0, 256, 8192, dtype=np.uint8)
    m.state["d0"][8192:8192 + 7] = [0, 255, 128, 127, 1, 129, 254]
    m.state["spad"][:128] = mixed8(rng, (128, acc.buffers["spad"].shape[1]))
    m.state["acc"][:64] = mixed32(rng, (64, acc.buffers["acc"].shape[1]))
    m.state["pe"][:] = rng.integers(-128, 128, m.state["pe"].shape)
    return m


def step(m: Machine, name: str, **attrs: int) -> None:
    m.step(Concrete(name, tuple(attrs.items())), 0)


def test_loads_and_validates(gem: Accelerator) -> None:
    assert gem.name == "gemmini"
    assert len(gem.instructions) >= 11
    assert gem.buffers["spad"].shape == (SPAD_ROWS, DIM) and gem.buffers["acc"].shape == (ACC_ROWS, DIM)
    assert all(i.contract.kind == "exact" for i in gem.instructions.values())
    build(4).validate(samples=20, seed=1)
    gem.validate(samples=20, seed=2)


def test_scale_domain() -> None:
    for v in (0.0, 0.5, 1.0, 1.5, 2.0 ** -10, 2.0 ** -24):
        assert f32_bits(v) in SCALES
    assert ONE == 0x3F800000


@pytest.mark.parametrize("scale", GOLD_SCALES)
@pytest.mark.parametrize("seed", range(3))
def test_mvin_spad(gem: Accelerator, scale: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = fresh(gem, rng)
    rows, cols = int(rng.integers(1, DIM + 1)), int(rng.integers(1, DIM + 1))
    stride = cols + int(rng.integers(0, 20))
    dram = 8192 - int(rng.integers(0, 3)) * stride if seed else 1 + int(rng.integers(0, 100))
    sb = f32_bits(scale)
    old = m.state["spad"].copy()
    d0 = m.state["d0"].copy()
    step(m, "mvin_spad", rows=rows, cols=cols, stride=stride, scale=sb, dram=dram, sp=5)
    want = old.copy()
    for i in range(rows):
        for j in range(cols):
            x = int(d0[dram + i * stride + j].astype(np.int8))
            want[5 + i, j] = g_scale_int8(x, sb)
    np.testing.assert_array_equal(m.state["spad"], want)


@pytest.mark.parametrize("accumulate", (0, 1))
@pytest.mark.parametrize("shrunk", (False, True))
@pytest.mark.parametrize("seed", range(3))
def test_mvin_acc(gem: Accelerator, accumulate: int, shrunk: bool, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = fresh(gem, rng)
    eb = 1 if shrunk else 4
    rows, cols = int(rng.integers(1, DIM + 1)), int(rng.integers(1, DIM + 1))
    stride = cols * eb + int(rng.integers(0, 9))
    dram = 1 + int(rng.integers(0, 500))
    if not shrunk:  # int32 edge values in HBM
        vals = mixed32(rng, (rows, cols))
        for i in range(rows):
            m.state["d0"][dram + i * stride:dram + i * stride + cols * 4] = vals[i].astype("<i4").view(np.uint8)
    old = m.state["acc"].copy()
    d0 = m.state["d0"].copy()
    step(m, "mvin_acc_s8" if shrunk else "mvin_acc", rows=rows, cols=cols, stride=stride, accumulate=accumulate,
         dram=dram, ac=7)
    want = old.copy()
    for i in range(rows):
        for j in range(cols):
            a = dram + i * stride + j * eb
            x = int(d0[a:a + eb].view(np.int8 if shrunk else "<i4")[0])
            want[7 + i, j] = g_wrap(x + (int(old[7 + i, j]) if accumulate else 0), 32)
    np.testing.assert_array_equal(m.state["acc"], want)


@pytest.mark.parametrize("accumulate", (0, 1))
@pytest.mark.parametrize("seed", range(3))
def test_mvin_acc_bcast(gem: Accelerator, accumulate: int, seed: int) -> None:
    """One int32 row from HBM into every one of ``rows`` accumulator rows (the tiled layers' bias)."""
    rng = np.random.default_rng(seed)
    m = fresh(gem, rng)
    rows, cols = int(rng.integers(1, DIM + 1)), int(rng.integers(1, DIM + 1))
    dram = 1 + int(rng.integers(0, 500))
    m.state["d0"][dram:dram + cols * 4] = mixed32(rng, (cols,)).astype("<i4").view(np.uint8)
    old = m.state["acc"].copy()
    row = m.state["d0"][dram:dram + cols * 4].copy().view("<i4")
    step(m, "mvin_acc_bcast", rows=rows, cols=cols, accumulate=accumulate, dram=dram, ac=9)
    want = old.copy()
    for i in range(rows):
        for j in range(cols):
            want[9 + i, j] = g_wrap(int(row[j]) + (int(old[9 + i, j]) if accumulate else 0), 32)
    np.testing.assert_array_equal(m.state["acc"], want)


@pytest.mark.parametrize("scale", GOLD_SCALES)
@pytest.mark.parametrize("relu", (0, 1))
def test_mvout_acc_scaled(gem: Accelerator, scale: float, relu: int) -> None:
    rng = np.random.default_rng(abs(int(scale * 1000)) * 2 + relu)
    m = fresh(gem, rng)
    # rounding ties: x * scale = k + 0.5 exactly for scale 0.5 / 1.5 and odd x
    m.state["acc"][3, :] = [1, 3, 5, -1, -3, -5, 255, -255, 170, 171, -171, 85, 86, 2 ** 31 - 1, -2 ** 31, 0]
    rows, cols = int(rng.integers(1, DIM + 1)), DIM
    stride = cols + int(rng.integers(0, 5))
    sb = f32_bits(scale)
    old = m.state["d0"].copy()
    src = m.state["acc"].copy()
    step(m, "mvout_acc", rows=rows, cols=cols, stride=stride, scale=sb, relu=relu, ac=3, dram=300)
    want = old.copy()
    for i in range(rows):
        for j in range(cols):
            want[300 + i * stride + j] = np.int8(g_acc_read(int(src[3 + i, j]), sb, relu)).view(np.uint8)
    np.testing.assert_array_equal(m.state["d0"], want)


@pytest.mark.parametrize("raw", (False, True))
def test_mvout_raw(gem: Accelerator, raw: bool) -> None:
    rng = np.random.default_rng(5)
    m = fresh(gem, rng)
    rows, cols = 5, 7
    eb = 4 if raw else 1
    stride = cols * eb + 3
    old = m.state["d0"].copy()
    if raw:
        src = m.state["acc"].copy()
        step(m, "mvout_acc_raw", rows=rows, cols=cols, stride=stride, ac=2, dram=1000)
    else:
        src = m.state["spad"].copy()
        step(m, "mvout_spad", rows=rows, cols=cols, stride=stride, sp=2, dram=1000)
    want = old.copy()
    for i in range(rows):
        row = src[2 + i, :cols].astype("<i4" if raw else np.int8).view(np.uint8)
        want[1000 + i * stride:1000 + i * stride + cols * eb] = row
    np.testing.assert_array_equal(m.state["d0"], want)


@pytest.mark.parametrize("bias", (False, True))
@pytest.mark.parametrize("dest", ("acc", "spad"))
@pytest.mark.parametrize("seed", range(4))
def test_matmul_ws(gem: Accelerator, bias: bool, dest: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = fresh(gem, rng)
    br, bc = int(rng.integers(1, DIM + 1)), int(rng.integers(1, DIM + 1))
    ar, ac = int(rng.integers(1, DIM + 1)), int(rng.integers(1, DIM + 1))
    cr, cc = int(rng.integers(1, DIM + 1)), int(rng.integers(1, DIM + 1))
    if seed == 0:
        m.state["spad"][:64] = -128  # extreme: every product is 2^14
        br = bc = ar = ac = cr = cc = DIM
    spad = m.state["spad"].copy()
    step(m, "preload_ws", rows=br, cols=bc, b=40)
    w = padded(spad[40:40 + br, :bc], DIM)
    assert np.array_equal(m.state["pe"], w)
    a = padded(spad[0:ar, :ac], DIM)
    d = padded(spad[20:20 + cr, :cc], DIM) if bias else np.zeros((DIM, DIM), np.int64)
    res = [[g_wrap(v + int(d[i][j]), 20) for j, v in enumerate(row)] for i, row in enumerate(g_matmul(a, w))]
    name = "matmul_ws" + ("_bias" if bias else "") + "_" + dest
    attrs = {"a_rows": ar, "a_cols": ac, "c_rows": cr, "c_cols": cc, "a": 0, "c": 60}
    if bias:
        attrs["d"] = 20
    old_acc, old_spad = m.state["acc"].copy(), m.state["spad"].copy()
    for flag in (0, 1):
        if dest == "acc":
            step(m, name, **attrs, accumulate=flag)
            want = old_acc.copy()
            for i in range(cr):
                for j in range(cc):
                    want[60 + i, j] = g_wrap(res[i][j] + (int(old_acc[60 + i, j]) if flag else 0), 32)
            np.testing.assert_array_equal(m.state["acc"], want)
            old_acc = want
        else:
            step(m, name, **attrs, relu=flag)
            want = old_spad.copy()
            for i in range(cr):
                for j in range(cc):
                    q = max(-128, min(127, res[i][j]))
                    want[60 + i, j] = max(q, 0) if flag else q
            np.testing.assert_array_equal(m.state["spad"], want)


@pytest.mark.parametrize("seed", range(4))
def test_matmul_os_chain_wraps_20_bits(gem: Accelerator, seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = fresh(gem, rng)
    m.state["spad"][0:16] = -128 if seed == 0 else mixed8(rng, (16, DIM))
    spad = m.state["spad"].copy()
    if seed % 2:
        step(m, "preload_os", rows=9, cols=11, d=100)
        pe = padded(spad[100:109, :11], DIM)
    else:
        step(m, "preload_os_zero")
        pe = np.zeros((DIM, DIM), np.int64)
    a, b = padded(spad[0:DIM, :DIM], DIM), padded(spad[0:DIM, :DIM], DIM)
    for _ in range(40):  # 40 * 16 * 2^14 > 2^19: the chain wraps in the RTL's 20 bits
        step(m, "matmul_os", a_rows=DIM, a_cols=DIM, b_rows=DIM, b_cols=DIM, a=0, b=0)
        p = g_matmul(a, b)
        pe = np.array([[g_wrap(int(pe[i][j]) + p[i][j], 20) for j in range(DIM)] for i in range(DIM)])
    np.testing.assert_array_equal(m.state["pe"], pe)
    if seed == 0:
        assert np.abs(pe).max() < 2 ** 19 and (pe != 40 * 16 * 2 ** 14).all()
    old = m.state["acc"].copy()
    step(m, "store_os_acc", rows=7, cols=13, accumulate=seed % 2, c=10)
    want = old.copy()
    for i in range(7):
        for j in range(13):
            want[10 + i, j] = g_wrap(int(pe[i][j]) + (int(old[10 + i, j]) if seed % 2 else 0), 32)
    np.testing.assert_array_equal(m.state["acc"], want)


@pytest.mark.parametrize("shift", (0, 1, 2, 3, 7, 8, 12, 19, 31))
@pytest.mark.parametrize("relu", (0, 1))
def test_store_os_spad_rounding_shift(gem: Accelerator, shift: int, relu: int) -> None:
    m = Machine(gem)
    rng = np.random.default_rng(shift)
    pe = rng.integers(-(2 ** 19), 2 ** 19, (DIM, DIM))
    ties = [(2 * k + 1) << max(shift - 1, 0) for k in range(-4, 4)]  # exact .5 ties
    pe[0, :8] = ties
    pe[1, :8] = [t + 1 for t in ties]
    pe[2, :6] = [2 ** 19 - 1, -(2 ** 19), 127 << shift, 128 << shift, -(128 << shift), -(129 << shift)]
    pe = np.vectorize(lambda v: g_wrap(int(v), 32))(pe)  # int32 values (shift 31 ties overflow)
    m.state["pe"][:] = pe
    step(m, "store_os_spad", rows=DIM, cols=DIM, shift=shift, relu=relu, c=0)
    for i in range(DIM):
        for j in range(DIM):
            q = max(-128, min(127, g_rshift(int(pe[i][j]), shift)))
            assert m.state["spad"][i, j] == (max(q, 0) if relu else q), (i, j, pe[i][j])


def test_rounding_shift_gold_is_half_even() -> None:
    for s in range(1, 6):
        for x in range(-200, 200):
            assert g_rshift(x, s) == round(x / 2 ** s)


# --------------------------------------------------------------------------------------------
# bad programs
# --------------------------------------------------------------------------------------------

def _run_bad(gem: Accelerator, lines: str) -> str:
    p = parse_asm(".target gemmini\n" + lines)
    with pytest.raises(SimError) as ei:
        simulate(gem, p, [])
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


def test_bad_programs(gem: Accelerator) -> None:
    ok = "mvin_spad(rows=16, cols=16, stride=16, scale=0x3f800000, dram=64, sp=0)\n"
    msg = _run_bad(gem, ok + f"mvin_spad(rows=16, cols=16, stride=16, scale=0x3f800000, dram=64, sp={SPAD_ROWS - 4})\n")
    assert "instruction 1" in msg and str(SPAD_ROWS) in msg
    msg = _run_bad(gem, ok + ok + f"mvout_acc_raw(rows=4, cols=4, stride=16, ac={ACC_ROWS - 1}, dram=64)\n")
    assert "instruction 2" in msg and str(ACC_ROWS) in msg
    msg = _run_bad(gem, ok + "mvin_spad(rows=16, cols=16, stride=8, scale=0x3f800000, dram=64, sp=0)\n")
    assert "instruction 1" in msg and "stride >= cols" in msg
    msg = _run_bad(gem, "mvin_spad(rows=4, cols=4, stride=4, scale=0x3f800000, dram=0, sp=0)\n")
    assert "instruction 0" in msg and "dram >= 1" in msg
    msg = _run_bad(gem, ok + "mvin_weights(rows=1, sp=0)\n")
    assert "instruction 1" in msg and "unknown instruction" in msg
    msg = _run_bad(gem, "mvin_spad(rows=17, cols=16, stride=16, scale=0x3f800000, dram=64, sp=0)\n")
    assert "instruction 0" in msg and "rows=17" in msg
    msg = _run_bad(gem, "mvin_spad(rows=1, cols=1, stride=16, scale=0x7fc00000, dram=64, sp=0)\n")
    assert "scale" in msg
    msg = _run_bad(gem, f"mvout_spad(rows=16, cols=16, stride=16, sp=0, dram={gem.hbm_size - 6})\n")
    assert "instruction 0" in msg and str(gem.hbm_size) in msg


# --------------------------------------------------------------------------------------------
# hand-written programs for the paper's Gemmini kernels
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel", ("gemm", "add", "mac"))
def test_corpus_programs(gem: Accelerator, kernel: str) -> None:
    hlo = PAPER / f"gemmini_{kernel}.hlo"
    if not hlo.exists():
        pytest.skip(f"{hlo} is not present")
    g = parse_hlo(hlo.read_text(), filename=str(hlo))
    p = read_asm(ROOT / "compilers" / "programs" / f"gemmini_{kernel}.asm")
    for seed in range(6):
        x = random_inputs(g, seed, edges=seed % 2 == 1)
        want = evaluate(g, x)
        got = simulate(gem, p, x).outputs
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a.view(np.uint8), b.view(np.uint8)), (kernel, seed)
    # saturating edge: all -128 operands
    x = [np.full((16, 16), -128, np.int8) for _ in g.param_types]
    assert np.array_equal(simulate(gem, p, x).outputs[0], evaluate(g, x)[0])


def test_gemm_program(gem: Accelerator) -> None:
    p = gemm_program(32, 48, 64)
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (32, 48)).astype(np.int8)
    b = rng.integers(-128, 128, (48, 64)).astype(np.int8)
    r = simulate(gem, p, [a, b])
    want = np.clip(a.astype(np.int64) @ b.astype(np.int64), -128, 127).astype(np.int8)
    assert np.array_equal(r.outputs[0], want)
    assert isinstance(p, Program) and r.executed == len(p)


# --------------------------------------------------------------------------------------------
# the search relations (search_where): every α outside them computes what the α inside computes
# --------------------------------------------------------------------------------------------


WS_NAMES = ("matmul_ws_acc", "matmul_ws_spad", "matmul_ws_bias_acc", "matmul_ws_bias_spad")


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, DIM), st.integers(1, DIM), st.integers(1, DIM),
       st.integers(1, DIM))
def test_matmul_os_depths_past_the_other_operand_change_nothing(seed: int, a_rows: int, a_cols: int, b_rows: int,
                                                                 b_cols: int) -> None:
    """The description's claim behind ``a_cols == b_rows``: matmul_os of unequal depths leaves the
    array as the one of depth min(a_cols, b_rows) does (the simulator runs the description)."""
    gem = load_target("gemmini")
    k = min(a_cols, b_rows)
    pes = []
    for ac, br in ((a_cols, b_rows), (k, k)):
        m = fresh(gem, np.random.default_rng(seed))
        step(m, "matmul_os", a_rows=a_rows, a_cols=ac, b_rows=br, b_cols=b_cols, a=0, b=32)
        pes.append(m.state["pe"].copy())
    np.testing.assert_array_equal(pes[0], pes[1])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(WS_NAMES), st.integers(1, DIM), st.integers(1, DIM),
       st.integers(1, DIM), st.integers(1, DIM))
def test_matmul_ws_rows_past_c_rows_change_nothing(seed: int, name: str, a_rows: int, a_cols: int, c_rows: int,
                                                   c_cols: int) -> None:
    """The claim behind ``a_rows <= c_rows``: A's rows past c_rows reach no output row."""
    gem = load_target("gemmini")
    ins = gem.instructions[name]
    outs = []
    for ar in (max(a_rows, c_rows), c_rows):
        m = fresh(gem, np.random.default_rng(seed))
        attrs = {"a_rows": ar, "a_cols": a_cols, "c_rows": c_rows, "c_cols": c_cols, "a": 0, "c": 40}
        attrs |= {"d": 80} if "d" in ins.beta else {}
        attrs |= {"accumulate": seed % 2} if "accumulate" in ins.alpha else {"relu": seed % 2}
        step(m, "preload_ws", rows=DIM, cols=DIM, b=100)
        step(m, name, **attrs)
        outs.append({b: m.state[b].copy() for b in ("spad", "acc")})
    for b in ("spad", "acc"):
        np.testing.assert_array_equal(outs[0][b], outs[1][b])


def test_the_search_keeps_to_its_relations(gem: Accelerator) -> None:
    from compilers.act.phase1.isa_rules import IsaRules

    gen = IsaRules(gem)
    os_alphas = list(gen._candidates(gem.instructions["matmul_os"], {1, 7, 8, 16}))
    assert os_alphas and all(a["a_cols"] == a["b_rows"] for a in os_alphas)
    assert {a["b_rows"] for a in os_alphas} == {a["a_cols"] for a in os_alphas}      # every depth still searched
    for name in WS_NAMES:
        alphas = list(gen._candidates(gem.instructions[name], {1, 7, 8, 16}))
        assert alphas and all(a["a_rows"] <= a["c_rows"] for a in alphas)


def test_a_search_relation_names_only_alpha() -> None:
    acc = build()
    os_ = acc.instructions["matmul_os"]
    acc.instructions["matmul_os"] = replace(os_, search_where=(parse_expr("a == 0"),))      # a: β
    with pytest.raises(IsaError, match="search relation 'a == 0' may relate only alpha attributes"):
        acc.validate()
