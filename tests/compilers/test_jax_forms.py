"""Layers drawn in the forms jax writes them (as ``jax.jit(f).lower(...).as_text()`` spells a
quantized linear layer: the bias as reshape -> broadcast -> reshape -> broadcast, ``jnp.clip`` as
``minimum(hi, maximum(lo, x))`` with ``convert``-ed bounds, ``jnp.maximum(y, 0)`` before the clip
or on the int8 result, activations with batch / sequence dimensions, PyTorch-layout weights via a
transpose, chains of layers), through the compiler's one entry, checked bit for bit against the
reference on the graph as drawn."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semantics.build import Builder, tensor
from semantics.ir import Graph
from tests.compilers.tiled_check import tiled_on_sim

PRIMES = (1, 2, 3, 5, 7, 13, 17, 31, 37, 61, 67)
sizes = st.one_of(st.sampled_from(PRIMES), st.integers(1, 80))


def _jax_layer(b: Builder, i: int, x: str, lead: tuple[int, ...], k: int, n: int, *, torch: bool, bias: bool,
               scale: float, relu: str, first_param: int) -> tuple[str, int]:
    """One layer as jax lowers ``clip(round(dot(x, w) + b) * scale), -128, 127).astype(int8)``;
    returns the result's name and the next parameter index."""
    p = first_param
    shape = (*lead, n)
    t = lambda dt: tensor(dt, *shape)  # noqa: E731
    if torch:
        b.param(f"w{i}", p, tensor("s8", n, k))
        w = b.op(f"wt{i}", "transpose", f"w{i}", dimensions=(1, 0))
    else:
        w = b.param(f"w{i}", p, tensor("s8", k, n))
    p += 1
    acc = b.op(f"dot{i}", "dot", x, w, type=t("s32"), lhs_contracting_dims=(len(lead),), rhs_contracting_dims=(0,))
    if bias:
        b.param(f"b{i}", p, tensor("s32", n))
        p += 1
        r1 = b.op(f"bid{i}", "reshape", f"b{i}", type=tensor("s32", *([1] * len(lead)), n))
        b1 = b.op(f"add{i}a", "broadcast", r1, type=tensor("s32", *([1] * len(lead)), n),
                  dimensions=tuple(range(len(lead) + 1)))
        r2 = b.op(f"add{i}b", "reshape", b1, type=tensor("s32", n))
        b2 = b.op(f"add{i}c", "broadcast", r2, type=t("s32"), dimensions=(len(lead),))
        acc = b.op(f"add{i}", "add", acc, b2)
    f = b.op(f"cvt{i}", "convert", acc, type=t("f32"))
    b.const(f"sc{i}", scale, "f32")
    sb = b.op(f"scb{i}", "broadcast", f"sc{i}", type=t("f32"), dimensions=())
    y = b.op(f"rnd{i}", "round-nearest-even", b.op(f"mul{i}", "multiply", f, sb))
    if relu == "before":
        b.const(f"z{i}", 0, "f32")
        y = b.op(f"relu{i}", "maximum", y, b.op(f"zb{i}", "broadcast", f"z{i}", type=t("f32"), dimensions=()))
    b.const(f"lo{i}", -128, "s32")
    b.const(f"hi{i}", 127, "s32")
    lo = b.op(f"lof{i}", "convert", f"lo{i}", type=tensor("f32"))
    hi = b.op(f"hif{i}", "convert", f"hi{i}", type=tensor("f32"))
    lob = b.op(f"lob{i}", "broadcast", lo, type=t("f32"), dimensions=())
    hib = b.op(f"hib{i}", "broadcast", hi, type=t("f32"), dimensions=())
    c = b.op(f"min{i}", "minimum", hib, b.op(f"max{i}", "maximum", lob, y))
    q = b.op(f"q{i}", "convert", c, type=t("s8"))
    if relu == "after":
        b.const(f"z8{i}", 0, "s8")
        q = b.op(f"relu8{i}", "maximum", q, b.op(f"z8b{i}", "broadcast", f"z8{i}", type=t("s8"), dimensions=()))
    return q, p


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, dims=st.lists(sizes, min_size=2, max_size=4), lead=st.sampled_from([(), (2,), (3, 1)]),
       target=st.sampled_from(["gemmini", "amx"]), seed=st.integers(0, 3), data=st.data())
