"""The backend registry (check/backends.py) and the check on every backend: every registered
(target, backend) pair runs a compiled paper kernel and matches the reference interpreter; the
registry and the target packages agree on the pairs; a pair that cannot run says why, in the
library and as one CLI line with exit 3; ``accv check --backend stream`` checks on Gemmini's
command-stream model, and a wrong stream model is caught there; ``accv compile`` writes each
target package's artifacts."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from accv.cli import main
from check import backends
from check.backends import REGISTRY, backends_for, get_backend, pairs, unavailable
from check.run import check_program
from compilers.backend import BackendUnavailable
from compilers.compile import compile
from compilers.program import Program
from compilers.targets import TARGETS, load_target, target_package
from rtl_harness import verilate
from semantics.hlo_parser import parse_file
from semantics.ir import Graph
from tests.paths import PAPER

#: one small paper kernel per target
KERNEL = {"qkv": "qkv_attention", "gemmini": "gemmini_gemm", "amx": "amx_k1"}


@cache
def compiled(target: str) -> tuple[Graph, Program]:
    acc = load_target(target)
    g = parse_file(PAPER / f"{KERNEL[target]}.hlo")
    return g, compile(g, acc).program


def test_registry_and_target_packages_agree() -> None:
    for target in TARGETS:
        declared = {name for name, kind in REGISTRY.items() if target in kind.targets}
        assert set(target_package(target).backends) == declared, target
        assert backends_for(target)[0] == "sim"
    assert set(pairs()) == {("qkv", "sim"), ("qkv", "rtl"), ("gemmini", "sim"), ("gemmini", "stream"),
                            ("gemmini", "rtl"), ("amx", "sim"), ("amx", "emulated"), ("amx", "native")}


@pytest.mark.parametrize("target, name", pairs(), ids=lambda x: str(x))
def test_every_registered_pair_runs_a_compiled_kernel_like_the_reference(target: str, name: str) -> None:
    why = unavailable(target, name)
    if why is not None:
        pytest.skip(why)
    acc = load_target(target)
    g, prog = compiled(target)
    backend = get_backend(acc, name)
    assert backend.name == name
    chk = check_program(g, acc, prog, 2, backend=backend)
    assert chk.ok, chk.message
    assert chk.outcome == "pass" and chk.runs == 2 and list(chk.cycles) == [name]
    if name in ("stream", "emulated", "native"):
        assert chk.cycles[name] is None     # the command-stream model and the C runs measure no timing
    else:
        assert chk.cycles[name] is not None and chk.cycles[name] > 0


def test_a_pair_that_cannot_run_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    amx = load_target("amx")
    assert unavailable("amx", "rtl") == "target 'amx' has no rtl backend (its backends: sim, emulated, native)"
    assert unavailable("qkv", "stream") == "target 'qkv' has no stream backend (its backends: sim, rtl)"
    assert unavailable("gemmini", "native") == "target 'gemmini' has no native backend (its backends: sim, stream, rtl)"
    assert unavailable("gemmini", "fpga") == "unknown backend 'fpga' (known: sim, stream, rtl, emulated, native)"
    with pytest.raises(BackendUnavailable, match=r"^target 'amx' has no rtl backend") as e:
        get_backend(amx, "rtl")
    assert e.value.exit_code == 3
    # a registered pair whose toolchain is missing here
    monkeypatch.setattr(verilate, "available", lambda: "verilator is not installed (test)")
    assert unavailable("gemmini", "rtl") == "the rtl backend is unavailable: verilator is not installed (test)"
    with pytest.raises(BackendUnavailable, match="verilator is not installed"):
        get_backend(load_target("qkv"), "rtl")
    assert unavailable("gemmini", "stream") is None and unavailable("amx", "sim") is None


@pytest.mark.parametrize("target, name, why", [
    ("amx", "rtl", "target 'amx' has no rtl backend (its backends: sim, emulated, native)"),
    ("amx", "stream", "target 'amx' has no stream backend (its backends: sim, emulated, native)"),
    ("qkv", "stream", "target 'qkv' has no stream backend (its backends: sim, rtl)"),
])
def test_cli_exits_3_with_one_line_for_a_pair_that_cannot_run(target: str, name: str, why: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    k = PAPER / f"{KERNEL[target]}.hlo"
    assert main(["check", str(k), "--target", target, "--backend", name, "-o", str(tmp_path / "p.asm")]) == 3
    out, err = capsys.readouterr()
    assert err == f"accv: {why}\n" and out == ""          # refused before compiling
    assert not (tmp_path / "p.asm").exists()


def test_cli_names_a_missing_toolchain(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(verilate, "available", lambda: "verilator is not installed (test)")
    k = PAPER / "gemmini_gemm.hlo"
    assert main(["check", str(k), "--target", "gemmini", "--backend", "rtl"]) == 3
    assert capsys.readouterr().err == "accv: the rtl backend is unavailable: verilator is not installed (test)\n"


def test_check_on_the_stream_backend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    k = PAPER / "gemmini_gemm.hlo"
    o = tmp_path / "g.asm"
    assert main(["check", str(k), "--target", "gemmini", "--backend", "stream", "--check", "2", "-o", str(o)]) == 0
    out = capsys.readouterr().out
    assert ("check: 2 random input set(s) on the gemmini command-stream model equal the reference bit for bit; "
            "2 of 2 informative\n") in out


def test_a_wrong_stream_model_fails_the_check_with_a_reproducer(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The stream backend really runs the command-stream model: break its mvout scaling and the
    check fails with exit 1, naming the backend, and leaves a reproducer."""
    import numpy as np

    from compilers.targets.gemmini import stream

    monkeypatch.setattr(stream, "_scale_to_int8", lambda x, s: np.zeros(x.shape, np.int8))
    k = PAPER / "gemmini_gemm.hlo"
    o = tmp_path / "g.asm"
    assert main(["check", str(k), "--target", "gemmini", "--backend", "stream", "--check", "1", "-o", str(o)]) == 1
    err = capsys.readouterr().err
    assert "compiled program on the gemmini command-stream model differs from the reference bit for bit" in err
    readme = (tmp_path / "reproducer" / "README.md").read_text()
    assert "# gemmini | mismatch | compare.stream | stream differs on output of" in readme
    assert "accv fuzz --replay" in readme and "--backend stream" not in readme
    assert "// accv: backends stream" in (tmp_path / "reproducer" / "kernel.hlo").read_text()


