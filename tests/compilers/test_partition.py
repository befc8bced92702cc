"""Host partitioning (compilers/partition): the steps of any placement evaluate to the graph, the
partitioner's programs check on every backend, a crafted graph gets its best partition, and the
whole-graph rule stays where asked."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from check.backends import backends_for, unavailable
from check.run import check_program
from compilers.compile import compile
from compilers.errors import Unsupported
from compilers.partition.graphs import GraphView
from compilers.partition.program import Partitioned, walk
from compilers.partition.search import _handed, _Search, objective, plan
from compilers.targets import load_target
from fuzz.opsets import OPSETS
from semantics.gen import random_graph
from semantics.hlo_parser import parse_file, parse_hlo
from semantics.inputs import random_inputs
from semantics.interp import evaluate

CRAFTED = Path(__file__).parent / "data" / "partition_crafted.hlo"


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31 - 1), hosts=st.integers(0, 2**31 - 1))
def test_any_placement_evaluates_to_the_graph(seed: int, hosts: int) -> None:
    """Any host set, the regions formed around it and the steps planned from them give the
    graph's outputs bit for bit when every step is evaluated (the decomposition is exact)."""
    g = random_graph(seed, max_ops=8)
    view = GraphView(g)
    s = _Search(view, lambda _g: None, 1.0)  # type: ignore[arg-type, return-value]
    rng = np.random.default_rng(hosts)
    for n in view.placeable:
        if rng.random() < 0.3:
            s.host[n] = "drawn"
    regions = [tuple(r) for r in s.regions()]
    steps = plan(view, regions)
    assert sorted(n for st_ in steps for n in st_.ops) == sorted(view.placeable)
    p = Partitioned("none", g, tuple(steps), None)  # type: ignore[arg-type]
    xs = random_inputs(g, seed % 1000)
    with np.errstate(all="ignore"):
        want = evaluate(g, xs)
        got, _ = walk(p, xs, lambda step, ins: (evaluate(step.sub.graph, ins), None))
    assert len(got) == len(want) and all(_same(a, b) for a, b in zip(got, want, strict=True))


def _second(target: str) -> list[str]:
    return [b for b in backends_for(target) if b not in ("native",) and unavailable(target, b) is None
            and b != "rtl"]


def _drawn(target: str, generator: str, seed: int):  # noqa: ANN202
    """A random graph for ``target``: a layer chain (fuzz/layers_gen.py: matrix work with host-only
    neighbours) or a semantics.gen graph of the target's campaign operators."""
    if generator == "layers":
        from fuzz.layers_gen import layers_graph

        return layers_graph(target, seed, 4)
    o = OPSETS[(target, max(k for t, k in OPSETS if t == target))]
    return random_graph(seed, ops=o.ops.split(","), dtypes=o.dtypes.split(","), max_ops=6)


@pytest.mark.parametrize("target", ["gemmini", "amx", "qkv"])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), generator=st.sampled_from(["layers", "gen"]))
def test_random_graph_partition_checks_on_every_backend(target: str, seed: int, generator: str) -> None:
    """A random graph, partitioned where the target cannot run it whole, equals the reference (or
    its contract) on the simulator and the target's other backends (rtl in the slow test below)."""
    g = _drawn(target, generator, seed)
    try:
        res = compile(g, target, host=True, proofs="cached")
    except Unsupported:
        assert generator == "gen", "a layer chain always offloads its matrix work"
        return      # nothing of it compiles for the target: the whole-graph rule's exit 3
    v = check_program(g, res.acc, res.program, 2, seed, backend=_second(target))
    assert v.ok, v.reason


@pytest.mark.slow
@pytest.mark.parametrize("target", ["gemmini", "qkv"])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), generator=st.sampled_from(["layers", "gen"]))
def test_random_graph_partition_checks_on_rtl(target: str, seed: int, generator: str) -> None:
    why = unavailable(target, "rtl")
    if why is not None:
        pytest.skip(why)
    g = _drawn(target, generator, seed)
    try:
        res = compile(g, target, host=True, proofs="cached")
    except Unsupported:
        return
    v = check_program(g, res.acc, res.program, 1, seed, backend="rtl")
    assert v.ok, v.reason