def test_layers_as_jax_writes_them_compile_and_check(m: int, dims: list[int], lead: tuple[int, ...], target: str,
                                                    seed: int, data: st.DataObject) -> None:
    layers = len(dims) - 1
    torch = data.draw(st.lists(st.booleans(), min_size=layers, max_size=layers)) if layers == 1 \
        else [False] * layers
    b = Builder("jax_layer")
    x = b.param("x", 0, tensor("s8", *lead, m, dims[0]))
    p = 1
    for i in range(layers):
        relu = data.draw(st.sampled_from(["none", "before", "after"]))
        scale = data.draw(st.sampled_from([0.0625, 0.1, 1.0, 3 / 16]))
        x, p = _jax_layer(b, i, x, (*lead, m), dims[i], dims[i + 1], torch=torch[i], bias=data.draw(st.booleans()),
                          scale=scale, relu=relu, first_param=p)
    graph = b.build(x)
    tiled_on_sim(graph, target, seed)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, c=sizes, hidden=st.lists(sizes, max_size=1), lead=st.sampled_from([(), (2,)]),
       target=st.sampled_from(["gemmini", "amx"]), relu=st.sampled_from(["none", "clip", "after"]),
       seed=st.integers(0, 3), data=st.data())
def test_a_residual_block_as_jax_writes_it(m: int, c: int, hidden: list[int], lead: tuple[int, ...], target: str,
                                           relu: str, seed: int, data: st.DataObject) -> None:
    """One or two layers, then ``clip(y32 + x32, -128, 127)`` of the block's input (jnp.clip in
    s32, ReLU inside the clip, on the int8 result, or none) and ``astype(int8)``: the residual add
    runs on the accelerator after the tiled layers, bit for bit."""
    dims = [c, *hidden, c]
    b = Builder("jax_residual")
    x0 = x = b.param("x", 0, tensor("s8", *lead, m, c))
    p = 1
    for i in range(len(dims) - 1):
        x, p = _jax_layer(b, i, x, (*lead, m), dims[i], dims[i + 1], torch=False, bias=data.draw(st.booleans()),
                          scale=data.draw(st.sampled_from([0.0625, 1.0])), relu="after", first_param=p)
    t = lambda dt: tensor(dt, *lead, m, c)  # noqa: E731
    s = b.op("skip", "add", b.op("y32", "convert", x, type=t("s32")), b.op("x32", "convert", x0, type=t("s32")))
    b.const("lo", 0 if relu == "clip" else -128, "s32")
    b.const("hi", 127, "s32")
    clip = b.op("rmin", "minimum", b.op("hib", "broadcast", "hi", type=t("s32"), dimensions=()),
                b.op("rmax", "maximum", b.op("lob", "broadcast", "lo", type=t("s32"), dimensions=()), s))
    out = b.op("out", "convert", clip, type=t("s8"))
    if relu == "after":
        b.const("z8", 0, "s8")
        out = b.op("relu", "maximum", out, b.op("z8b", "broadcast", "z8", type=t("s8"), dimensions=()))
    tiled_on_sim(b.build(out), target, seed)


def _jax_residual_alone(shape: tuple[int, ...], relu: str) -> Graph:
    """``jnp.clip(y.astype(int32) + x.astype(int32), lo, 127).astype(int8)`` of two int8
    parameters (lo 0: the ReLU inside the clip; ``after``: ReLU of the int8 result)."""
    b = Builder("jax_residual_alone")
    t = lambda dt: tensor(dt, *shape)  # noqa: E731
    y, x = b.param("y", 0, t("s8")), b.param("x", 1, t("s8"))
    s = b.op("s", "add", b.op("y32", "convert", y, type=t("s32")), b.op("x32", "convert", x, type=t("s32")))
    b.const("lo", 0 if relu == "clip" else -128, "s32")
    b.const("hi", 127, "s32")
    clip = b.op("clip", "clamp", b.op("lob", "broadcast", "lo", type=t("s32"), dimensions=()), s,
                b.op("hib", "broadcast", "hi", type=t("s32"), dimensions=()))
    out = b.op("out", "convert", clip, type=t("s8"))
    if relu == "after":
        b.const("z8", 0, "s8")
        out = b.op("relu", "maximum", out, b.op("z8b", "broadcast", "z8", type=t("s8"), dimensions=()))
    return b.build(out)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.sampled_from([(16, 64), (23, 64), (1, 19), (2, 8, 19), (3, 130)]),
       relu=st.sampled_from(["none", "clip", "after"]), seed=st.integers(0, 3))
