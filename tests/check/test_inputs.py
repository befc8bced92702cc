"""The one input-set plan (check/inputs.py): set i is scaled, edges, full in turn with seed + i,
for accv check, the plugin and a campaign case alike; deterministic; the scaled set keeps a dot's
outputs at unit variance."""

from __future__ import annotations

import numpy as np

from check.inputs import KINDS, given, input_sets
from semantics.hlo_parser import parse_file, parse_hlo
from semantics.informative import informative_share
from semantics.inputs import random_inputs
from tests.paths import PAPER

QKV = PAPER / "qkv_attention.hlo"


def test_the_plan_cycles_scaled_edges_full() -> None:
    g = parse_file(QKV)
    sets = input_sets(g, 4, seed=10)
    assert KINDS == ("scaled", "edges", "full")
    assert [(s.name, s.kind, s.seed) for s in sets] == [("scaled", "scaled", 10), ("edges", "edges", 11),
                                                        ("full", "full", 12), ("scaled2", "scaled", 13)]
    assert sets[0].outputs is not None and sets[1].outputs is None
    for a, b in zip(sets[1].inputs, random_inputs(g, 11, edges=True), strict=True):
        assert a.tobytes() == b.tobytes()
    for a, b in zip(sets[2].inputs, random_inputs(g, 12), strict=True):
        assert a.tobytes() == b.tobytes()
    for a, b in zip(input_sets(g, 1, seed=10)[0].inputs, sets[0].inputs, strict=True):
        assert a.tobytes() == b.tobytes()                 # deterministic
    assert sets[0].label == "input set scaled (scaled values, seed 10)"


def test_scaled_values_give_a_dot_unit_variance_and_edges_hold_edge_values() -> None:
    g = parse_hlo("""HloModule m
ENTRY e {
  p0 = f32[8,64] parameter(0)
  p1 = f32[64,8] parameter(1)
  ROOT d = f32[8,8] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}""")
    sets = {s.name: s.inputs for s in input_sets(g, 3)}
    assert list(sets) == ["scaled", "edges", "full"]
    assert abs(float(np.std(sets["scaled"][0])) - 64 ** -0.25) < 0.03  # a dot of two has unit variance
    assert np.isnan(sets["edges"][0]).any() or np.isinf(sets["edges"][0]).any()
    assert informative_share([np.full((3, 3), 2.0)]) == 0.0            # constant
    assert informative_share([np.array([1.0, np.nan, 2.0, 3.0])]) == 0.75


def test_given_sets_keep_their_values_and_are_named() -> None:
    a = [np.arange(3, dtype=np.int8)]
    sets = given([a, a], "replay")
    assert [s.name for s in sets] == ["replay", "replay 1"] and sets[0].kind == "given"
    assert sets[0].inputs[0].tobytes() == a[0].tobytes() and sets[1].label == "input set replay 1"
