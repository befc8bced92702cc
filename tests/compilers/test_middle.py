"""The middle end (compilers/middle): recognition, the tiled form's identities against the
reference interpreter, and tiled Gemmini programs checked bit for bit on the simulator."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compilers.compile import compile
from compilers.errors import Unsupported
from compilers.middle import recognize, tiled_graph
from compilers.middle.compile import compile_tiled
from compilers.middle.gemm import add_tail, layer_graph
from compilers.simulator import simulate
from compilers.targets import load_target
from semantics.build import Builder, tensor
from semantics.hlo_parser import parse_file, parse_hlo
from semantics.hlo_printer import print_hlo
from semantics.inputs import random_inputs
from semantics.interp import evaluate
from semantics.ir import Graph
from semantics.types import TensorType
from tests.compilers.tiled_check import on_backend, tiled_on_sim
from tests.paths import PAPER

PRIMES = (1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)
sizes = st.one_of(st.sampled_from(PRIMES), st.integers(1, 40))
tails = st.sampled_from([(None, False), (1.0, False), (1.0, True), (0.0625, False), (0.1, True), (3 / 16, True)])


def _layer(m: int, k: int, n: int, bias: bool, tail: tuple[float | None, bool]):  # noqa: ANN202
    return layer_graph(m, k, n, bias=bias, scale=tail[0], relu=tail[1])


def test_recognizes_the_layer_forms_and_nothing_else() -> None:
    g = recognize(_layer(5, 7, 3, True, (0.0625, True)))
    assert g is not None and (g.m, g.k, g.n, g.bias, g.tail.scale, g.tail.relu) == (5, 7, 3, 2, 0.0625, True)
    assert recognize(parse_file(PAPER / "gemmini_add.hlo")) is None
    # a clamp to other bounds is not the s8 saturation
    text = print_hlo(layer_graph(4, 4, 4)).replace("constant(-128)", "constant(-100)")
    assert text != print_hlo(layer_graph(4, 4, 4))
    assert recognize(parse_hlo(text)) is None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, k=sizes, n=sizes, bias=st.booleans(), tail=tails,
       bm=st.integers(1, 16), bk=st.integers(1, 16), bn=st.integers(1, 16), seed=st.integers(0, 3))
def test_the_tiled_form_means_what_the_layer_does(m: int, k: int, n: int, bias: bool, tail: tuple, bm: int, bk: int,
                                                  bn: int, seed: int) -> None:
    graph = _layer(m, k, n, bias, tail)
    spec = recognize(graph)
    assert spec is not None
    tiled = tiled_graph(spec, bm, bk, bn)
    xs = random_inputs(graph, seed, edges=bool(seed % 2))
    (want,), (got,) = evaluate(graph, xs), evaluate(tiled, xs)
    assert want.dtype == got.dtype and np.array_equal(want, got)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, k=sizes, n=sizes, bias=st.booleans(), tail=tails, seed=st.integers(0, 3))
def test_tiled_gemmini_programs_check_bit_for_bit(m: int, k: int, n: int, bias: bool, tail: tuple, seed: int) -> None:
    acc = load_target("gemmini")
    graph = _layer(m, k, n, bias, tail)
    res = compile(graph, acc)
    xs = random_inputs(graph, seed, edges=bool(seed % 2))
    (want,) = evaluate(graph, xs)
    (got,) = simulate(acc, res.program, xs).outputs
    assert np.array_equal(want, got)
    assert res.stats.middle == (compile_tiled(graph, acc) is not None)


def test_the_stream_backend_runs_the_same_tiled_program() -> None:
    from check.backends import get_backend

    acc = load_target("gemmini")
    graph = _layer(37, 19, 23, True, (0.0625, True))
    prog = compile(graph, acc).program
    xs = random_inputs(graph, 1, edges=True)
    (want,) = evaluate(graph, xs)
    (got,) = get_backend(acc, "stream").run(prog, xs).outputs
    assert np.array_equal(want, got)


def test_micro_kernels_grow_with_tile_shapes_not_tiles() -> None:
    acc = load_target("gemmini")
    small = compile_tiled(_layer(64, 64, 64, True, (0.0625, True)), acc)
    big = compile_tiled(_layer(256, 256, 256, True, (0.0625, True)), acc)
    edge = compile_tiled(_layer(250, 250, 250, True, (0.0625, True)), acc)
    edge_small = compile_tiled(_layer(106, 106, 106, True, (0.0625, True)), acc)
    assert small is not None and big is not None and edge is not None and edge_small is not None
    assert big.tiles == 16 * small.tiles and big.micro_kernels == small.micro_kernels
    # 250 = 15 * 16 + 10 and 106 = 6 * 16 + 10: the same edge shapes, 4.8x the tiles
    assert edge.tiles > 4 * edge_small.tiles and edge.micro_kernels == edge_small.micro_kernels > small.micro_kernels


def test_the_store_path_takes_the_tail() -> None:
    acc = load_target("gemmini")
    prog = compile(_layer(32, 64, 32, True, (0.0625, True)), acc).program
    stores = [c for c in prog.instructions if c.name.startswith("mvout")]
    assert stores and all(c.name == "mvout_acc" and c.env["relu"] == 1 for c in stores)
    assert {c.name for c in prog.instructions} <= {"mvin_spad", "mvin_acc_bcast", "preload_ws", "matmul_ws_acc", "mvout_acc"}


def test_a_scale_outside_the_store_paths_domain_exits_3() -> None:
    acc = load_target("gemmini")
    with pytest.raises(Unsupported, match="cannot scale by 0.3"):
        compile(_layer(32, 32, 32, False, (0.3, False)), acc)


@pytest.mark.parametrize(("k", "n", "scale", "what"), [(5000, 16, 1.0, "A"), (32, 4100, 1.0, "B"),
                                                       (32, 2000, None, "output")])
def test_rows_further_apart_than_a_moves_stride_domain_exit_3(k: int, n: int, scale: float | None, what: str) -> None:
    """Gemmini's moves take a row stride of 1..4096 bytes (the description's domain, the offer's
    max_stride): a layer whose A, B or raw s32 output rows are further apart exits 3 naming that stride,
    never a program the simulator refuses."""
    acc = load_target("gemmini")
    with pytest.raises(Unsupported, match=rf"the {what} row stride of \d+ bytes is more than a move's 4096"):
        compile(_layer(16, k, n, False, (scale, False)), acc)
    assert compile(_layer(16, 4096, 16, False, (1.0, False)), acc).program.instructions


def test_the_papers_one_block_gemm_stays_acts() -> None:
    acc = load_target("gemmini")
    graph = parse_file(PAPER / "gemmini_gemm.hlo")
    assert compile_tiled(graph, acc) is None


def _vnni(k: int, n: int) -> TensorType:
    """B declared in VNNI layout (AMX's TDPBSSD operand: the weights pre-packed)."""
    return tensor("s8", k, n, layout=(1, 0), tiles=(4, 1))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, k=sizes, n=sizes, bias=st.booleans(), tail=tails, seed=st.integers(0, 3))