def test_a_residual_add_alone_runs_on_amx_byte_adds(shape: tuple[int, ...], relu: str, seed: int) -> None:
    """The saturating residual add of two int8 tensors alone (a region the partitioner cuts out of
    a ResNet block): AMX's vpaddsb, a tile-only instruction, through the middle end, bit for bit."""
    res = tiled_on_sim(_jax_residual_alone(shape, relu), "amx", seed)
    assert {c.name for c in res.program.instructions} >= {"vpaddsb"}


def test_a_residual_add_alone_stays_acts_on_gemmini() -> None:
    from compilers.compile import compile
    from compilers.middle.compile import compile_tiled
    from compilers.targets import load_target

    g = _jax_residual_alone((32, 8), "none")
    assert compile_tiled(g, load_target("gemmini")) is None
    res = compile(g, "gemmini")
    assert not res.stats.middle
    assert [c.name for c in res.program.instructions].count("mvin_acc_s8") == 2


def test_a_residual_add_alone_on_the_amx_emulation() -> None:
    from tests.compilers.tiled_check import on_backend

    on_backend(_jax_residual_alone((23, 64), "after"), "amx", "emulated")


@pytest.mark.parametrize("form", ["pre", "post"])
def test_jax_softmax_attention_on_qkv_exits_3_naming_the_row_maximum(form: str) -> None:
    """jax.nn.softmax subtracts the row maximum and sums in f32: not QKV's softmax instruction
    (exp(x) / bf16 sum, no maximum), so the kernel exits 3 naming the reduce(maximum) QKV cannot
    compute, before and after XLA's passes (which move it into a fusion)."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from compilers.compile import compile
    from compilers.errors import Unsupported
    from semantics.hlo_parser import parse_hlo

    def attention(q, k, v):  # noqa: ANN001, ANN202
        return jnp.matmul(jax.nn.softmax(jnp.matmul(q, k.T), axis=-1), v)

    args = [jax.ShapeDtypeStruct((64, 64), jnp.bfloat16)] * 3
    lowered = jax.jit(attention).lower(*args)
    text = lowered.as_text(dialect="hlo") if form == "pre" else lowered.compile().as_text()
    with pytest.raises(Unsupported, match=r"no instruction computes reduce\(maximum\) on bf16\[64\] .*row maximum"):
        compile(parse_hlo(text), "qkv")


@pytest.mark.parametrize("m,k,n,scale,form", [(16, 64, 16, 0.05, "pre"), (23, 64, 19, 0.05, "post"),
                                                (7, 128, 32, None, "pre"), (2, 64, 16, None, "post")])
def test_a_layer_with_a_uint8_result_as_jax_writes_it(m: int, k: int, n: int, scale: float | None, form: str) -> None:
    """``jnp.clip(y, 0, 255).astype(jnp.uint8)`` (the int32 clip) or of ``jnp.round(y * scale)``:
    u8 activations for the next u8 x s8 layer. AMX's store narrows with unsigned saturation
    (``vpmovusdb_store`` for a tile row of 16, ``vpmovusdb`` and a masked store for a narrower
    remainder), bit for bit on
    the simulator and the emulation; Gemmini's store saturates to s8, so it exits 3 saying so."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import numpy as np

    from compilers.compile import compile
    from compilers.errors import Unsupported
    from semantics.hlo_parser import parse_hlo
    from tests.compilers.tiled_check import on_backend

    def layer(x, w, b):  # noqa: ANN001, ANN202
        y = jax.lax.dot_general(x, w, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32) + b
        if scale is not None:
            return jnp.clip(jnp.round(y * jnp.float32(scale)), 0, 255).astype(jnp.uint8)   # f32 under x64 too
        return jnp.clip(y, 0, 255).astype(jnp.uint8)

    args = [jax.ShapeDtypeStruct((m, k), jnp.int8), jax.ShapeDtypeStruct((k, n), jnp.int8),
            jax.ShapeDtypeStruct((n,), jnp.int32)]
    lowered = jax.jit(layer).lower(*args)
    g = parse_hlo(lowered.as_text(dialect="hlo") if form == "pre" else lowered.compile().as_text())
    res = tiled_on_sim(g, "amx", 1)
    names = {c.name for c in res.program.instructions}
    assert ("vpmovusdb_store" in names) == (n >= 16) and ("vpmovusdb" in names) == (n % 16 != 0)
    assert "vpsubb" not in names
    on_backend(g, "amx", "emulated", seeds=(0,))
    if form == "pre":
        with pytest.raises(Unsupported, match="no way to write a u8 result"):
            compile(g, "gemmini")
    del np


