"""yosys synthesizes the Gemmini-ISA RTL (gemmini_top at DIM 4, 16 scratchpad rows, 8 accumulator
rows, a 4-entry command queue) with no latch, no error, no warning and a clean `check`, and the netlist really is a mesh of
DIM*DIM PE instances."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from rtl_harness.gemmini.driver import SOURCES

YOSYS = shutil.which("yosys")
pytestmark = [pytest.mark.yosys,
              pytest.mark.skipif(YOSYS is None,
                                 reason="yosys is not installed (scripts/install-yosys.sh; make does it)")]

DIM, SP_ROWS, ACC_ROWS, QUEUE = 4, 16, 8, 4


def test_synthesizes_without_latches() -> None:
    script = (f"read_verilog -sv {' '.join(str(p) for p in SOURCES)}; "
              f"chparam -set DIM {DIM} -set SP_ROWS {SP_ROWS} -set ACC_ROWS {ACC_ROWS} -set Q {QUEUE} gemmini_top; "
              "synth -top gemmini_top; check -assert; stat")
    assert YOSYS is not None
    r = subprocess.run([YOSYS, "-p", script], capture_output=True, text=True, timeout=300)
    log = r.stdout + r.stderr
    errors = [ln for ln in log.splitlines() if "ERROR" in ln]
    assert r.returncode == 0 and not errors, f"yosys failed: {(errors or log.splitlines()[-3:])}"
    latches = [ln.strip() for ln in log.splitlines()
               if re.match(r"\s*Latch inferred", ln) or "$dlatch" in ln.lower() or "$_dlatch" in ln.lower()]
    assert not latches, f"latches: {latches[:5]}"
    warnings = [ln.strip() for ln in log.splitlines() if ln.lstrip().startswith("Warning:")]
    assert not warnings, f"yosys warnings: {warnings[:5]}"
    assert "Found and reported 0 problems." in log
    # the design hierarchy: DIM*DIM PEs in the mesh, two scale units of DIM lanes
    assert re.search(rf"^\s+gemmini_pe\s+{DIM * DIM}\s*$", log, re.M), "the mesh does not hold DIM*DIM PEs"
    assert re.search(rf"^\s+gemmini_scale_lane\s+{DIM}\s*$", log, re.M)
    assert re.search(r"^\s+\S*gemmini_scaler\S*\s+2\s*$", log, re.M), "one scale unit for loads, one for stores"
    # the local memories became flip-flops (SP_ROWS * DIM * 8 + ACC_ROWS * DIM * 32 bits at least)
    ffs = sum(int(n) for n in re.findall(r"^\s+\$_S?DFF\S*\s+(\d+)\s*$", log, re.M))
    assert ffs >= SP_ROWS * DIM * 8 + ACC_ROWS * DIM * 32
