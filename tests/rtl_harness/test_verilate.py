"""The Verilator build cache: a design builds once per (sources, shim, parameters), loads through
ctypes, and a broken design fails with the first Verilator error line."""

from __future__ import annotations

import ctypes
from pathlib import Path

import pytest

from rtl_harness import verilate

pytestmark = [pytest.mark.rtl,
              pytest.mark.skipif(verilate.available() is not None, reason=f"RTL toolchain: {verilate.available()}")]

COUNTER = """
module counter #(parameter int W = 8) (input logic clk, input logic rst_n, output logic [W-1:0] q);
  always_ff @(posedge clk or negedge rst_n) if (!rst_n) q <= '0; else q <= q + 1'b1;
endmodule
"""
SHIM = """
#include "Vcounter.h"
#include "verilated.h"
extern "C" {
void* counter_new() { return new Vcounter; }
void counter_free(void* p) { delete (Vcounter*)p; }
unsigned counter_run(void* p, int n) {
  Vcounter* m = (Vcounter*)p;
  m->rst_n = 0; m->clk = 0; m->eval(); m->rst_n = 1; m->eval();
  for (int i = 0; i < n; i++) { m->clk = 1; m->eval(); m->clk = 0; m->eval(); }
  return m->q;
}
}
"""


def _files(tmp: Path, rtl: str = COUNTER) -> tuple[Path, Path]:
    sv, cpp = tmp / "counter.sv", tmp / "shim.cpp"
    sv.write_text(rtl)
    cpp.write_text(SHIM)
    return sv, cpp


def test_build_cache_and_ctypes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCV_RTL_BUILD", str(tmp_path / "b"))
    sv, cpp = _files(tmp_path)
    lib = verilate.build_model("counter", [sv], {"W": 12}, cpp)
    assert verilate.last_build_seconds(lib) is not None
    m = ctypes.CDLL(str(lib))
    m.counter_new.restype = ctypes.c_void_p
    m.counter_run.argtypes = [ctypes.c_void_p, ctypes.c_int]
    m.counter_free.argtypes = [ctypes.c_void_p]
    h = m.counter_new()
    assert m.counter_run(h, 5000) == 5000 % 4096   # W = 12 took effect
    m.counter_free(h)
    again = verilate.build_model("counter", [sv], {"W": 12}, cpp)
    assert again == lib   # same inputs: the cached library
    other = verilate.build_model("counter", [sv], {"W": 8}, cpp)
    assert other != lib   # parameters are part of the key


def test_broken_design_names_the_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCV_RTL_BUILD", str(tmp_path / "b"))
    sv, cpp = _files(tmp_path, COUNTER.replace("q + 1'b1", "q + undeclared_signal"))
    with pytest.raises(verilate.RtlBuildError, match=r"counter: .*undeclared_signal"):
        verilate.build_model("counter", [sv], {}, cpp)