def test_a_layer_with_threefry_noise_parses_and_means_what_jax_computes() -> None:
    """A quantization-library layer (stochastic rounding by jax.random's threefry, calls within
    calls) in both dump forms: it parses (the call inliner keeps every callee's root in scope) and
    the reference interpreter gives jax's own result bit for bit."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    import numpy as np

    from semantics.hlo_parser import parse_hlo
    from semantics.interp import evaluate

    def layer(x, w, key):  # noqa: ANN001, ANN202
        noise = jax.random.uniform(jax.random.wrap_key_data(key), x.shape, minval=-0.5, maxval=0.5)
        xq = jnp.clip(jnp.round(x / 0.05 + noise), -128, 127).astype(jnp.int8)
        y = jax.lax.dot_general(xq, w, (((1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
        return jnp.clip(jnp.round(y * 0.01), -128, 127).astype(jnp.int8)

    rng = np.random.default_rng(0)
    args = (rng.normal(size=(16, 32)).astype(np.float32), rng.integers(-128, 128, (32, 8)).astype(np.int8),
            np.array([7, 42], np.uint32))
    lowered = jax.jit(layer).lower(*args)
    want = np.asarray(jax.jit(layer)(*args))
    for text in (lowered.as_text(dialect="hlo"), lowered.compile().as_text()):
        (got,) = evaluate(parse_hlo(text), list(args))
        assert np.array_equal(want, got)


def _u8_layer(lead: tuple[int, ...], m: int, k: int, n: int, torch: bool, bias: bool, scale: float | None,
              relu: bool) -> Builder:
    """A layer of unsigned activations as jax writes ``dot(x.astype(int32), w.astype(int32))`` of
    ``x`` u8 (after a ReLU, quantized with a zero point of 0) and ``w`` s8, then the tail."""
    from compilers.middle.gemm import add_tail

    b = Builder("jax_u8_layer")
    b.param("x", 0, tensor("u8", *lead, m, k))
    b.param("w", 1, tensor("s8", n, k) if torch else tensor("s8", k, n))
    x32 = b.op("x32", "convert", "x", type=tensor("s32", *lead, m, k))
    w32 = b.op("w32", "convert", "w", type=tensor("s32", n, k) if torch else tensor("s32", k, n))
    d = b.op("d", "dot", x32, w32, type=tensor("s32", *lead, m, n), lhs_contracting_dims=(len(lead) + 1,),
             rhs_contracting_dims=(1 if torch else 0,))
    add_tail(b, d, (*lead, m, n), n, len(lead) + 1, bias, scale, relu)
    return b


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, k=sizes, n=sizes, lead=st.sampled_from([(), (2,)]), torch=st.booleans(), bias=st.booleans(),
       tail=st.sampled_from([(None, False), (1.0, False), (0.0625, True), (3 / 16, False)]), seed=st.integers(0, 3))
def test_unsigned_activations_take_amx_tdpbusd_tiles(m: int, k: int, n: int, lead: tuple[int, ...], torch: bool,
                                                     bias: bool, tail: tuple[float | None, bool], seed: int) -> None:
    """A u8 x s8 layer (oneDNN's u8s8s32) is the middle end's on AMX: TDPBUSD tiles, bit for bit
    (edge inputs on odd seeds hold bytes >= 128, which a signed product would read negative)."""
    res = tiled_on_sim(_u8_layer(lead, m, k, n, torch, bias, *tail).build(), "amx", seed)
    names = {i.name for i in res.program.instructions}
    assert "tdpbusd" in names and "tdpbssd" not in names


def test_a_signed_product_of_unsigned_activations_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted bug: the u8 offer's product TDPBSSD (activations read as signed) must fail the check."""
    import dataclasses

    from compilers.targets.amx import tiles

    bad = tiles._mul_with("tdpbssd")
    u8 = dataclasses.replace(tiles.GEMM_TILES_U8, mul=bad,
                             row_major_b=dataclasses.replace(tiles.GEMM_TILES_U8.row_major_b, mul=bad))
    monkeypatch.setattr(tiles, "GEMM_TILES", dataclasses.replace(tiles.GEMM_TILES, others=(tiles.GEMM_TILES_BF16, u8)))
    with pytest.raises(AssertionError):
        tiled_on_sim(_u8_layer((), 23, 40, 19, False, False, None, False).build(), "amx", 1)


def _jax_gate(lead: tuple[int, ...], m: int, k1: int, k2: int, n: int, bias: bool, clip: str) -> Builder:
    """An RNN cell's gate as jax writes ``clip(x @ Wx + h @ Wh (+ b), lo, 127).astype(int8)`` in int32
    (``clip`` "sat": lo = -128; "relu": lo = 0, a ReLU inside the clip; "raw": the int32 sum)."""
    b = Builder("jax_gate")
    shape = (*lead, m, n)
    t = lambda dt: tensor(dt, *shape)  # noqa: E731
    b.param("x", 0, tensor("s8", *lead, m, k1))
    b.param("wx", 1, tensor("s8", k1, n))
    b.param("h", 2, tensor("s8", *lead, m, k2))
    b.param("wh", 3, tensor("s8", k2, n))
    c = len(lead) + 1
    dx = b.op("dx", "dot", "x", "wx", type=t("s32"), lhs_contracting_dims=(c,), rhs_contracting_dims=(0,))
    dh = b.op("dh", "dot", "h", "wh", type=t("s32"), lhs_contracting_dims=(c,), rhs_contracting_dims=(0,))
    acc = b.op("z", "add", dx, dh)
    if bias:
        b.param("b", 4, tensor("s32", n))
        acc = b.op("zb", "add", acc, b.op("bb", "broadcast", "b", type=t("s32"), dimensions=(c,)))
    if clip == "raw":
        return b
    b.const("lo", 0 if clip == "relu" else -128, "s32")
    b.const("hi", 127, "s32")
    lo = b.op("lob", "broadcast", "lo", type=t("s32"), dimensions=())
    hi = b.op("hib", "broadcast", "hi", type=t("s32"), dimensions=())
    b.op("q", "convert", b.op("cl", "minimum", hi, b.op("mx", "maximum", lo, acc)), type=t("s8"))
    return b


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, k1=sizes, k2=sizes, n=sizes, lead=st.sampled_from([(), (2,)]), bias=st.booleans(),
       clip=st.sampled_from(["sat", "relu", "raw"]), target=st.sampled_from(["gemmini", "amx"]), seed=st.integers(0, 3))
