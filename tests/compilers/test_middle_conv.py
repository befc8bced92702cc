"""Convolution layers through the middle end (compilers/middle/conv.py): recognition of jax's
conv HLO, the taps-as-GEMMs identity against the reference interpreter, and Gemmini programs
checked bit for bit on the simulator (stride 1 and 2, padding 0 and 1, 1x1 and 3x3 windows)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compilers.canon import canonicalize
from compilers.compile import compile
from compilers.errors import Unsupported
from compilers.middle.compile import compile_tiled
from compilers.middle.conv import LABELS, conv_gemm_graph, conv_graph, recognize_conv
from compilers.middle.gemm import add_tail
from compilers.simulator import simulate
from compilers.targets import load_target
from semantics.build import Builder, tensor
from semantics.hlo_parser import parse_file
from semantics.inputs import random_inputs
from semantics.interp import evaluate
from semantics.ir import Graph

tails = st.sampled_from([(None, False), (1.0, False), (1.0, True), (0.0625, False), (3 / 16, True)])
windows = st.sampled_from([(1, 0), (3, 0), (3, 1)])     # (window size, padding): 1x1, 3x3 valid, 3x3 'SAME'


def _conv(n: int, hw: int, c: int, o: int, win: tuple[int, int], stride: int, bias: bool, tail: tuple):  # noqa: ANN202
    k, pad = win
    return conv_graph(n, hw, hw + 1, c, k, o, stride, pad, bias=bias, scale=tail[0], relu=tail[1])


def test_recognizes_jax_conv_hlo_and_not_others() -> None:
    cv = recognize_conv(parse_file("tests/corpus/jax/conv2d_int8/pre.hlo"))
    assert cv is not None and (cv.n, cv.h, cv.w, cv.c, cv.kh, cv.o, cv.oh, cv.tail.raw) == (1, 6, 6, 3, 3, 4, 4, True)
    assert recognize_conv(parse_file("tests/corpus/jax/conv2d_nhwc/pre.hlo")) is None     # f32
    assert recognize_conv(parse_file("tests/corpus/jax/depthwise_conv/pre.hlo")) is None  # feature groups
    assert recognize_conv(parse_file("tests/corpus/jax/conv2d_dilated/pre.hlo")) is None  # dilation
    g = recognize_conv(_conv(2, 7, 5, 9, (3, 1), 2, True, (0.0625, True)))
    assert g is not None and (g.stride, g.pad, g.bias, g.tail.scale, g.tail.relu) == ((2, 2), ((1, 1), (1, 1)), 2,
                                                                                     0.0625, True)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 2), hw=st.integers(1, 9), c=st.integers(1, 20), o=st.integers(1, 20), win=windows,
       stride=st.integers(1, 2), bias=st.booleans(), tail=tails, seed=st.integers(0, 3))
def test_taps_as_gemms_mean_the_convolution(n: int, hw: int, c: int, o: int, win: tuple, stride: int, bias: bool,
                                            tail: tuple, seed: int) -> None:
    if hw + 2 * win[1] < win[0]:
        return
    graph = _conv(n, hw, c, o, win, stride, bias, tail)
    cv = recognize_conv(graph)
    assert cv is not None
    xs = random_inputs(graph, seed, edges=bool(seed % 2))
    (want,), (got,) = evaluate(graph, xs), evaluate(conv_gemm_graph(cv), xs)
    assert want.dtype == got.dtype and np.array_equal(want, got)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hw=st.integers(3, 12), c=st.integers(1, 40), o=st.integers(1, 40), win=windows, stride=st.integers(1, 2),
       bias=st.booleans(), tail=tails, seed=st.integers(0, 3))
def test_conv_gemmini_programs_check_bit_for_bit(hw: int, c: int, o: int, win: tuple, stride: int, bias: bool,
                                                 tail: tuple, seed: int) -> None:
    acc = load_target("gemmini")
    graph = _conv(1, hw, c, o, win, stride, bias, tail)
    res = compile(graph, acc)
    assert res.stats.middle
    xs = random_inputs(graph, seed, edges=bool(seed % 2))
    (want,) = evaluate(graph, xs)
    (got,) = simulate(acc, res.program, xs).outputs
    assert np.array_equal(want, got)


def test_a_wide_layer_runs_on_the_stream_backend_too() -> None:
    from check.backends import get_backend

    acc = load_target("gemmini")
    graph = _conv(2, 18, 35, 40, (3, 1), 1, True, (0.0625, True))   # 20 columns: two row blocks per output row
    prog = compile(graph, acc).program
    xs = random_inputs(graph, 1, edges=True)
    (want,) = evaluate(graph, xs)
    for backend in ("sim", "stream"):
        (got,) = get_backend(acc, backend).run(prog, xs).outputs
        assert np.array_equal(want, got), backend


@pytest.mark.parametrize("hw", [8, 9])
def test_jax_same_padding_at_stride_2_is_asymmetric_and_checks(hw: int) -> None:
    """jax's 'SAME' at stride 2 pads (0, 1) on an even size and (1, 1) on an odd one."""
    acc = load_target("gemmini")
    pad = "0_1x0_1" if hw % 2 == 0 else "1_1x1_1"
    graph = conv_graph(2, hw, hw, 5, 3, 12, 2, 1, bias=True, scale=0.0625, relu=True, pads=pad)
    cv = recognize_conv(graph)
    assert cv is not None and cv.pad == (((0, 1), (0, 1)) if hw % 2 == 0 else ((1, 1), (1, 1)))
    res = compile(graph, acc)
    for seed in (0, 1):
        xs = random_inputs(graph, seed, edges=bool(seed))
        (want,) = evaluate(graph, xs)
        (got,) = simulate(acc, res.program, xs).outputs
        assert np.array_equal(want, got)


