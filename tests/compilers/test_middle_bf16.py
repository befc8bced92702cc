"""AMX's bf16 GEMM tiles: f32[M,N] dot(bf16[M,K], bf16[K,N]{1,0:T(2,1)}) compiled by the middle end.

The tiled program's outputs equal the blocked-sum model (compilers/targets/amx/bf16_sum.py) bit for
bit on the simulator and on the emulated C (which NaN is not modelled: a NaN matches any NaN), and
the reference interpreter's dot within the model's declared bound, on random, edge-valued and
adversarial operands (cancellation, partial sums near 2^-126, near the f32 maximum); ``accv check``
says which of the two it checked.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compilers.compile import compile
from compilers.errors import Unsupported
from compilers.middle.compile import compile_tiled
from compilers.middle.gemm import layer_graph, recognize
from compilers.middle.gemm_bf16 import PAIRS, layer_graph_bf16, recognize_bf16
from compilers.simulator import simulate
from compilers.targets import load_target
from compilers.targets.amx.bf16_sum import BLOCK, blocked_sum, sum_bound
from semantics.compare import Bound, compare
from semantics.dtypes import DTYPES
from semantics.hlo_parser import parse_hlo
from semantics.hlo_printer import print_hlo
from semantics.types import Layout
from semantics.interp import evaluate

PRIMES = (1, 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67)
sizes = st.one_of(st.sampled_from(PRIMES), st.integers(1, 70))

# bf16 bit patterns of the edge values: +-0, subnormals (smallest, largest), 2^-126 (smallest
# normal), +-inf, quiet and signalling NaNs of both signs, the largest finite values, +-1
EDGES = np.array([0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x8080, 0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81,
                  0x7F7F, 0xFF7F, 0x3F80, 0xBF80], np.uint16)


def _bf16(x: np.ndarray) -> np.ndarray:
    import ml_dtypes

    return np.asarray(x, np.float32).astype(ml_dtypes.bfloat16)


def _draw(rng: np.random.Generator, shape: tuple[int, int], edge_share: float, scale: float = 8.0) -> np.ndarray:
    a = _bf16(rng.standard_normal(shape) * np.exp2(rng.uniform(-scale, scale, shape)))
    bits = a.view(np.uint16).copy()
    mask = rng.random(shape) < edge_share
    bits[mask] = EDGES[rng.integers(0, len(EDGES), int(mask.sum()))]
    return bits.view(a.dtype)


def _compile(m: int, k: int, n: int):  # noqa: ANN202
    graph = layer_graph_bf16(m, k, n)
    res = compile(graph, load_target("amx"))
    assert res.stats.middle
    return graph, res.program


def test_recognizes_the_bf16_layer_and_nothing_else() -> None:
    g = recognize_bf16(layer_graph_bf16(5, 7, 3))
    assert g is not None and (g.m, g.k, g.n, g.dtype, g.out_dtype, g.k_bytes) == (5, 7, 3, "bf16", "f32", 14)
    assert recognize(layer_graph_bf16(5, 7, 3)) is None
    assert recognize_bf16(layer_graph(5, 7, 3)) is None
    f32 = print_hlo(layer_graph_bf16(5, 7, 3)).replace("bf16[", "f32[")
    assert recognize_bf16(parse_hlo(f32)) is None
    bf16_out = print_hlo(layer_graph_bf16(5, 7, 3)).replace("ROOT d = f32[", "ROOT d = bf16[")
    assert recognize_bf16(parse_hlo(bf16_out)) is None
    # Gemmini offers no bf16 tiles: the middle end leaves the kernel to Act
    assert compile_tiled(layer_graph_bf16(40, 40, 40), load_target("gemmini")) is None


def test_b_must_be_in_pair_layout_or_row_major() -> None:
    with pytest.raises(Unsupported, match=r"B \(parameter 1\) must have layout '\{1,0:T\(2,1\)\}'"):
        compile(layer_graph_bf16(20, 40, 20, b_layout=Layout((0, 1), ())), load_target("amx"))
    with pytest.raises(Unsupported, match=r"must have layout '\{1,0:T\(2,1\)\}'"):
        compile(layer_graph_bf16(20, 40, 20, b_layout=Layout((1, 0), (4, 1))), load_target("amx"))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 40), k=st.integers(1, 80), n=st.integers(1, 70), seed=st.integers(0, 3))
def test_row_major_bf16_weights_are_repacked_into_pairs(m: int, k: int, n: int, seed: int) -> None:
    """Row-major B: the program builds the pair layout (vpermt2b) and the result is the blocked
    sum bit for bit, as with pre-packed weights (odd K and N past 32 columns included)."""
    acc = load_target("amx")
    graph = layer_graph_bf16(m, k, n, b_layout=None)
    prog = compile(graph, acc).program
    assert any(c.name == "vpermt2b" for c in prog.instructions)
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(s).astype(np.float32).astype(DTYPES["bf16"].np) for s in ((m, k), (k, n))]
    (got,) = simulate(acc, prog, xs).outputs
    assert np.array_equal(np.asarray(blocked_sum(xs[0], xs[1])).view(np.uint32), np.asarray(got).view(np.uint32))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=sizes, k=sizes, n=sizes, edge_share=st.sampled_from([0.0, 0.0, 0.03, 0.3]), seed=st.integers(0, 2 ** 16))
def test_the_tiled_program_is_the_blocked_sum_bit_for_bit_and_within_the_bound(m: int, k: int, n: int,
                                                                                edge_share: float, seed: int) -> None:
    graph, prog = _compile(m, k, n)
    rng = np.random.default_rng(seed)
    xs = [_draw(rng, (m, k), edge_share), _draw(rng, (k, n), edge_share)]
    (got,) = simulate(load_target("amx"), prog, xs).outputs
    model = blocked_sum(*xs)
    assert model.dtype == np.float32
    same = compare([model], [np.asarray(got)])       # every non-NaN bit, every NaN position
    assert same.within_bound, same.message
    if edge_share == 0.0:
        assert same.identical
    (ref,) = evaluate(graph, xs)
    bound = sum_bound(*xs)
    cmp = compare([ref], [model], [bound])
    assert cmp.within_bound, cmp.message
    # where no partial sum can overflow: NaN exactly where the reference has NaN
    sure = ~np.asarray(bound.anything)
    assert np.array_equal(np.isnan(ref)[sure], np.isnan(model)[sure])
    if edge_share == 0.0:
        assert sure.all()


def test_the_emulated_c_computes_the_blocked_sum() -> None:
    from check.backends import get_backend, unavailable

    if unavailable("amx", "emulated") is not None:
        pytest.skip(unavailable("amx", "emulated"))
    acc = load_target("amx")
    for (m, k, n), share in (((37, 70, 29), 0.03), ((16, 32, 16), 0.3), ((3, 97, 5), 0.0)):
        _, prog = _compile(m, k, n)
        rng = np.random.default_rng(m)
        xs = [_draw(rng, (m, k), share), _draw(rng, (k, n), share)]
        (got,) = get_backend(acc, "emulated").run(prog, xs).outputs
        cmp = compare([blocked_sum(*xs)], [np.asarray(got)])
        assert cmp.within_bound, cmp.message        # NaN vs NaN with other bits: not modelled


def _adversarial(kind: str, rng: np.random.Generator, m: int, k: int, n: int) -> list[np.ndarray]:
    if kind == "cancel":     # pairs x, -x with small terms between: the exact sum is tiny, S large
        a = rng.standard_normal((m, k)) * np.exp2(rng.integers(-20, 20, (m, k)))
        b = np.ones((k, n))
        a[:, 1::2] = -a[:, 0:k - 1:2] if k > 1 else a[:, 1::2]
        b = b + rng.standard_normal((k, n)) * 2.0 ** -8
    elif kind == "tiny":     # products and partial sums around 2^-126: FTZ on both sides
        a = rng.choice([-1.0, 1.0], (m, k)) * np.exp2(rng.uniform(-64, -62, (m, k)))
        b = rng.choice([-1.0, 1.0], (k, n)) * np.exp2(rng.uniform(-65, -62, (k, n)))
    elif kind == "huge":     # partial sums near the f32 maximum (some may overflow on either side)
        a = rng.choice([-1.0, 1.0], (m, k)) * np.exp2(rng.uniform(60, 63.9, (m, k)))
        b = rng.choice([-1.0, 1.0], (k, n)) * np.exp2(rng.uniform(60, 63.9, (k, n)))
    else:                    # all products -0.0: the chains' +0.0 start, and a one-term dot's -0.0
        a = -np.zeros((m, k))
        b = np.abs(rng.standard_normal((k, n)))
    return [_bf16(a), _bf16(b)]


@pytest.mark.parametrize("kind", ["cancel", "tiny", "huge", "negzero"])
@pytest.mark.parametrize("k", [1, 2, 31, 33, 64, 95])
def test_the_bound_holds_on_adversarial_operands(kind: str, k: int) -> None:
    graph = layer_graph_bf16(9, k, 7)
    rng = np.random.default_rng(k)
    xs = _adversarial(kind, rng, 9, k, 7)
    (ref,) = evaluate(graph, xs)
    model = blocked_sum(*xs)
    bound = sum_bound(*xs)
    cmp = compare([ref], [model], [bound])
    assert cmp.within_bound, cmp.message
    if kind == "negzero":
        # same-valued zeros: the blocked sum gives +0.0; the reference -0.0 only for K = 1
        assert not np.signbit(model).any() and np.signbit(ref).all() == (k == 1)


def test_the_bound_is_not_vacuous() -> None:
    """One element moved just past its bound fails; the blocked sum does differ from the chain."""
    rng = np.random.default_rng(5)
    m, k, n = 8, 96, 8
    xs = _adversarial("cancel", rng, m, k, n)
    (ref,) = evaluate(layer_graph_bf16(m, k, n), xs)
    model = blocked_sum(*xs)
    bound = sum_bound(*xs)
    assert not compare([ref], [model]).identical           # the orders do round differently
    assert compare([ref], [model], [bound]).within_bound
    tol = np.asarray(bound.abs_tol)
    bad = ref.astype(np.float64).copy()
    bad[3, 4] += 1.01 * tol[3, 4] + abs(bad[3, 4]) * 2.0 ** -23
    moved = bad.astype(np.float32)
    assert not compare([ref], [moved], [bound]).within_bound
    assert not compare([ref], [model], [Bound(ulps=0, abs_tol=tol * 0)]).within_bound


def test_padding_whole_blocks_keeps_the_sum() -> None:
    """K not a multiple of 32 is the same blocked sum as K padded with +0.0 columns/rows, up to a zero's sign."""
    rng = np.random.default_rng(11)
    a, b = _draw(rng, (6, 45), 0.0), _draw(rng, (45, 4), 0.0)
    pa = np.concatenate([a, _bf16(np.zeros((6, 2 * BLOCK - 45)))], axis=1)
    pb = np.concatenate([b, _bf16(np.zeros((2 * BLOCK - 45, 4)))], axis=0)
    assert np.array_equal(blocked_sum(a, b), blocked_sum(pa, pb))


