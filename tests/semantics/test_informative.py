"""Input sets that carry information (semantics/informative.py): the scaled set keeps an attention
kernel's outputs finite where the whole-range values overflow exp; the share and its one-line
description; the retries (the plan of a check's sets is tests/check/test_inputs.py)."""

from __future__ import annotations

import numpy as np

from semantics.hlo_parser import parse_file, parse_hlo
from semantics.informative import _scaled, contraction_length, describe, draw_scaled, informative_share, scaled_inputs
from semantics.inputs import random_inputs
from semantics.interp import evaluate
from tests.paths import PAPER

QKV = PAPER / "qkv_attention.hlo"


def test_scaled_inputs_keep_attention_finite_where_whole_range_inputs_do_not() -> None:
    g = parse_file(QKV)
    assert contraction_length(g) == 64
    d = draw_scaled(g, 0)
    assert d.share == 1.0 and not d.positive and abs(d.sigma - 64 ** -0.25) < 1e-12
    assert abs(float(np.std(d.inputs[0].astype(np.float32))) - 64 ** -0.25) < 0.02
    assert describe(d.outputs) == (1.0, "informative: 100% finite, varied")
    # the spread inputs accv check drew before: exp overflows and every output is NaN
    assert describe(evaluate(g, random_inputs(g, 0))) == (0.0, "DEGENERATE: all outputs NaN")


def test_share_and_description() -> None:
    assert informative_share([np.full((3, 3), 2.0)]) == 0.0
    assert describe([np.full((3, 3), 2.0)]) == (0.0, "DEGENERATE: every output constant (2)")
    assert informative_share([np.array([1.0, np.nan, 2.0, 3.0])]) == 0.75
    assert describe([np.array([1.0, np.nan, 2.0, 3.0])])[1] == ("informative: 75% finite, varied (25% NaN/inf or "
                                                                "in constant outputs)")
    assert describe([np.array([np.inf, -np.inf])])[1] == "DEGENERATE: all outputs infinite"
    assert describe([np.array([np.nan, np.inf])])[1] == "DEGENERATE: all outputs NaN or infinite"
    assert informative_share([np.array([5], dtype=np.int32)]) == 1.0     # one finite element counts
    assert informative_share([np.array([True, False])]) == 1.0


def test_a_draw_that_leaves_outputs_non_finite_is_retried() -> None:
    g = parse_hlo("HloModule m\nENTRY e {\n  p = f32[64] parameter(0)\n  ROOT l = f32[64] log(p)\n}\n")
    signed = _scaled(g, 3, 1.0, positive=False)
    assert 0 < informative_share(evaluate(g, signed)) < 1.0    # log of the negative half is NaN
    d = draw_scaled(g, 3)
    assert d.positive and d.share == 1.0 and (d.inputs[0] >= 0).all()
    assert scaled_inputs(g, 3)[0].tobytes() == d.inputs[0].tobytes()


def test_an_integer_clamp_that_saturates_small_values_is_retried_wider() -> None:
    g = parse_hlo("HloModule m\nENTRY e {\n  p = s8[64] parameter(0)\n  lo = s8[] constant(20)\n"
                  "  hi = s8[] constant(30)\n  ROOT c = s8[64] clamp(lo, p, hi)\n}\n")
    assert informative_share(evaluate(g, _scaled(g, 0, 1.0, positive=False))) == 0.0   # [-8, 8] -> all 20
    d = draw_scaled(g, 0)
    assert d.share == 1.0 and int(d.inputs[0].max()) > 30