def test_micro_kernels_grow_with_shapes_not_positions() -> None:
    acc = load_target("gemmini")
    small = compile_tiled(_conv(1, 16, 16, 16, (3, 1), 1, False, (1.0, False)), acc)
    big = compile_tiled(_conv(4, 16, 16, 16, (3, 1), 1, False, (1.0, False)), acc)
    assert small is not None and big is not None
    assert big.tiles == 4 * small.tiles and big.micro_kernels == small.micro_kernels


def test_a_scale_outside_the_store_paths_domain_exits_3() -> None:
    with pytest.raises(Unsupported, match="cannot scale by 0.3"):
        compile(_conv(1, 5, 3, 4, (3, 1), 1, False, (0.3, False)), load_target("gemmini"))


def test_an_input_window_stride_past_the_stride_domain_exits_3() -> None:
    """The A block of a tap is one strided move of the input row (stride x C bytes apart): past the
    description's 4096 the compile exits 3 naming that stride."""
    with pytest.raises(Unsupported, match=r"the input window row stride of 4200 bytes is more than a move's 4096"):
        compile(_conv(1, 5, 2100, 16, (1, 0), 2, False, (1.0, False)), load_target("gemmini"))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 2), hw=st.integers(1, 9), c=st.sampled_from([2, 3, 16, 17, 33]), win=windows,
       stride=st.integers(1, 2), bias=st.booleans(), tail=tails, seed=st.integers(0, 3))
def test_a_depthwise_layer_is_the_dense_layer_of_its_diagonal_weights(n: int, hw: int, c: int, win: tuple, stride: int,
                                                                      bias: bool, tail: tuple, seed: int) -> None:
    """feature_group_count = C (MobileNet's depthwise layer) equals the dense layer whose weights
    hold each channel's filter on the diagonal (the identity the programs implement), and both
    targets' programs (Gemmini's direct tiling, AMX's im2col GEMM) check bit for bit on sim."""
    k, pad = win
    if hw + 2 * pad < k:
        return
    graph = conv_graph(n, hw, hw + 1, c, k, c, stride, pad, bias=bias, scale=tail[0], relu=tail[1], depthwise=True)
    cv = recognize_conv(graph)
    assert cv is not None and cv.depthwise and cv.macs == cv.m * k * k * c
    xs = random_inputs(graph, seed, edges=bool(seed % 2))
    (want,), (got,) = evaluate(graph, xs), evaluate(conv_gemm_graph(cv), xs)
    assert np.array_equal(want, got)
    from tests.compilers.tiled_check import tiled_on_sim

    for target in ("gemmini", "amx"):
        tiled_on_sim(graph, target, seed)


def test_qkv_leaves_convolutions_to_act() -> None:
    assert compile_tiled(_conv(1, 5, 3, 4, (3, 1), 1, False, (1.0, False)), load_target("qkv")) is None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 2), h=st.integers(1, 11), w=st.integers(1, 13), c=st.sampled_from([1, 3, 5, 17, 64, 67]),
       o=st.integers(1, 37), win=st.sampled_from([(1, "0_0"), (3, "1_1"), (3, "0_2"), (7, "3_3"), (2, "0_1")]),
       stride=st.integers(1, 3), bias=st.booleans(), tail=tails, seed=st.integers(0, 3))
