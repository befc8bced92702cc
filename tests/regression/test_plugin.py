"""The regression-suite pytest plugin (check/plugin.py), run the way users run it: a pytest
session (pytester, in process) over a project folder whose ini options name its kernels."""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pytest

from check.header import HeaderError, format_header, parse_header

REPO = Path(__file__).resolve().parents[2]
#: the example suite's gemmini_add kernel without its header (each test states its own expectations)
ADD = "".join(line for line in (REPO / "examples" / "regression" / "gemmini_add.hlo").read_text().splitlines(True)
              if not line.startswith("// accv:"))
PLUGIN = ("-p", "check.plugin", "-p", "no:randomly", "-p", "no:cacheprovider")


@pytest.fixture(autouse=True, scope="module")
def _warm() -> None:
    """Import what an item uses once, outside the inner sessions: pytester's in-process runs drop
    the modules first imported inside them, and a second import would give the compiler's cached
    rule sets classes of another identity."""
    import check.plugin  # noqa: F401
    from check.backends import get_backend, unavailable
    from check.run import check_program
    from compilers.compile import compile
    from compilers.errors import Unsupported
    from compilers.targets import TARGETS, load_target
    from semantics.hlo_parser import parse_hlo

    g = parse_hlo(ADD)
    for t in TARGETS:
        acc = load_target(t)
        try:
            prog = compile(g, acc, proofs="prove").program
        except Unsupported:
            continue
        for b in ("sim", "stream"):
            if unavailable(t, b) is None:
                check_program(g, acc, prog, 1, backend=get_backend(acc, b))


def _project(pytester: pytest.Pytester, kernels: dict[str, str], ini: str = "") -> None:
    pytester.makeini("[pytest]\naccv_kernels = kernels\n" + textwrap.dedent(ini))
    for name, text in kernels.items():
        p = pytester.path / "kernels" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _bug_in_simulator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The simulator's first output gets element 5 one higher (a stand-in for a compiler bug)."""
    from compilers.simulator import SimBackend

    real = SimBackend.run

    def wrong(self, program, inputs):  # noqa: ANN001, ANN202
        r = real(self, program, inputs)
        o = np.array(r.outputs[0], copy=True)
        o.reshape(-1).view(np.dtype(f"u{o.itemsize}"))[5] ^= 1     # the last bit of element 5 flipped
        r.outputs[0] = o
        return r

    monkeypatch.setattr(SimBackend, "run", wrong)


def test_header_directives_parse_and_round_trip():
    text = format_header(targets=["amx"], backends=["sim", "emulated"], inputs=["input0.npy"],
                         unsupported=["qkv", "gemmini"], cycles=[(400, "gemmini", "rtl"), (90, "amx", None)])
    h = parse_header(text + ADD)
    assert h.targets == ("amx",) and h.backends == ("sim", "emulated") and h.inputs == ("input0.npy",)
    assert set(h.unsupported) == {"qkv", "gemmini"}
    assert [str(b) for b in h.bounds("gemmini", "rtl")] == ["cycles <= 400 on gemmini rtl"]
    assert h.bounds("gemmini", "sim") == [] and [b.limit for b in h.bounds("amx", "stream")] == [90]
    with pytest.raises(HeaderError, match=r"k.hlo:2:1: unknown directive '// accv: cycles < 4 on amx'"):
        parse_header("HloModule m\n// accv: cycles < 4 on amx\n", "k.hlo")


def test_collects_one_item_per_kernel_target_backend_from_ini(pytester):
    """Space-separated ini values; a file's `targets` directive replaces the suite's targets."""
    _project(pytester, {"add.hlo": ADD, "sub/only_amx.hlo": "// accv: targets amx\n" + ADD},
             "accv_targets = gemmini qkv\naccv_backends = sim rtl\n")
    (pytester.path / "elsewhere.hlo").write_text(ADD)   # outside accv_kernels: not collected
    res = pytester.runpytest(*PLUGIN, "--collect-only", "-q")
    res.stdout.fnmatch_lines(["kernels/add.hlo::gemmini-sim", "kernels/add.hlo::gemmini-rtl", "kernels/add.hlo::qkv-sim",
                              "kernels/add.hlo::qkv-rtl", "kernels/sub/only_amx.hlo::amx-sim",
                              "5 tests collected*"])   # amx has no rtl backend: no such item