def test_tiled_amx_programs_check_bit_for_bit(m: int, k: int, n: int, bias: bool, tail: tuple, seed: int) -> None:
    acc = load_target("amx")
    graph = layer_graph(m, k, n, bias=bias, scale=tail[0], relu=tail[1], b_layout=_vnni(k, n))
    res = compile(graph, acc)
    assert res.stats.middle
    xs = random_inputs(graph, seed, edges=bool(seed % 2))
    (want,) = evaluate(graph, xs)
    (got,) = simulate(acc, res.program, xs).outputs
    assert np.array_equal(want, got)


def test_amx_tiles_use_one_shape_per_tile_and_the_emulated_backend_agrees() -> None:
    """M = 37 and N = 23 take whole and remainder blocks: those tiles stay 16 rows x 64 bytes (a
    remainder multiplies zeros); K = 19 fits in one block: A's tiles are 20 bytes wide (K rounded up
    to a 4-byte group) and B's 5 VNNI rows, not padded to 64 bytes and 16 rows."""
    from check.backends import get_backend, unavailable

    acc = load_target("amx")
    graph = layer_graph(37, 19, 23, bias=True, scale=0.0625, relu=True, b_layout=_vnni(19, 23))
    prog = compile(graph, acc).program
    per_tile: dict[int, set] = {}
    for c in prog.instructions:
        if c.name in ("tileloadd", "tilestored"):
            per_tile.setdefault(c.env["t"], set()).add((c.env["rows"], c.env["colsb"]))
    assert all(len(v) == 1 for v in per_tile.values()), per_tile
    assert set().union(*per_tile.values()) == {(16, 20), (5, 64), (16, 64)}
    assert {(c.env["m"], c.env["k"], c.env["n"]) for c in prog.instructions if c.name == "tdpbssd"} == {(16, 5, 16)}
    if unavailable("amx", "emulated") is not None:
        pytest.skip(unavailable("amx", "emulated"))
    xs = random_inputs(graph, 1, edges=True)
    (want,) = evaluate(graph, xs)
    (got,) = get_backend(acc, "emulated").run(prog, xs).outputs
    assert np.array_equal(want, got)