def test_amx_runs_any_convolution_as_the_gemm_of_its_im2col_matrix(n: int, h: int, w: int, c: int, o: int,
                                                                   win: tuple, stride: int, bias: bool, tail: tuple,
                                                                   seed: int) -> None:
    """AMX's tiles read packed copies, so a convolution is the GEMM of its im2col matrix built by
    the pack kernel (windows 1x1 to 7x7, strides 1-3, symmetric and asymmetric padding, prime
    channel counts, pixels whose window is partly padding): bit for bit on sim."""
    k, pad = win
    lo, hi = map(int, pad.split("_"))
    if min(h, w) + lo + hi < k:
        return
    from tests.compilers.tiled_check import tiled_on_sim

    graph = conv_graph(n, h, w, c, k, o, stride, bias=bias, scale=tail[0], relu=tail[1], pads=f"{pad}x{pad}")
    res = tiled_on_sim(graph, "amx", seed)
    assert (k == 1 and stride == 1) or res.program.instructions[0].name != "tileloadd"


def test_an_amx_convolution_runs_on_the_emulated_backend() -> None:
    """The im2col packs and the GEMM in the emitted C: a strided 7x7 'SAME' layer of three input
    channels (ResNet's stem, smaller) equals the reference on the emulated backend."""
    from check.backends import get_backend, unavailable

    if unavailable("amx", "emulated") is not None:
        pytest.skip(unavailable("amx", "emulated"))
    acc = load_target("amx")
    graph = conv_graph(1, 20, 18, 3, 7, 24, 2, 3, bias=True, scale=0.0625, relu=True)
    prog = compile(graph, acc).program
    for seed in (0, 1):
        xs = random_inputs(graph, seed, edges=bool(seed))
        (want,) = evaluate(graph, xs)
        (got,) = get_backend(acc, "emulated").run(prog, xs).outputs
        assert np.array_equal(want, got)


@pytest.mark.parametrize("operand_blocks,acc_blocks", [(8, 4), (3, 2)])
def test_small_buffers_stream_the_weights_and_chunk_the_rows(operand_blocks: int, acc_blocks: int) -> None:
    """Weights that do not fit half the operand buffer are loaded per use (two slots), and rows go
    in several accumulator chunks: the same results with Gemmini's blocks in smaller buffers."""
    from dataclasses import replace

    from compilers.middle.conv import conv_program
    from compilers.targets.gemmini.tiles import TILES

    acc = load_target("gemmini")
    graph = _conv(2, 9, 20, 18, (3, 1), 1, True, (0.0625, True))
    cv = recognize_conv(graph)
    assert cv is not None
    small = replace(TILES, operand_blocks=operand_blocks, acc_blocks=acc_blocks)
    prog, _, _ = conv_program(cv, small, acc.hbm_size, "gemmini")
    full, _, _ = conv_program(cv, TILES, acc.hbm_size, "gemmini")
    loads = [sum(c.name == "preload_ws" for c in p.instructions) for p in (prog, full)]
    assert loads[0] > loads[1]
    xs = random_inputs(graph, 1, edges=True)
    (want,) = evaluate(graph, xs)
    (got,) = simulate(acc, prog, xs).outputs
    assert np.array_equal(want, got)


