"""The QKV RTL synthesizes with yosys (``synth``): no errors, no warnings, no latches.

Fast test (default): the whole design at its real parameters (64 MAC lanes, 16 dividers) with the
64 + 64 buffer banks (qkv_sram) as memory macros, i.e. black boxes, as in an ASIC flow, and each
bank size synthesized on its own. Three yosys processes run side by side (qkv_top with the softmax
unit and the buffers as black boxes; the softmax unit; both buffer sizes and both bank sizes).

Slow test (--runslow): exactly ``read_verilog -sv <all sources>; synth -top qkv_top``, the banks
mapped to flip-flops (about 200,000 of them): about 2 minutes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rtl_harness.qkv import driver as qkv

YOSYS = shutil.which("yosys")
pytestmark = [pytest.mark.yosys,
              pytest.mark.skipif(YOSYS is None, reason="yosys is not installed (apt-get install yosys)")]

LATCHES = "t:$dlatch t:$adlatch t:$dlatchsr t:$_DLATCH_* t:$_DLATCH?_* t:$_DLATCH??_* t:$_DLATCHSR_*"


def _names(*files: str) -> str:
    return " ".join(str(qkv.RTL_DIR / f) for f in files)


def _script(top: str, read: str, blackbox: str = "", params: str = "") -> str:
    lib = f"read_verilog -sv -lib {blackbox}; " if blackbox else ""
    return (f"{lib}read_verilog -sv {read}; {params}synth -top {top}; "
            f"select -assert-none {LATCHES}; stat")


def _run(scripts: list[str], timeout: float) -> list[str]:
    """Run yosys scripts in parallel; return their logs; fail on an error or a warning."""
    procs = [subprocess.Popen([YOSYS, "-p", s], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for s in scripts]
    logs = []
    for p, s in zip(procs, scripts, strict=True):
        out, _ = p.communicate(timeout=timeout)
        errors = [ln for ln in out.splitlines() if "ERROR" in ln or "Warning" in ln]
        assert p.returncode == 0 and not errors, f"yosys -p '{s}':\n" + "\n".join(errors[:10] or out.splitlines()[-10:])
        logs.append(out)
    return logs


def _cells(log: str) -> int:
    m = re.findall(r"=== design hierarchy ===.*?Number of cells:\s+(\d+)", log, re.S)
    return int(m[-1]) if m else int(re.findall(r"Number of cells:\s+(\d+)", log)[-1])


def _srcs_without(*skip: str) -> str:
    return " ".join(str(p) for p in qkv.SOURCES if p.name not in skip)


def test_synth_with_memory_macros(capsys: pytest.CaptureFixture[str]) -> None:
    # three yosys runs side by side: the top without the two big units, the softmax unit, the buffers
    top = _script("qkv_top", _srcs_without("qkv_sram.sv", "qkv_softmax.sv", "qkv_buf.sv"),
                  blackbox=_names("qkv_sram.sv", "qkv_softmax.sv", "qkv_buf.sv"))
    softmax = _script("qkv_softmax", _names("qkv_fma.sv", "qkv_fp.sv", "qkv_exp_rom.sv", "qkv_softmax.sv"))
    bufs = "; design -reset; ".join(
        _script(top_, _names("qkv_sram.sv", "qkv_buf.sv") if top_ == "qkv_buf" else _names("qkv_sram.sv"),
                blackbox=_names("qkv_sram.sv") if top_ == "qkv_buf" else "",
                params=f"chparam -set {p} {rows} {top_}; ")
        for top_, p, rows in (("qkv_buf", "ROWS", 128), ("qkv_buf", "ROWS", 64),
                              ("qkv_sram", "DEPTH", 128), ("qkv_sram", "DEPTH", 64)))
    logs = _run([top, softmax, bufs], timeout=600)
    assert re.search(r"qkv_sram\s+64\b", logs[2]), "expected 64 bank macros per buffer"
    with capsys.disabled():
        print(f"\nyosys: qkv_top without softmax and buffers {_cells(logs[0])} cells, softmax unit {_cells(logs[1])} "
              f"cells, buffers and banks synthesized on their own; no latches, no warnings")


def test_a_latch_is_caught(tmp_path: Path) -> None:
    """The check fails on a latch (so the synthesis tests can fail)."""
    bad = tmp_path / "latchy.sv"
    bad.write_text("module latchy(input logic en, input logic d, output logic q);\n"
                   "  always_comb if (en) q = d;\nendmodule\n")
    with pytest.raises(AssertionError):
        _run([_script("latchy", str(bad))], timeout=60)


@pytest.mark.slow
def test_synth_full_design_flip_flop_banks(capsys: pytest.CaptureFixture[str]) -> None:
    (log,) = _run([_script("qkv_top", _srcs_without())], timeout=3600)
    with capsys.disabled():
        print(f"\nyosys synth -top qkv_top (banks as flip-flops): {_cells(log)} cells, no latches")