def test_amx_needs_b_in_vnni_layout_or_row_major() -> None:
    """A column-major B is neither the VNNI layout nor row-major (which the program repacks)."""
    with pytest.raises(Unsupported, match=r"B \(parameter 1\) must have layout '\{1,0:T\(4,1\)\}'"):
        compile(layer_graph(32, 32, 32, b_layout=tensor("s8", 32, 32, layout=(0, 1))), load_target("amx"))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, k=sizes, n=st.one_of(sizes, st.integers(60, 140)), bias=st.booleans(), tail=tails,
       seed=st.integers(0, 3))
def test_amx_repacks_row_major_weights_bit_for_bit(m: int, k: int, n: int, bias: bool, tail: tuple,
                                                   seed: int) -> None:
    """Row-major B (as users keep weights): the program builds the VNNI copy itself (vpermt2b),
    every K and N remainder included (K not a multiple of 4, N past 64 columns)."""
    acc = load_target("amx")
    graph = layer_graph(m, k, n, bias=bias, scale=tail[0], relu=tail[1])
    prog = compile(graph, acc).program
    assert any(c.name == "vpermt2b" for c in prog.instructions)
    xs = random_inputs(graph, seed, edges=bool(seed % 2))
    (want,) = evaluate(graph, xs)
    (got,) = simulate(acc, prog, xs).outputs
    assert np.array_equal(want, got)


def test_amx_repack_on_the_emulated_backend() -> None:
    from check.backends import get_backend, unavailable

    if unavailable("amx", "emulated") is not None:
        pytest.skip(unavailable("amx", "emulated"))
    acc = load_target("amx")
    graph = layer_graph(21, 71, 133, bias=True, scale=0.0625, relu=True)
    prog = compile(graph, acc).program
    xs = random_inputs(graph, 1, edges=True)
    (want,) = evaluate(graph, xs)
    (got,) = get_backend(acc, "emulated").run(prog, xs).outputs
    assert np.array_equal(want, got)


def _attention(rows: int, keys: int = 64) -> str:
    text = open(PAPER / "qkv_attention.hlo").read()
    text = text.split("HloModule", 1)[1].split("\n", 1)[1]    # the entry layout names the 64-row shapes
    for name in ("q", "scores", "scores_exp", "sum_broadcast", "probs", "output"):
        text = text.replace(f"%{name} = bf16[64,64]", f"%{name} = bf16[{rows},64]")
    text = text.replace("%sum = bf16[64]", f"%sum = bf16[{rows}]")
    if keys != 64:
        text = text.replace("%k = bf16[64,64]", f"%k = bf16[{keys},64]").replace(
            "%k_transpose = bf16[64,64]", f"%k_transpose = bf16[64,{keys}]").replace(
            "%v = bf16[64,64]", f"%v = bf16[{keys},64]")
        for name in ("scores", "scores_exp", "sum_broadcast", "probs"):
            text = text.replace(f"%{name} = bf16[{rows},64]", f"%{name} = bf16[{rows},{keys}]")
    return "HloModule attention\n" + text


def test_qkv_attention_of_more_rows_compiles_as_row_blocks() -> None:
    from compilers.middle.rows import row_split

    acc = load_target("qkv")
    graph = parse_hlo(_attention(192))
    split = row_split(graph)
    assert split is not None and split.param == 0 and split.rows == 192
    res = compile(graph, acc)
    assert res.stats.middle and res.stats.micro_kernels == 1
    one = compile(parse_file(PAPER / "qkv_attention.hlo"), acc)
    assert len(res.program) == 3 * len(one.program)
    for seed in (0, 1):
        xs = random_inputs(graph, seed, edges=bool(seed))
        (want,) = evaluate(graph, xs)
        (got,) = simulate(acc, res.program, xs).outputs
        assert np.array_equal(want.view(np.uint16), got.view(np.uint16))


def test_longer_keys_do_not_decompose_exactly_and_exit_3() -> None:
    with pytest.raises(Unsupported, match=r"extent above 64 needs a split contraction or reduction"):
        compile(parse_hlo(_attention(128, keys=128)), load_target("qkv"))


