"""The Act compiler on AMX (issue 5): the oneDNN kernels K1-K5 compile through the slice^H /
concat^H tiling fallback (compilers/act/tiling.py) and check bit for bit on the simulator (K5's
scale/ReLU/saturate chain through the proven x86 rules of rewrite_rules/x86.py, seen by the
tiling as other forms in the e-graph); byte views of layout chains equal the reference
interpreter."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compilers.act import compile_graph
from compilers.act.check import check_program
from compilers.act.rewrite import IrRules, ProofGate
from compilers.act.terms import lower
from compilers.act.tiling import DC, view_of
from compilers.amx_emit import emit_c
from compilers.targets import load_target
from semantics.hlo_parser import parse_file, parse_hlo
from semantics.interp import evaluate

PAPER = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "paper"

#: kernel -> instructions. K1 is the hand-written amx_k1.asm's 80 (tdpbusd needs B in VNNI
#: layout: 64 instructions re-lay it out through HBM, docs/isa.md); K3 / K4 are one FMA from
#: -0.0 per output row of 16 (the dialect's one-term dot), as the paper's ~100 / ~107. K5 is K1's
#: 80 plus 35 AVX-512 instructions (the paper's 37; test_k5_structure).
EXPECTED = {"amx_k1": 80, "amx_k2": 73, "amx_k3": 100, "amx_k4": 83, "amx_k5": 115}


@pytest.fixture(scope="module")
def amx_rules():  # noqa: ANN201
    acc = load_target("amx")
    return acc, IrRules.for_target(acc, ProofGate(prove_missing=True))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_amx_kernel_compiles_and_checks(name: str, amx_rules, tmp_path) -> None:  # noqa: ANN001
    """First use proves the identities the tiling uses (the f32 one-term dot as an FMA: about a
    minute, then cached under build/proofs)."""
    acc, rules = amx_rules
    g = parse_file(PAPER / f"{name}.hlo")
    res = compile_graph(g, acc, rules=rules)
    prog = res.program
    assert res.stats.tiled
    assert len(prog.instructions) == EXPECTED[name], [c.name for c in prog.instructions]
    chk = check_program(g, acc, prog, 3, seed=7)
    assert chk.ok, chk.message
    # one palette configuration: the emitter accepts the program (it rejects two tile shapes)
    src = emit_c(prog)
    if shutil.which("gcc"):
        c = tmp_path / "k.c"
        c.write_text(src)
        r = subprocess.run(["gcc", "-O2", "-march=sapphirerapids", "-Wall", "-Werror", "-c", str(c),
                            "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_k1_structure(amx_rules) -> None:  # noqa: ANN001
    """K1: 4 tilezero, 4 tdpbusd, 4 tile stores of the output, A loaded once per row block and
    each B tile re-laid out once (16 column loads + 16 row stores) and loaded once."""
    acc, rules = amx_rules
    prog = compile_graph(parse_file(PAPER / "amx_k1.hlo"), acc, rules=rules).program
    names = [c.name for c in prog.instructions]
    assert names.count("tilezero") == 4 and names.count("tdpbusd") == 4
    assert names.count("tileloadd") == 2 + 32 + 2 and names.count("tilestored") == 32 + 4


def test_k5_structure(amx_rules) -> None:  # noqa: ANN001
    """K5: K1's int8 matmul, and per row of the f32[3,16] chain: A * B + C (vmulps, vaddps with a
    memory operand), the exact ReLU (vmaxps against +0.0, vpandd clearing the sign), * D
    (vmulps), the u8 saturation (vmaxps with the value first: NaN -> 0, vminps 255, vcvttps2dq,
    vpmovusdb to HBM)."""
    acc, rules = amx_rules
    prog = compile_graph(parse_file(PAPER / "amx_k5.hlo"), acc, rules=rules).program
    names = [c.name for c in prog.instructions]
    assert names.count("tdpbusd") == 4
    per_row = {"vmulps": 2, "vaddps_mem": 1, "vmaxps": 2, "vpandd": 1, "vminps": 1, "vcvttps2dq": 1,
               "vpmovusdb_store": 1}
    for op, k in per_row.items():
        assert names.count(op) == 3 * k, (op, names.count(op))
    assert "vcvtps2dq" not in names          # rounding to nearest would be wrong: convert truncates


# --- byte views equal the interpreter --------------------------------------------------------

@st.composite
def _chains(draw):  # noqa: ANN202
    dims = [draw(st.integers(1, 4)) for _ in range(3)]
    dt = draw(st.sampled_from(["u8", "s16", "f32"]))
    perm = draw(st.permutations([0, 1, 2]))
    tshape = [dims[p] for p in perm]
    lo = [draw(st.integers(0, d - 1)) for d in tshape]
    hi = [draw(st.integers(a + 1, d)) for a, d in zip(lo, tshape, strict=True)]
    step = [draw(st.integers(1, 2)) for _ in tshape]
    sshape = [len(range(a, b, s)) for a, b, s in zip(lo, hi, step, strict=True)]
    pads = [(draw(st.integers(0, 2)), draw(st.integers(0, 2)), draw(st.integers(0, 1))) for _ in sshape]
    pshape = [lo_ + hi_ + n + max(n - 1, 0) * it for n, (lo_, hi_, it) in zip(sshape, pads, strict=True)]
    bdim = draw(st.integers(1, 3))
    nb = {"u8": 1, "s16": 2, "f32": 4}[dt]

    def s(xs: list[int]) -> str:
        return ",".join(str(x) for x in xs)
    slc = ", ".join(f"[{a}:{b}:{c}]" for a, b, c in zip(lo, hi, step, strict=True))
    pad = "x".join(f"{a}_{b}_{c}" for a, b, c in pads)
    text = f"""HloModule m
