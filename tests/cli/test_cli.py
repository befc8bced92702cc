"""The accv CLI: parse and run every corpus kernel; bad input gives one line on stderr and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from accv.cli import main
from tests.paths import PAPER
from tests.paths import ACT_CORPUS as CORPUS

KERNELS = sorted(CORPUS.glob("**/*.hlo"))


def test_corpus_present() -> None:
    assert len(KERNELS) == 133, f"expected the 133 corpus kernels under {CORPUS}"


@pytest.mark.parametrize("path", KERNELS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_parse_and_run_every_corpus_kernel(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", str(path)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("HloModule ")
    again = tmp_path / "again.hlo"
    again.write_text(printed)
    assert main(["parse", str(again)]) == 0
    assert capsys.readouterr().out == printed  # printing is a fixed point
    assert main(["run", str(path), "--seed", "1", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "output 0:" in out and "sha256:" in out
    assert (tmp_path / "out" / "output0.npy").is_file()


def test_run_is_deterministic_and_reads_its_own_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    k = PAPER / "qkv_attention.hlo"
    assert main(["run", str(k), "--seed", "7", "--out", str(tmp_path / "a")]) == 0
    first = capsys.readouterr().out.splitlines()[1].split("->")[0]
    inputs = ",".join(str(tmp_path / "a" / f"input{i}.npy") for i in range(3))
    assert main(["run", str(k), "--inputs", inputs, "--out", str(tmp_path / "b")]) == 0
    second = capsys.readouterr().out.splitlines()[1].split("->")[0]
    assert first == second
    a = np.load(tmp_path / "a" / "output0.npy").view(ml_dtypes.bfloat16)
    b = np.load(tmp_path / "b" / "output0.npy").view(ml_dtypes.bfloat16)
    assert a.tobytes() == b.tobytes()


BAD = {
    "truncated": ("HloModule m\nENTRY e {\n  p = s8[4] parameter(0)\n", "4:1"),
    "unknown_op": ("HloModule m\nENTRY e {\n  p = s8[4] parameter(0)\n  ROOT r = s8[4] frobnicate(p)\n}\n", "4:"),
    "arity": ("HloModule m\nENTRY e {\n  p = s8[4] parameter(0)\n  ROOT r = s8[4] add(p)\n}\n", "4:"),
    "shape": ("HloModule m\nENTRY e {\n  p = s8[4] parameter(0)\n  ROOT r = s8[5] negate(p)\n}\n", "4:"),
    "undefined": ("HloModule m\nENTRY e {\n  p = s8[4] parameter(0)\n  ROOT r = s8[4] add(p, q)\n}\n", "4:"),
    "layout": ("HloModule m\nENTRY e {\n  ROOT p = s8[4,4]{0,0} parameter(0)\n}\n", "3:"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_bad_input_is_one_line_exit_2(kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, line = BAD[kind]
    f = tmp_path / f"{kind}.hlo"
    f.write_text(text)
    for cmd in ("parse", "run"):
        assert main([cmd, str(f)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("accv: ")
        assert f"{f}:{line}" in err, err
        assert "Traceback" not in err


def test_missing_file_and_bad_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "nope.hlo")]) == 2
    assert "no such file" in capsys.readouterr().err
    k = PAPER / "gemmini_add.hlo"
    wrong = tmp_path / "w.npy"
    np.save(wrong, np.zeros((3, 3), np.float32))
    assert main(["run", str(k), "--inputs", f"{wrong},{wrong}"]) == 2
    err = capsys.readouterr().err
    assert "dtype float32" in err and err.count("\n") == 1
    assert main(["run", str(k), "--inputs", str(wrong)]) == 2
    assert "takes 2 inputs" in capsys.readouterr().err


def test_console_entry_point_subprocess(tmp_path: Path) -> None:
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n  ROOT r = s8[4] parameter(0\n}\n")
    r = subprocess.run([sys.executable, "-m", "accv", "parse", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == f"accv: {bad}:4:1: expected ')', got '}}'\n"
    r = subprocess.run([sys.executable, "-m", "accv", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("accv ")


def test_docs_operator_table_in_sync() -> None:
    from semantics.docs import sync_docs

    doc = Path(__file__).resolve().parents[2] / "docs" / "semantics.md"
    assert sync_docs(doc, write=False), "docs/semantics.md is stale: run python -m semantics.docs --write"


def test_check_runs_on_the_simulator_backend_and_rejects_bad_counts(capsys, tmp_path: Path) -> None:
    k = str(PAPER / "gemmini_gemm.hlo")
    o = str(tmp_path / "g.asm")
    assert main(["check", k, "--target", "gemmini", "--check", "1", "-o", o]) == 0   # proves what it lacks
    assert "equal the reference bit for bit; 80 cycles" in capsys.readouterr().out
    assert main(["check", k, "--target", "gemmini", "--check", "0", "-o", o]) == 2
    assert "--check must be at least 1" in capsys.readouterr().err


def test_rtl_backend_names_targets_without_rtl() -> None:
    from check.backends import get_backend
    from compilers.backend import BackendUnavailable
    from compilers.targets import load_target

    with pytest.raises(BackendUnavailable, match=r"^target 'amx' has no rtl backend \(its backends: sim, emulated, native\)$"):
        get_backend(load_target("amx"), "rtl")


def test_check_reports_each_input_set_and_exits_6_when_none_is_informative(capsys, tmp_path: Path) -> None:
    k = str(PAPER / "qkv_attention.hlo")
    assert main(["check", k, "--target", "qkv", "-o", str(tmp_path / "q.asm")]) == 0
    out = capsys.readouterr().out
    assert "; 1 of 3 informative\n" in out
    assert "    set 0 (scaled, seed 0): informative: 100% finite, varied\n" in out
    assert "    set 1 (edges, seed 1): DEGENERATE: all outputs NaN\n" in out
    const = tmp_path / "const.hlo"
    const.write_text("HloModule c\nENTRY e {\n  a = bf16[64,64] parameter(0)\n  one = bf16[] constant(1)\n"
                     "  ROOT b = bf16[64,64] broadcast(one), dimensions={}\n}\n")
    assert main(["compile", str(const), "--target", "qkv", "-o", str(tmp_path / "c.asm")]) == 6
    cap = capsys.readouterr()
    assert "  check DEGENERATE: 3 random input set(s)" in cap.out and "0 of 3 informative" in cap.out
    assert "set 2 (full, seed 2): DEGENERATE: every output constant (1)" in cap.out
    assert "DEGENERATE check: no input set's outputs carry information" in cap.err


_TRANSPOSED_DOT = """HloModule td
ENTRY main {
  a = bf16[64,64] parameter(0)
  b = bf16[64,64] parameter(1)
  d = bf16[64,64] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = bf16[64,64] transpose(d), dimensions={1,0}
}
"""


def test_qkv_transposed_dot_keeps_the_nan_signs(tmp_path: Path) -> None:
    """The qkv fuzz finding: ``transpose(dot(a, b))`` compiled to ``gemm(b^T, a^T)``, whose
    products return b's NaN where a's and b's are both NaN (the reference returns a's), so the
    edge-value input set differed in NaN signs (exit 1). The operand swap is claimed for integers
    only; the program computes ``gemm(a, b)`` and stores it column-major."""
    k = tmp_path / "td.hlo"
    k.write_text(_TRANSPOSED_DOT)
    out = tmp_path / "td.asm"
    assert main(["check", str(k), "--target", "qkv", "--check", "2", "-o", str(out)]) == 0
    text = out.read_text()
    assert "store_cm(" in text and "store_rm(" not in text


def test_compile_partitions_prints_the_placement_and_no_host_exits_3(capsys, tmp_path: Path) -> None:
    """A graph Gemmini cannot run whole: ``accv compile`` partitions it, prints where everything ran
    and writes the placement and every step beside the program; ``accv check`` runs it; ``--no-host``
    keeps the whole-graph rule (exit 3 with the reason)."""
    import json

    k = str(Path(__file__).parents[1] / "compilers" / "data" / "partition_crafted.hlo")
    o = tmp_path / "c" / "gemmini.asm"
    assert main(["compile", k, "--target", "gemmini", "--check", "1", "-o", str(o), "--proofs", "cached"]) == 0
    out = capsys.readouterr().out
    assert "in 3 accelerator step(s)" in out
    assert ("placement: 3 accelerator region(s), 2 host step(s); 8,192 of 8,192 MACs (100.0%) and 3 of 5 operators "
            "(60.0%) on the accelerator; 16 bytes handed to it, 512 to the host") in out
    assert "on the host: r (reduce s8[16]): no instruction computes reduce" in out
    placement = json.loads((tmp_path / "c" / "gemmini.placement.json").read_text())
    assert [s["kind"] for s in placement["steps"]] == ["accelerator", "host", "accelerator", "accelerator", "host"]
    assert all(Path(s["file"]).is_file() for s in placement["steps"])
    assert "#.step 1 host reads (a) gives (r)" in o.read_text()
    assert main(["check", k, "--target", "gemmini", "--backend", "stream", "--check", "2", "-o", str(o),
                 "--proofs", "cached"]) == 0
    assert "2 random input set(s) on the gemmini command-stream model equal the reference bit for bit" in \
        capsys.readouterr().out
    assert main(["compile", k, "--target", "gemmini", "--no-host", "-o", str(o), "--proofs", "cached"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("accv: no instruction computes") and err.count("\n") == 1


def test_fuzz_without_its_extra_is_one_line_naming_it(tmp_path: Path, capsys, monkeypatch) -> None:
    """``accv fuzz`` on an install without the ``fuzz`` extra: one line naming the extra, exit 2,
    before any case runs (it was a ModuleNotFoundError traceback)."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pebble" else real(name, *a))
    assert main(["fuzz", "--target", "gemmini", "--cases", "1", "--db", str(tmp_path / "r.sqlite")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs the 'fuzz' extra (pebble is not installed): pip install 'accv[fuzz]'" in err
    assert not (tmp_path / "r.sqlite").exists()