def test_a_kernel_mixing_rows_is_not_split() -> None:
    from compilers.middle.rows import row_split

    assert row_split(parse_hlo(_attention(128))) is not None
    mixed = parse_hlo("HloModule m\nENTRY m {\n  q = bf16[128,64] parameter(0)\n"
                      "  t = bf16[64,128] transpose(q), dimensions={1,0}\n"
                      "  ROOT d = bf16[128,128] dot(q, t), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}\n")
    assert row_split(mixed) is None


def _conv1x1(n: int, h: int, w: int, c: int, k: int, bias: bool, tail: tuple[float | None, bool]) -> Graph:
    """A 1x1 NHWC convolution layer: the GEMM layer's tail on a 1x1 convolution's product."""
    b = Builder("conv1x1")
    b.param("a", 0, tensor("s8", n, h, w, c))
    b.param("b", 1, tensor("s8", 1, 1, c, k))
    b.op("d", "convolution", "a", "b", type=tensor("s32", n, h, w, k), window="{size=1x1}",
         dim_labels="b01f_01io->b01f")
    add_tail(b, "d", (n, h, w, k), k, 3, bias, tail[0], tail[1])
    return b.build()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 2), h=st.integers(1, 7), w=st.integers(1, 7), c=sizes, k=sizes, bias=st.booleans(),
       tail=tails, seed=st.integers(0, 3))
def test_a_1x1_convolution_is_the_gemm_of_its_views_and_compiles(n: int, h: int, w: int, c: int, k: int, bias: bool,
                                                                 tail: tuple, seed: int) -> None:
    conv = _conv1x1(n, h, w, c, k, bias, tail)
    spec = recognize(conv)
    assert spec is not None and (spec.m, spec.k, spec.n) == (n * h * w, c, k)
    xs = random_inputs(conv, seed, edges=bool(seed % 2))
    (want,) = evaluate(conv, xs)
    gemm = _layer(n * h * w, c, k, bias, tail)
    (as_gemm,) = evaluate(gemm, [xs[0].reshape(n * h * w, c), xs[1].reshape(c, k), *xs[2:]])
    assert np.array_equal(want.reshape(n * h * w, k), as_gemm)
    acc = load_target("gemmini")
    (got,) = simulate(acc, compile(conv, acc).program, xs).outputs
    assert np.array_equal(want, got)


def _wrap_dot(m: int, k: int, n: int) -> Graph:
    b = Builder("wrap")
    b.param("a", 0, tensor("s8", m, k))
    b.param("b", 1, tensor("s8", k, n))
    return b.build(b.op("d", "dot", "a", "b", type=tensor("s8", m, n), lhs_contracting_dims=(1,),
                        rhs_contracting_dims=(0,)))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, k=st.one_of(sizes, st.integers(60, 200)), n=sizes, seed=st.integers(0, 3))
def test_wraparound_s8_dot_is_the_low_byte(m: int, k: int, n: int, seed: int) -> None:
    """XLA's s8 x s8 -> s8 dot (sums modulo 256): on AMX tdpbssd's s32 sums and vpmovdb's low
    bytes; on Gemmini the raw int32 block staged in HBM and its low bytes moved in as a column
    (DRAM stride 4) and out as the row."""
    res = tiled_on_sim(_wrap_dot(m, k, n), "amx", seed)
    assert any(c.name == "vpmovdb" for c in res.program.instructions)
    res = tiled_on_sim(_wrap_dot(m, k, n), "gemmini", seed)
    assert any(c.name == "mvout_acc_raw" for c in res.program.instructions)


@pytest.mark.parametrize("backend", ["stream", "rtl"])
def test_wraparound_s8_dot_on_gemmini_runs_on_the_command_stream_and_rtl(backend: str) -> None:
    """The staged low-byte store through the encoder (MVOUT raw, MVIN of one-byte rows at DRAM
    stride 4, MVOUT of one-byte rows): the queue orders the staging's DRAM and scratchpad reuse."""
    on_backend(_wrap_dot(37, 50, 21), "gemmini", backend)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, k=st.one_of(sizes, st.integers(60, 140)), n=st.one_of(sizes, st.integers(15, 70)), bias=st.booleans(),
       tail=tails, seed=st.integers(0, 3))
def test_pytorch_layout_weights_bit_for_bit(m: int, k: int, n: int, bias: bool, tail: tuple, seed: int) -> None:
    """B stored [N, K] and contracted on its last dimension: on AMX tmm7 gathers B's rows as VNNI
    columns (every K % 4, N past one 16-column block); on Gemmini each block is moved in as stored
    and preloaded with B_transpose (non-square blocks at the edges)."""
    graph = layer_graph(m, k, n, bias=bias, scale=tail[0], relu=tail[1], b_t=True)
    tiled_on_sim(graph, "amx", seed)
    res = tiled_on_sim(graph, "gemmini", seed)
    assert any(c.name == "preload_ws_t" for c in res.program.instructions)