def test_pyproject_lists_and_testpaths(pytester):
    """TOML lists work, and the kernel folder is collected even where testpaths names only tests/."""
    pytester.makepyprojecttoml("""
        [tool.pytest.ini_options]
        testpaths = ["tests"]
        accv_kernels = ["kernels"]
        accv_targets = ["gemmini"]
        accv_backends = ["sim", "stream"]
        """)
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_x.py").write_text("def test_x():\n    pass\n")
    (pytester.path / "kernels").mkdir()
    (pytester.path / "kernels" / "add.hlo").write_text(ADD)
    res = pytester.runpytest(*PLUGIN, "-m", "accv")
    res.assert_outcomes(passed=2, deselected=1)


def test_bad_options_stop_pytest_with_one_line(pytester):
    pytester.makeini("[pytest]\naccv_kernels = nowhere\n")
    res = pytester.runpytest(*PLUGIN)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines([f"ERROR: accv_kernels: no folder {pytester.path / 'nowhere'}"])
    _project(pytester, {"add.hlo": ADD}, "accv_targets = gemmini tpu\n")
    res = pytester.runpytest(*PLUGIN)
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["ERROR: accv_targets: unknown target 'tpu' (known: *)"])


def test_unavailable_backend_skips_with_its_reason(pytester, monkeypatch):
    from rtl_harness.runner import RtlBackend

    monkeypatch.setattr(RtlBackend, "unavailable", staticmethod(lambda: "Verilator is not installed (test)"))
    _project(pytester, {"add.hlo": ADD}, "accv_targets = gemmini\naccv_backends = rtl sim\n")
    res = pytester.runpytest(*PLUGIN, "-rs")
    res.assert_outcomes(skipped=1, passed=1)
    res.stdout.fnmatch_lines(["SKIPPED ?1? kernels/add.hlo:1: the rtl backend is unavailable: Verilator is not "
                              "installed (test)"])


def test_expected_unsupported_passes_unexpected_and_stale_fail(pytester):
    _project(pytester, {"expected.hlo": "// accv: expect unsupported on qkv\n" + ADD, "unexpected.hlo": ADD,
                        "stale.hlo": "// accv: expect unsupported on gemmini\n" + ADD},
             "accv_targets = gemmini qkv\n")
    res = pytester.runpytest(*PLUGIN)
    res.assert_outcomes(passed=3, failed=3)
    out = res.stdout.str()
    assert "kernels/unexpected.hlo on qkv sim: the compiler cannot run it on qkv (exit 3): no instruction computes" in out
    assert "say so in the file: // accv: expect unsupported on qkv" in out
    assert ("kernels/stale.hlo on gemmini sim: line 1 expects the target to be unable to run it, but it compiled to"
            in out)


def test_cycle_bound_exceeded_fails(pytester):
    _project(pytester, {"tight.hlo": "// accv: cycles <= 10 on gemmini sim\n" + ADD,
                        "loose.hlo": "// accv: cycles <= 100000 on gemmini\n" + ADD},
             "accv_targets = gemmini\naccv_backends = sim stream\n")
    res = pytester.runpytest(*PLUGIN)
    res.assert_outcomes(passed=3, failed=1)
    res.stdout.fnmatch_lines(["kernels/tight.hlo on gemmini sim: * cycles, over the bound on line 1 "
                              "(cycles <= 10 on gemmini sim) by *"])