@pytest.mark.parametrize("target, suffixes", [("gemmini", [".stream"]), ("amx", [".c"]), ("qkv", [])])
def test_compile_writes_the_target_packages_artifacts(target: str, suffixes: list[str], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    k = PAPER / f"{KERNEL[target]}.hlo"
    o = tmp_path / f"{target}.asm"
    assert main(["compile", str(k), "--target", target, "--check", "0", "-o", str(o)]) == 0
    arrow = capsys.readouterr().out.splitlines()[-1]
    assert arrow == "  -> " + ", ".join([str(o)] + [str(o.with_suffix(s)) for s in suffixes])
    acc = load_target(target)
    _, prog = compiled(target)
    for suffix, text in target_package(target).artifacts(prog, acc, KERNEL[target]).items():
        assert o.with_suffix(suffix).read_text() == text


def test_registering_a_backend_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend class added to REGISTRY runs the targets whose packages list it."""
    from dataclasses import replace

    from compilers.simulator import SimBackend

    class Twin(SimBackend):
        name = "twin"
        title = "simulator's twin"
        targets = ("amx",)

    amx = replace(target_package("amx"), backends=("sim", "twin"))
    monkeypatch.setitem(backends.REGISTRY, "twin", Twin)
    monkeypatch.setattr(backends, "target_package", lambda name: amx if name == "amx" else target_package(name))
    assert backends.backends_for("amx") == ("sim", "twin")
    assert isinstance(get_backend(load_target("amx"), "twin"), Twin)
    assert unavailable("qkv", "twin") == "target 'qkv' has no twin backend (its backends: sim, rtl)"