def test_crafted_graph_gets_its_best_partition() -> None:
    """dot -> reduce -> broadcast -> dot -> wraparound add on Gemmini: both dots on the array, the
    reduce and the add (no Gemmini instruction computes them) on the host, and the broadcast on the
    accelerator, where 16 bytes (the reduce's row) are handed over instead of its 256-byte
    broadcast. The exhaustive search of the slow test below finds no better placement."""
    g = parse_file(CRAFTED)
    res = compile(g, "gemmini", host=True, proofs="cached")
    p = res.program
    assert isinstance(p, Partitioned)
    s = p.split
    assert (s.macs_acc, s.macs_total) == (8192, 8192)
    assert {h.name for h in s.host} == {"r", "d"}
    assert (s.bytes_to_acc, s.bytes_to_host) == (16, 512)
    assert [st_.kind for st_ in p.steps] == ["accelerator", "host", "accelerator", "accelerator", "host"]
    v = check_program(g, res.acc, p, 3, 0, backend=["sim", "stream"])
    assert v.ok and v.outcome == "pass", v.reason
    assert compile(g, "gemmini", host=True, proofs="cached").program.split == s     # deterministic


@pytest.mark.slow
def test_crafted_partition_is_the_exhaustive_best() -> None:
    """Every placement of the crafted graph's operators (every set partition, every block on
    either side, the accelerator blocks those that compile and order) scored by the objective:
    none beats the partitioner's."""
    g = parse_file(CRAFTED)
    view = GraphView(g)
    acc = load_target("gemmini")
    ops = list(view.placeable)
    compiles: dict[frozenset[str], bool] = {}

    def ok(block: frozenset[str]) -> bool:
        if block not in compiles:
            try:
                compile(view.subgraph(sorted(block, key=view.position.__getitem__), "b").graph, acc, proofs="cached")
                compiles[block] = True
            except Unsupported:
                compiles[block] = False
        return compiles[block]

    def set_partitions(xs: list[str]):  # noqa: ANN202
        if not xs:
            yield []
            return
        first, rest = xs[0], xs[1:]
        for p in set_partitions(rest):
            for k in range(len(p)):
                yield p[:k] + [[first] + p[k]] + p[k + 1:]
            yield [[first]] + p

    best = None
    for blocks in set_partitions(ops):
        for sides in itertools.product((False, True), repeat=len(blocks)):
            regions = [tuple(sorted(b, key=view.position.__getitem__)) for b, on in zip(blocks, sides, strict=True) if on]
            if not all(ok(frozenset(r)) for r in regions):
                continue
            try:
                plan(view, regions)
            except AssertionError:
                continue
            on_acc = {n: k for k, r in enumerate(regions) for n in r}
            score = objective(view, set(on_acc), sum(_handed(view, on_acc)))
            best = score if best is None else max(best, score)
    p = compile(g, acc, host=True, proofs="cached").program
    got = objective(view, {n for s in p.steps if s.accelerator for n in s.ops},
                    p.split.bytes_to_acc + p.split.bytes_to_host)
    assert got == best


def test_whole_graph_rule_without_host() -> None:
    g = parse_file(CRAFTED)
    with pytest.raises(Unsupported, match="no instruction computes"):
        compile(g, "gemmini", proofs="cached")


def test_nothing_to_offload_is_unsupported() -> None:
    """A graph of which no region compiles keeps the compiler's exit 3, with both reasons."""
    g = parse_hlo("""HloModule w
ENTRY e {
  a = s8[16,16] parameter(0)
  b = s8[16,16] parameter(1)
  ROOT c = s8[16,16] add(a, b)
}""")
    with pytest.raises(Unsupported, match="nothing else to offload"):
        compile(g, "gemmini", host=True, proofs="cached")