@pytest.mark.parametrize("backend", ["stream", "rtl"])
def test_pytorch_layout_on_gemmini_runs_on_the_command_stream_and_rtl(backend: str) -> None:
    """The transposed preload through the encoder (config_ex B_transpose) on the command-stream
    model and the RTL, with non-square edge blocks (K = 37, N = 21): the same bits as the reference."""
    on_backend(layer_graph(20, 37, 21, bias=True, scale=0.0625, relu=True, b_t=True), "gemmini", backend)


def _batched(batch: int, m: int, k: int, n: int, b_t: bool) -> Graph:
    b = Builder("bmm")
    b.param("a", 0, tensor("s8", batch, m, k))
    b.param("b", 1, tensor("s8", batch, n, k) if b_t else tensor("s8", batch, k, n))
    return b.build(b.op("d", "dot", "a", "b", type=tensor("s32", batch, m, n), lhs_batch_dims=(0,), rhs_batch_dims=(0,),
                        lhs_contracting_dims=(2,), rhs_contracting_dims=(2,) if b_t else (1,)))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.integers(1, 4), m=sizes, k=sizes, n=sizes, target=st.sampled_from(["gemmini", "amx"]),
       b_t=st.booleans(), seed=st.integers(0, 3))
def test_batched_dots_are_one_gemm_per_slice(batch: int, m: int, k: int, n: int, target: str, b_t: bool,
                                             seed: int) -> None:
    """jax's einsum("bmk,bkn->bmn") / ("bqd,bkd->bqk"): each slice of the same bytes a GEMM."""
    tiled_on_sim(_batched(batch, m, k, n, b_t), target, seed)


@pytest.mark.parametrize(("m", "k", "n", "b_t", "want"), [
    (1, 64, 40, False, (1, 16, 16)),     # a batch of one: 1-row tiles (GEMV), N past one block
    (3, 12, 5, False, (3, 3, 5)),        # every dimension inside one block
    (1, 36, 5, True, (1, 9, 16)),        # PyTorch-layout weights: B gathered 16 columns at a time
])
def test_amx_layers_smaller_than_a_tile_run_tiles_of_their_size(m: int, k: int, n: int, b_t: bool,
                                                                  want: tuple[int, int, int]) -> None:
    """A dimension that fits in one tile is computed at its size (TileOffer.fitted), so every tdp*
    and tile move has that shape (one tile configuration per program still holds); checked bit for
    bit on the simulator and the emulated C (the hardware's zeroing of rows and bytes past a
    tile's configured shape is the emulation header's, not the padding's)."""
    graph = layer_graph(m, k, n, bias=True, scale=1.0, relu=False, b_layout=None if b_t else _vnni(k, n), b_t=b_t)
    acc = load_target("amx")
    prog = compile(graph, acc).program
    assert {(c.env["m"], c.env["k"], c.env["n"]) for c in prog.instructions if c.name == "tdpbssd"} == {want}
    on_backend(graph, "amx", "sim")
    on_backend(graph, "amx", "emulated")


def test_amx_bf16_layers_fit_and_the_model_follows() -> None:
    """bf16: a K that fits in one tile runs k = ceil(K / 2) pairs, and the program's model is the
    blocked sum in blocks of that size (the chains the program runs): bit for bit on the simulator
    and the emulated C."""
    from check.backends import get_backend, unavailable
    from compilers.middle.gemm_bf16 import layer_graph_bf16
    from compilers.targets.amx.bf16_sum import blocked_sum
    from semantics.dtypes import DTYPES

    graph = layer_graph_bf16(2, 20, 7)
    acc = load_target("amx")
    prog = compile(graph, acc).program
    assert {(c.env["m"], c.env["k"], c.env["n"]) for c in prog.instructions if c.name == "tdpbf16ps"} == {(2, 10, 7)}
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal(s).astype(np.float32).astype(DTYPES["bf16"].np) for s in ((2, 20), (20, 7))]
    want = np.asarray(blocked_sum(*xs, block=20)).view(np.uint32)
    assert np.array_equal(want, np.asarray(simulate(acc, prog, xs).outputs[0]).view(np.uint32))
    if unavailable("amx", "emulated") is None:
        assert np.array_equal(want, np.asarray(get_backend(acc, "emulated").run(prog, xs).outputs[0]).view(np.uint32))
