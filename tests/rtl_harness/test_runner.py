"""The rtl backend as the rest of the project uses it: compiled paper kernels checked on the RTL,
and the RTL-cycle cost model choosing among the compiler's candidates."""

from __future__ import annotations

import pytest

from check.backends import get_backend
from check.cost import rtl_cost
from check.run import check_program
from compilers.compile import compile
from compilers.targets import load_target
from rtl_harness import verilate
from semantics.hlo_parser import parse_file
from semantics.inputs import random_inputs
from tests.paths import PAPER

pytestmark = [pytest.mark.rtl,
              pytest.mark.skipif(verilate.available() is not None, reason=f"RTL toolchain: {verilate.available()}")]


def test_compiled_composite_checks_on_the_rtl_and_rtl_cost_picks_no_slower_program() -> None:
    acc = load_target("gemmini")
    g = parse_file(PAPER / "composite_mm_add.hlo")
    backend = get_backend(acc, "rtl")
    by_description = compile(g, acc)
    chk = check_program(g, acc, by_description.program, 2, backend=backend)
    assert chk.ok, chk.message
    by_rtl = compile(g, acc, cost=rtl_cost(acc, random_inputs(g, 0)))
    assert check_program(g, acc, by_rtl.program, 2, backend=backend).ok
    assert by_rtl.cost == backend.run(by_rtl.program, random_inputs(g, 5)).cycles   # timing is data-independent
    assert by_rtl.cost <= chk.cycles["rtl"]