def test_whole_graph_that_compiles_is_not_partitioned() -> None:
    g = parse_hlo("""HloModule d
ENTRY e {
  a = s8[16,16] parameter(0)
  b = s8[16,16] parameter(1)
  ROOT d = s8[16,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}""")
    assert not isinstance(compile(g, "gemmini", host=True, proofs="cached").program, Partitioned)


def test_a_wrong_hand_over_is_caught() -> None:
    """A planted bug: the first dot step handed its two inputs in the wrong order (x @ w1 run as
    w1 @ x, a parameter-order slip in the hand-over): the check finds the difference."""
    from dataclasses import replace

    g = parse_file(CRAFTED)
    res = compile(g, "gemmini", host=True, proofs="cached")
    p = res.program
    k = next(k for k, s in enumerate(p.steps) if s.accelerator and "a" in s.ops)
    steps = list(p.steps)
    sub = steps[k].sub
    assert len(sub.inputs) == 2
    steps[k] = replace(steps[k], sub=replace(sub, inputs=sub.inputs[::-1]))
    v = check_program(g, res.acc, replace(p, steps=tuple(steps)), 3, 0, backend=["sim"])
    assert v.outcome == "mismatch" and "output 0" in v.reason


def test_withheld_instructions_steer_the_compiler_to_the_other_dataflow() -> None:
    """With Gemmini's weight-stationary instructions withheld the compiler emits the
    output-stationary dataflow (which it never picks while both are on offer), and the program
    checks; a name the target lacks is refused."""
    from collections import Counter

    from fuzz.opsets import GEMMINI_WS

    g = parse_hlo("""HloModule os
ENTRY e {
  a = s8[32,16] parameter(0)
  b = s8[16,16] parameter(1)
  a32 = s32[32,16] convert(a)
  b32 = s32[16,16] convert(b)
  d = s32[32,16] dot(a32, b32), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c = s8[32,16] parameter(2)
  c32 = s32[32,16] convert(c)
  e = s32[32,16] add(d, c32)
  lo = s32[] constant(-128)
  hi = s32[] constant(127)
  f = s32[32,16] clamp(lo, e, hi)
  ROOT g = s8[32,16] convert(f)
}""")
    whole = Counter(c.name for c in compile(g, "gemmini", proofs="cached").program.instructions)
    assert not any(n.endswith("_os") or "_os_" in n for n in whole)
    res = compile(g, "gemmini", proofs="cached", withhold=GEMMINI_WS)
    used = Counter(c.name for c in res.program.instructions)
    assert used["matmul_os"] and used["store_os_acc"] + used["store_os_spad"] and not set(used) & set(GEMMINI_WS)
    v = check_program(g, res.acc, res.program, 3, 0, backend=_second("gemmini"))
    assert v.outcome == "pass", v.reason
    with pytest.raises(ValueError, match="gemmini has no instruction tdpbssd to withhold"):
        compile(g, "gemmini", withhold=("tdpbssd",))


def test_a_clip_before_a_layer_is_cut_off_and_the_layer_stays_whole() -> None:
    """jnp.clip of a uint8 input, then the u8 x s8 layer with its requantizing tail: the whole
    graph fails (the middle end's layer reads a parameter, not a clip) naming the tail's convert;
    the partitioner cuts the compiling contraction tail apart from the clip (not the convert
    apart from its layer), so every operator and every MAC runs on AMX."""
    g = parse_hlo("""HloModule clip_layer
ENTRY e {
  x = u8[16,64] parameter(0)
  lo = u8[] constant(12)
  hi = u8[] constant(191)
  lob = u8[16,64] broadcast(lo), dimensions={}
  hib = u8[16,64] broadcast(hi), dimensions={}
  clip = u8[16,64] clamp(lob, x, hib)
  w = s8[64,64] parameter(1)
  x32 = s32[16,64] convert(clip)
  w32 = s32[64,64] convert(w)
  acc = s32[16,64] dot(x32, w32), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = s32[] constant(0)
  top = s32[] constant(127)
  zb = s32[16,64] broadcast(z), dimensions={}
  topb = s32[16,64] broadcast(top), dimensions={}
  sat = s32[16,64] clamp(zb, acc, topb)
  ROOT y = s8[16,64] convert(sat)
}""")
    res = compile(g, "amx", host=True, proofs="cached")
    p = res.program
    assert isinstance(p, Partitioned) and not p.split.host and p.split.mac_share == 1.0
    assert {"vpmaxub", "vpminub", "tdpbusd"} <= {c.name for c in p.instructions}
    v = check_program(g, res.acc, p, 2, 0, backend=["sim"])
    assert v.outcome == "pass", v.reason