ENTRY e {{
  p = {dt}[{s(dims)}] parameter(0)
  t = {dt}[{s(tshape)}] transpose(p), dimensions={{{s(perm)}}}
  sl = {dt}[{s(sshape)}] slice(t), slice={{{slc}}}
  z = {dt}[] constant(0)
  pd = {dt}[{s(pshape)}] pad(sl, z), padding={pad}
  r = {dt}[{s([x for x in pshape][::-1])}] reshape(pd)
  b = {dt}[{bdim},{s(pshape[::-1])}] broadcast(r), dimensions={{1,2,3}}
  ROOT u = u8[{bdim},{s(pshape[::-1])}{"," + str(nb) if nb > 1 else ""}] bitcast-convert(b)
}}"""
    return text, dt, dims


@settings(max_examples=60, deadline=None)
@given(_chains(), st.integers(0, 2**31 - 1))
def test_byte_view_of_a_layout_chain_is_the_interpreter(chain, seed: int) -> None:
    text, dt, dims = chain
    g = parse_hlo(text)
    rng = np.random.default_rng(seed)
    np_dt = {"u8": np.uint8, "s16": np.int16, "f32": np.float32}[dt]
    x = rng.integers(0, 256, size=int(np.prod(dims)) * np.dtype(np_dt).itemsize, dtype=np.uint8)
    x = x.view(np_dt).reshape(dims)
    want = np.asarray(evaluate(g, [x])[0]).tobytes()
    v = view_of(lower(g))
    assert not (v.idx == DC).any()
    src = np.frombuffer(x.tobytes(), dtype=np.uint8).astype(np.int64)
    got = np.where(v.idx >= 0, src[np.maximum(v.idx, 0)], -1 - v.idx).astype(np.uint8).tobytes()
    assert got == want


# --- constants through an elementwise fixed point --------------------------------------------

def _pattern(op: str, dt: str = "f32") -> object:
    """``op(a, a)`` over a parameter (an instruction pattern's shape: lowered, params kept)."""
    return lower(parse_hlo(f"""HloModule m
ENTRY e {{
  a = {dt}[4] parameter(0)
  ROOT y = {dt}[4] {op}(a, a)
}}"""))


@pytest.mark.parametrize("op,value,ok", [
    ("maximum", 0.0, True), ("maximum", 255.0, True), ("minimum", -3.5, True),
    ("add", 0.0, True), ("add", 1.0, False), ("multiply", 2.0, False),
    ("maximum", 1e-40, False),            # DAZ: max(s, s) of a subnormal s is a zero, not s
])
def test_constant_demand_through_a_fixed_point(op: str, value: float, ok: bool) -> None:
    """A demanded constant c is computed by op(a, a) with a = c exactly when op(c, c) = c, bit
    for bit (checked by evaluating the operator)."""
    from compilers.act.tiling import View, match

    pat = _pattern(op)
    data = np.full(4, value, np.float32).view(np.uint8).astype(np.int64)
    binds = match(pat, View(None, -1 - data))
    assert bool(binds) == ok
    if ok:
        (b,) = binds
        assert b[0].base is None and np.array_equal(b[0].idx, -1 - data)