def test_mismatch_shows_the_first_differing_element_and_the_reproducer(pytester, monkeypatch):
    _bug_in_simulator(monkeypatch)
    _project(pytester, {"add.hlo": ADD}, "accv_targets = gemmini\naccv_reproducers = out/repro\n")
    res = pytester.runpytest(*PLUGIN)
    res.assert_outcomes(failed=1)
    res.stdout.fnmatch_lines([
        "kernels/add.hlo on gemmini sim: the compiled program differs from the reference bit for bit on input set scaled "
        "(scaled values, seed 0): "
        "output 0 element (0, 5): expected * (0x*), got * (0x*)",
        f"reproducer: {pytester.path / 'out' / 'repro' / 'kernels_add-gemmini-sim'} *"])
    assert "Traceback" not in res.stdout.str() and "def runtest" not in res.stdout.str()
    folder = pytester.path / "out" / "repro" / "kernels_add-gemmini-sim"
    assert {"kernel.hlo", "program.asm", "input0.npy", "expected0.npy", "actual0.npy", "README.md"} <= {
        p.name for p in folder.iterdir()}


def test_compiles_once_per_kernel_and_target(pytester, monkeypatch):
    import compilers.compile as cc

    calls: list[str] = []
    real = cc.compile

    def counted(graph, acc, **kw):  # noqa: ANN001, ANN202
        calls.append(acc.name)
        return real(graph, acc, **kw)

    monkeypatch.setattr(cc, "compile", counted)
    _project(pytester, {"add.hlo": ADD}, "accv_targets = gemmini\naccv_backends = sim stream rtl\n")
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=3)
    assert calls == ["gemmini"]


def test_bad_header_is_a_collection_error_naming_the_line(pytester):
    _project(pytester, {"bad.hlo": "// accv: expect failure\n" + ADD})
    res = pytester.runpytest(*PLUGIN)
    res.assert_outcomes(errors=1)
    res.stdout.fnmatch_lines(["*kernels/bad.hlo:1:1: unknown directive '// accv: expect failure'*"])


def test_a_campaign_reproducer_is_a_regression_file_as_it_is(pytester, monkeypatch):
    """The one reproducer format's folder dropped into the kernel folder: one item on the
    reproducer's target and backend with its inputs, failing while the bug is there and passing
    once it is gone."""
    from check.reproducer import write_reproducer
    from check.verdict import Verdict
    from semantics.hlo_parser import parse_hlo
    from semantics.inputs import random_inputs

    g = parse_hlo(ADD)
    xs = random_inputs(g, 7)
    v = Verdict("mismatch", backend="sim", input_set="edges", inputs=xs)
    _project(pytester, {}, "accv_targets = qkv amx\naccv_backends = rtl\naccv_check = 0\n")
    folder = pytester.path / "kernels" / "gemmini_mismatch_compare_sim"
    write_reproducer(folder, "gemmini", g, v, 7, signature="gemmini | mismatch | compare.sim | sim differs on output "
                     "of convert")
    with monkeypatch.context() as m:
        _bug_in_simulator(m)
        res = pytester.runpytest(*PLUGIN, "-v")
        res.assert_outcomes(failed=1)
        res.stdout.fnmatch_lines(["kernels/gemmini_mismatch_compare_sim/kernel.hlo::gemmini-sim FAILED*",
                                  "*differs from the reference bit for bit on input set given: output 0 element (0, 5)*"])
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)


def test_host_directive_partitions_and_bounds_the_host_share(pytester):
    """``// accv: host <= P% on T``: the kernel is partitioned on T and checked; a host share over the
    bound fails with what ran on the host; without the directive the whole-graph rule holds."""
    from pathlib import Path

    crafted = (Path(__file__).parents[1] / "compilers" / "data" / "partition_crafted.hlo").read_text()
    _project(pytester, {"ok.hlo": "// accv: host <= 50% on gemmini\n" + crafted,
                        "tight.hlo": "// accv: host <= 5% on gemmini\n" + crafted,
                        "whole.hlo": "// accv: expect unsupported on gemmini\n" + crafted},
             "accv_targets = gemmini\naccv_backends = sim\n")
    res = pytester.runpytest(*PLUGIN)
    res.assert_outcomes(passed=2, failed=1)
    res.stdout.fnmatch_lines(["kernels/tight.hlo on gemmini sim: 40.0% of its operators run on the host (2 of 5), "
                              "over the bound on line 1 (host <= 5%); on the host: r (reduce): *"])
    h = parse_header("// accv: host <= 12.5% on gemmini amx\n" + ADD)
    assert h.host == {"gemmini": (12.5, 1), "amx": (12.5, 1)}