def _nchw(n: int, h: int, w: int, c: int, k: int, o: int, stride: int, pad: int, bias: bool, tail: tuple,
          xla: bool) -> Graph:
    """A convolution in PyTorch's layouts (NCHW input, OIHW weights, NCHW result) as jax writes it
    (``dim_labels=bf01_oi01->bf01``, the bias broadcast on dimension 1) or, ``xla``, as XLA's
    passes leave it: the operands transposed to NHWC / HWIO, the layer in NHWC, the result
    transposed back."""
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    win = f"size={k}x{k}" + (f" stride={stride}x{stride}" if stride != 1 else "") + (
        f" pad={pad}_{pad}x{pad}_{pad}" if pad else "")
    b = Builder("nchw")
    b.param("x", 0, tensor("s8", n, c, h, w))
    b.param("w", 1, tensor("s8", o, c, k, k))
    if not xla:
        b.op("d", "convolution", "x", "w", type=tensor("s32", n, o, oh, ow), window=f"{{{win}}}",
             dim_labels="bf01_oi01->bf01")
        return b.build(add_tail(b, "d", (n, o, oh, ow), o, 1, bias, tail[0], tail[1]))
    b.op("xt", "transpose", "x", type=tensor("s8", n, h, w, c), dimensions=(0, 2, 3, 1))
    b.op("wt", "transpose", "w", type=tensor("s8", k, k, c, o), dimensions=(2, 3, 1, 0))
    b.op("d", "convolution", "xt", "wt", type=tensor("s32", n, oh, ow, o), window=f"{{{win}}}", dim_labels=LABELS)
    y = add_tail(b, "d", (n, oh, ow, o), o, 3, bias, tail[0], tail[1])
    return b.build(b.op("yt", "transpose", y, type=tensor("s8", n, o, oh, ow), dimensions=(0, 3, 1, 2)))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 2), hw=st.integers(2, 9), c=st.sampled_from([1, 3, 5, 17]), o=st.sampled_from([1, 4, 19]),
       win=windows, stride=st.integers(1, 2), bias=st.booleans(),
       tail=st.sampled_from([(1.0, False), (0.0625, False), (3 / 16, True)]), xla=st.booleans(),
       target=st.sampled_from(["gemmini", "amx"]), seed=st.integers(0, 3))
def test_pytorch_layouts_are_moved_around_the_nhwc_program(n: int, hw: int, c: int, o: int, win: tuple, stride: int,
                                                           bias: bool, tail: tuple, xla: bool, target: str,
                                                           seed: int) -> None:
    """NCHW input, OIHW weights, NCHW result, in jax's and in XLA's spelling: the program moves
    them (transposes, the weights' row permutation) around the NHWC schedule, bit for bit."""
    k, pad = win
    if hw + 2 * pad < k:
        return
    from tests.compilers.tiled_check import tiled_on_sim

    graph = _nchw(n, hw, hw + 1, c, k, o, stride, pad, bias, tail, xla)
    cv = recognize_conv(canonicalize(graph, None).graph)
    assert cv is not None and (cv.layouts == ("bf01", "oi01", "bf01") or 1 in (c, o))  # size-1 moves fold
    tiled_on_sim(graph, target, seed)


@pytest.mark.parametrize(("target", "backend"), [("gemmini", "stream"), ("gemmini", "rtl"), ("amx", "emulated")])
def test_pytorch_layouts_run_on_the_second_backends(target: str, backend: str) -> None:
    from tests.compilers.tiled_check import on_backend

    on_backend(_nchw(1, 7, 9, 17, 3, 19, 1, 1, True, (0.0625, True), False), target, backend)


def test_an_int32_result_in_nchw_exits_3_saying_why() -> None:
    with pytest.raises(Unsupported, match="int32 result in NCHW"):
        compile(_nchw(1, 5, 5, 3, 3, 4, 1, 1, False, (None, False), False), load_target("gemmini"))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hw=st.integers(2, 8), gc=st.sampled_from([(2, 3, 5), (3, 1, 2), (4, 5, 1), (2, 17, 3), (5, 1, 1)]),
       win=windows, stride=st.integers(1, 2), bias=st.booleans(), tail=tails, seed=st.integers(0, 3),
       target=st.sampled_from(["gemmini", "amx"]))
def test_a_grouped_layer_is_the_dense_layer_of_its_block_diagonal_weights(hw: int, gc: tuple, win: tuple, stride: int,
                                                                         bias: bool, tail: tuple, seed: int,
                                                                         target: str) -> None:
    """feature_group_count = G (ResNeXt's grouped convolutions, depthwise with a channel
    multiplier): the dense layer whose weights hold each group's filters in its diagonal block,
    which the program writes with the copy kernel; the identity and the programs bit for bit."""
    groups, cg, og = gc
    k, pad = win
    if hw + 2 * pad < k:
        return
    graph = conv_graph(1, hw, hw + 1, groups * cg, k, groups * og, stride, pad, bias=bias, scale=tail[0],
                       relu=tail[1], groups=groups)
    cv = recognize_conv(graph)
    assert cv is not None and cv.groups == groups and cv.macs == cv.m * k * k * cg * groups * og
    xs = random_inputs(graph, seed, edges=bool(seed % 2))
    (want,), (got,) = evaluate(graph, xs), evaluate(conv_gemm_graph(cv), xs)
    assert np.array_equal(want, got)
    from tests.compilers.tiled_check import tiled_on_sim

    tiled_on_sim(graph, target, seed)