def test_a_saturating_conversion_stays_with_its_clamp() -> None:
    """A bf16 product's f32 result quantized to u8 (``jnp.clip(y, 0, 255).astype(uint8)``): the
    whole graph fails naming the convert; the partitioner keeps the clamp with its conversion
    (AMX's vmaxps, vminps, vcvttps2dq, vpmovusdb_store), not the convert alone on the host, and
    the u8 output, computed from the modelled sum, checks against the model."""
    g = parse_hlo("""HloModule q
ENTRY e {
  x = bf16[16,32] parameter(0)
  w = bf16[32,32] parameter(1)
  y = f32[16,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  lo = f32[] constant(0)
  hi = f32[] constant(255)
  lob = f32[16,32] broadcast(lo), dimensions={}
  hib = f32[16,32] broadcast(hi), dimensions={}
  c = f32[16,32] clamp(lob, y, hib)
  ROOT q = u8[16,32] convert(c)
}""")
    res = compile(g, "amx", host=True, proofs="cached")
    p = res.program
    assert isinstance(p, Partitioned) and not p.split.host
    assert {"tdpbf16ps", "vcvttps2dq", "vpmovusdb_store"} <= {c.name for c in p.instructions}
    for seed in (0, 1):     # edge values too: infinities in the sums
        v = check_program(g, res.acc, p, 1, seed, backend=["sim"])
        assert v.outcome in ("pass", "degenerate"), v.reason


def test_a_residual_add_after_a_host_operator_runs_on_the_accelerator() -> None:
    """``clip(x32 + y32, -128, 127)`` whose x is made on the host (a column sum AMX has no
    instruction for, broadcast back): the whole graph fails naming the last convert; the
    saturating chain through it (both widening converts, the add, the clamp, the narrowing
    convert) is one fused form, so the residual add runs on vpaddsb and only the sum stays on
    the host."""
    g = parse_hlo("""HloModule r
add_s8 {
  a = s8[] parameter(0)
  b = s8[] parameter(1)
  ROOT s = s8[] add(a, b)
}
ENTRY e {
  x = s8[16,64] parameter(0)
  y = s8[16,64] parameter(1)
  z = s8[] constant(0)
  colsum = s8[64] reduce(x, z), dimensions={0}, to_apply=add_s8
  xb = s8[16,64] broadcast(colsum), dimensions={1}
  x32 = s32[16,64] convert(xb)
  y32 = s32[16,64] convert(y)
  s = s32[16,64] add(x32, y32)
  lo = s32[] constant(-128)
  hi = s32[] constant(127)
  lob = s32[16,64] broadcast(lo), dimensions={}
  hib = s32[16,64] broadcast(hi), dimensions={}
  c = s32[16,64] clamp(lob, s, hib)
  ROOT out = s8[16,64] convert(c)
}""")
    res = compile(g, "amx", host=True, proofs="cached")
    p = res.program
    assert isinstance(p, Partitioned)
    assert {h.name for h in p.split.host} <= {"colsum", "xb"}
    assert "vpaddsb" in {c.name for c in p.instructions}
    v = check_program(g, res.acc, p, 2, 0, backend=["sim"])
    assert v.outcome == "pass", v.reason