def test_accv_check_states_the_model_and_the_bound(capsys: pytest.CaptureFixture[str], tmp_path) -> None:  # noqa: ANN001
    from accv.cli import main

    f = tmp_path / "layer.hlo"
    f.write_text(print_hlo(layer_graph_bf16(21, 40, 18)))
    assert main(["check", str(f), "--target", "amx", "--check", "2", "-o", str(tmp_path / "l.asm")]) == 0
    out = capsys.readouterr().out
    assert "blocked bf16 sum" in out and "bit for bit (a NaN matches any NaN) and the reference within its declared bound" in out
    assert "within the declared bound of the reference (max" in out


def test_the_check_rejects_a_program_that_is_not_the_model() -> None:
    """A program whose outputs are the reference's chain (not the blocked sum) fails the check: the
    program carries the blocked-sum contract, and the one comparison rule reads it."""
    from check.policy import Policy, judge

    graph = layer_graph_bf16(8, 96, 8)
    prog = compile(graph, "amx").program
    assert prog.contract.model is not None and not prog.contract.nan_bits
    xs = _adversarial("cancel", np.random.default_rng(5), 8, 96, 8)
    (ref,) = evaluate(graph, xs)
    j = judge([ref], [ref], xs, Policy.of(prog, "sim"))
    assert not j.ok and j.why.startswith("differs from the amx blocked bf16 sum")
    assert judge([ref], [blocked_sum(*xs)], xs, Policy.of(prog, "sim")).ok


def test_pair_layout_constant() -> None:
    assert PAIRS == "{1,0:T(2,1)}"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(m=st.integers(1, 40), k=st.integers(1, 80), n=st.integers(1, 70), seed=st.integers(0, 3))
def test_pytorch_layout_bf16_weights_are_gathered_into_pairs(m: int, k: int, n: int, seed: int) -> None:
    """B stored [N, K]: the pair rows gathered from its rows (odd K included); the blocked sum of
    A and B^T bit for bit."""
    acc = load_target("amx")
    prog = compile(layer_graph_bf16(m, k, n, b_t=True), acc).program
    rng = np.random.default_rng(seed)
    xs = [rng.standard_normal(s).astype(np.float32).astype(DTYPES["bf16"].np) for s in ((m, k), (n, k))]
    (got,) = simulate(acc, prog, xs).outputs
    assert np.array_equal(np.asarray(blocked_sum(xs[0], xs[1].T)).view(np.uint32), np.asarray(got).view(np.uint32))
