"""The pipelined order of tiled Gemmini programs (compilers/middle/schedule.py, ``overlap``): the
instruction list keeps each accumulator's meaning (checked by replaying accumulator ownership over
the emitted instructions) and each operand slot's (replaying the scratchpad: every store writes
the same sums of loaded blocks as the loop-nest order), loads the first chunk just in time, puts
background work between multiplies, and layers of several chunks check bit for bit on the
simulator."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from compilers.middle import recognize
from compilers.middle.gemm import layer_graph
from compilers.middle.schedule import plan, tile_program
from compilers.program import Concrete, Program
from compilers.simulator import simulate
from compilers.targets import load_target
from compilers.targets.gemmini.tiles import TILES
from semantics.inputs import random_inputs
from semantics.interp import evaluate

COMPUTE = ("preload_ws", "matmul_ws_acc")


def _program(m: int, k: int, n: int, bias: bool, offer: object = TILES, scale: float | None = 0.0625,
             relu: bool = True) -> tuple[object, Program, object]:
    graph = layer_graph(m, k, n, bias=bias, scale=scale, relu=relu)
    g = recognize(graph)
    assert g is not None
    p = plan(g, offer, load_target("gemmini").hbm_size)  # type: ignore[arg-type]
    return graph, tile_program(p, offer, "gemmini")[0], p  # type: ignore[arg-type]


def _accumulators_keep_their_meaning(instrs: tuple[Concrete, ...], kt: int) -> int:
    """Replay accumulator-row ownership: every store reads rows whose tile has had all ``kt``
    multiplies (after its bias or first overwrite) and was not stored yet; nothing writes a row
    whose value is not stored yet; at the end every written row was stored. Returns the stores."""
    live: dict[int, list] = {}           # acc row -> [multiplies since the tile started, stored]
    stores = 0

    def start(rows: range, count: int, at: int) -> None:
        for row in rows:
            assert row not in live or live[row][1], f"instruction {at} overwrites unstored accumulator row {row}"
            live[row] = [count, False]

    for at, c in enumerate(instrs):
        e = c.env
        if c.name in ("mvin_acc", "mvin_acc_bcast"):
            start(range(e["ac"], e["ac"] + e["rows"]), 0, at)
        elif c.name == "matmul_ws_acc":
            rows = range(e["c"], e["c"] + e["c_rows"])
            if e["accumulate"]:
                for row in rows:
                    assert row in live and not live[row][1], f"instruction {at} adds to a stored row {row}"
                    live[row][0] += 1
            else:
                start(rows, 1, at)
        elif c.name.startswith("mvout_acc"):
            for row in range(e["ac"], e["ac"] + e["rows"]):
                assert row in live and not live[row][1], f"instruction {at} stores row {row} twice or unwritten"
                assert live[row][0] == kt, f"instruction {at} stores row {row} after {live[row][0]} of {kt} products"
                live[row][1] = True
            stores += 1
    assert all(s for _, s in live.values()), "an accumulator row was never stored"
    return stores


def _products(instrs: tuple[Concrete, ...]) -> dict[int, tuple]:
    """Replay the operand slots: each ``mvin_spad`` tags the scratchpad rows it writes with its
    DRAM address; every ``preload_ws`` and ``matmul_ws_acc`` must find its block's rows all
    written by one load (emitted since any other use of those rows), and each accumulator row
    collects the (A tag, B tag) products (after its bias row's tag) up to its store. Returns, per
    stored DRAM address, the sequence of terms the store wrote: equal for two programs means the
    same loads reach the same multiplies and stores, whatever the order and slots."""
    spad: dict[int, int] = {}
    acc: dict[int, list] = {}
    weights = None
    stored: dict[int, tuple] = {}

    def block(at: int, start: int, rows: int) -> int:
        tags = {spad.get(r) for r in range(start, start + rows)}
        assert len(tags) == 1 and None not in tags, f"instruction {at} reads rows {start}.. not loaded by one load"
        return tags.pop()  # type: ignore[return-value]

    for at, c in enumerate(instrs):
        e = c.env
        if c.name == "mvin_spad":
            for r in range(e["sp"], e["sp"] + e["rows"]):
                spad[r] = e["dram"]
        elif c.name == "preload_ws":
            weights = block(at, e["b"], e["rows"])
        elif c.name == "matmul_ws_acc":
            term = (block(at, e["a"], e["a_rows"]), weights)
            for r in range(e["c"], e["c"] + e["c_rows"]):
                acc[r] = acc[r] + [term] if e["accumulate"] else [term]
        elif c.name == "mvin_acc":
            acc[e["ac"]] = [("bias", e["dram"])]
        elif c.name == "mvin_acc_bcast":
            for r in range(e["ac"], e["ac"] + e["rows"]):
                acc[r] = [("bias", e["dram"])]
        elif c.name.startswith("mvout_acc"):
            for r in range(e["rows"]):
                stored[e["dram"] + r * e["stride"]] = tuple(acc[e["ac"] + r])
    return stored


def _longest_background_run(instrs: tuple[Concrete, ...]) -> int:
    """The longest run of non-compute instructions between the first and the last multiply."""
    at = [i for i, c in enumerate(instrs) if c.name in COMPUTE]
    run = best = 0
    for c in instrs[at[0]:at[-1] + 1]:
        run = 0 if c.name in COMPUTE else run + 1
        best = max(best, run)
    return best


def test_the_large_gemm_keeps_work_between_its_multiplies() -> None:
    _, prog, p = _program(12544, 64, 256, False, scale=1.0, relu=False)
    assert p.chunk == 32 and p.panels == 2 and p.b_resident
    instrs = prog.instructions
    assert _accumulators_keep_their_meaning(instrs, 4) == 784 * 16
    # one deferred store and one next-panel load at most after each multiply; only the last
    # column block's stores follow the last multiply
    assert _longest_background_run(instrs) <= 2
    last = max(i for i, c in enumerate(instrs) if c.name in COMPUTE)
    assert [c.name for c in instrs[last + 1:]] == ["mvout_acc"] * 16
    # the second chunk's panel (region 2) is loaded between the first chunk's multiplies
    first_mul = next(i for i, c in enumerate(instrs) if c.name in COMPUTE)
    panel2 = 64 * 16 + 32 * 4 * 16
    loads2 = [i for i, c in enumerate(instrs) if c.name == "mvin_spad" and c.env["sp"] == panel2]
    assert loads2 and loads2[0] > first_mul


# offers with a small accumulator (chunks of 4 row blocks): two panels; one panel; one A block per
# chunk with B per use; A and B per use
OFFERS = {"two panels": dataclasses.replace(TILES, acc_blocks=8),
          "one panel": dataclasses.replace(TILES, acc_blocks=8, operand_blocks=20),
          "B per use": dataclasses.replace(TILES, acc_blocks=8, operand_blocks=6),
          "A and B per use": dataclasses.replace(TILES, acc_blocks=8, operand_blocks=4)}


@pytest.mark.parametrize("name", OFFERS)
@pytest.mark.parametrize("bias", [False, True])
def test_several_chunks_and_an_odd_number_of_column_blocks_check_bit_for_bit(name: str, bias: bool) -> None:
    offer = OFFERS[name]
    # 171 = 10 * 16 + 11 rows: 11 row blocks in chunks 4, 4, 3 (or smaller); 3 column blocks, 3 contraction blocks
    graph, prog, p = _program(171, 40, 40, bias, offer)
    assert -(-11 // p.chunk) >= 3
    assert p.panels == (2 if name == "two panels" else 1)
    assert _accumulators_keep_their_meaning(prog.instructions, 3) == 11 * 3
    if name == "two panels" and not bias:
        assert _longest_background_run(prog.instructions) <= 2
    acc = load_target("gemmini")
    for seed in (0, 1):
        xs = random_inputs(graph, seed, edges=bool(seed))
        (want,) = evaluate(graph, xs)
        (got,) = simulate(acc, prog, xs).outputs
        assert np.array_equal(want, got)


def test_a_short_last_chunk_flushes_the_deferred_stores() -> None:
    """Chunks of 4, 4 and 1 row blocks, one contraction block: the first column block of the last
    chunk has one multiply for four deferred stores, so three are flushed at its end, before the
    next column block writes their accumulators."""
    graph, prog, p = _program(16 * 8 + 5, 10, 40, True, OFFERS["two panels"])
    assert p.chunk == 4 and p.panels == 2
    assert _accumulators_keep_their_meaning(prog.instructions, 1) == 9 * 3
    xs = random_inputs(graph, 1, edges=True)
    (want,) = evaluate(graph, xs)
    (got,) = simulate(load_target("gemmini"), prog, xs).outputs
    assert np.array_equal(want, got)


def test_without_overlap_the_order_is_the_loop_nest() -> None:
    """A target without ``overlap`` (AMX's case) gets each column block's stores right after its
    multiplies and one A panel."""
    offer = dataclasses.replace(TILES, acc_blocks=8, overlap=False)
    _, prog, p = _program(171, 40, 40, False, offer)
    assert p.panels == 1
    names = [c.name for c in prog.instructions]
    assert _accumulators_keep_their_meaning(prog.instructions, 3) == 33
    # chunks of 4, 4, 3 row blocks, each column block's stores in one run
    runs, run = [], 0
    for nm in names + [""]:
        if nm.startswith("mvout"):
            run += 1
        elif run:
            runs, run = runs + [run], 0
    assert runs == [4] * 3 + [4] * 3 + [3] * 3


SHAPES = [(64, 64, 64, False, 0.0625, True), (40, 37, 50, True, 0.0625, True), (17, 100, 33, True, None, False),
          (33, 20, 70, False, None, False), (256, 48, 16, True, 1.0, False), (16, 16, 16, False, 1.0, True)]


@pytest.mark.parametrize("m, k, n, bias, scale, relu", SHAPES)
def test_just_in_time_first_loads_feed_the_same_products_and_check_bit_for_bit(
        m: int, k: int, n: int, bias: bool, scale: float | None, relu: bool) -> None:
    """Gemmini's offer (B resident): the first chunk's loads sit among its multiplies, every
    multiply reads blocks its own loads wrote, and each store writes the same sums of products as
    the loop-nest order (no ``overlap``) does; the program is the same instructions reordered, and
    the simulator agrees with the reference bit for bit."""
    graph, prog, p = _program(m, k, n, bias, scale=scale, relu=relu)
    _, nest, _ = _program(m, k, n, bias, dataclasses.replace(TILES, overlap=False), scale=scale, relu=relu)
    assert p.b_resident and p.a_resident
    assert _products(prog.instructions) == _products(nest.instructions)
    kinds = [c.name for c in prog.instructions]
    assert sorted(kinds) == sorted(c.name for c in nest.instructions)
    loads = [c for c in prog.instructions if c.name == "mvin_spad"]
    assert len(loads) == len({(c.env["dram"], c.env["sp"]) for c in loads})  # each block loaded once
    first_mul = kinds.index("preload_ws")
    assert kinds[:first_mul].count("mvin_spad") == 2
    acc = load_target("gemmini")
    for seed in (0, 1):
        xs = random_inputs(graph, seed, edges=bool(seed))
        (want,) = evaluate(graph, xs)
        (got,) = simulate(acc, prog, xs).outputs
        assert np.array_equal(want, got)


def test_the_first_multiply_of_256_cubed_follows_its_two_operand_loads() -> None:
    """256x256x256 (one chunk, B resident): the program opens with B(0, 0), A(0, 0) and the first
    multiply; no more than two moves stand between any two multiplies."""
    _, prog, p = _program(256, 256, 256, False, scale=1.0, relu=False)
    assert p.b_resident and p.chunk == 16
    instrs = prog.instructions
    assert [c.name for c in instrs[:4]] == ["mvin_spad", "mvin_spad", "preload_ws", "matmul_ws_acc"]
    b0, a0, pre, mul = instrs[:4]
    assert pre.env["b"] == b0.env["sp"] and mul.env["a"] == a0.env["sp"]
    assert _longest_background_run(instrs) <= 2
    _, nest, _ = _program(256, 256, 256, False, dataclasses.replace(TILES, overlap=False), scale=1.0, relu=False)
    assert _products(instrs) == _products(nest.instructions)


@pytest.mark.parametrize("name", OFFERS)
def test_several_chunks_feed_the_same_products_as_the_loop_nest(name: str) -> None:
    offer = OFFERS[name]
    _, prog, _ = _program(171, 40, 40, True, offer)
    _, nest, _ = _program(171, 40, 40, True, dataclasses.replace(offer, overlap=False))
    assert _products(prog.instructions) == _products(nest.instructions)
