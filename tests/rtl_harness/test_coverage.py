"""The designs' coverage builds: a compiled kernel run on the rtl backend while coverage is collected
leaves a tally whose merged .dat counts some, not all, line and toggle points; without collection
the ordinary build runs and nothing is tallied."""

from __future__ import annotations

import pytest

from check.backends import get_backend
from compilers.compile import compile
from compilers.targets import load_target
from rtl_harness import coverage, verilate
from semantics.hlo_parser import parse_file
from semantics.inputs import random_inputs
from tests.paths import PAPER

pytestmark = [pytest.mark.rtl,
              pytest.mark.skipif(verilate.available() is not None, reason=f"RTL toolchain: {verilate.available()}")]


@pytest.mark.parametrize(("target", "kernel"), [("qkv", "qkv_attention.hlo"), ("gemmini", "gemmini_gemm.hlo")])
def test_a_run_is_counted(tmp_path, target, kernel):
    acc = load_target(target)
    g = parse_file(PAPER / kernel)
    prog = compile(g, acc).program
    backend = get_backend(acc, "rtl")
    coverage.start(tmp_path)
    try:
        backend.run(prog, random_inputs(g, 0))
        files = coverage.flush()
    finally:
        coverage.stop()
    assert len(files) == 1 and files[0].name.startswith(f"{target}-")
    fig = coverage.folder_summary(tmp_path)[target]
    for kind in ("line", "toggle"):
        covered, total = fig[kind]
        assert 0 < covered < total, (kind, covered, total)
    backend.run(prog, random_inputs(g, 1))          # collection off: nothing tallied
    assert coverage.flush() == [] and not coverage.active()