def test_an_rnn_gate_as_jax_writes_it_is_one_gemm(m: int, k1: int, k2: int, n: int, lead: tuple[int, ...], bias: bool,
                                                 clip: str, target: str, seed: int) -> None:
    """``x @ Wx + h @ Wh (+ b)`` then the clip (compilers/middle/gates.py): the GEMM of [x | h] and
    [Wx ; Wh], bit for bit, sizes past one block and primes included (a gate of two one-block
    products is Act's on Gemmini)."""
    graph = _jax_gate(lead, m, k1, k2, n, bias, clip).build()
    if target == "gemmini" and not lead and m == k1 == k2 == n == 16:
        return      # Act's (gates.gate_takes)
    tiled_on_sim(graph, target, seed)       # (asserts the middle end tiled it)


def test_a_gate_whose_second_activations_land_on_the_first_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planted bug: h copied over x's columns (``[h | ?]`` instead of ``[x | h]``) must fail the check."""
    from compilers.middle import gates

    graph = _jax_gate((), 23, 20, 12, 19, False, "raw").build()
    tiled_on_sim(graph, "gemmini", 1)           # the real program passes
    real = gates._a_parts
    monkeypatch.setattr(gates, "_a_parts", lambda gate, a1, a2: [(src, k, 0) for src, k, _ in real(gate, a1, a2)])
    with pytest.raises(AssertionError):
        tiled_on_sim(graph, "gemmini", 1)
