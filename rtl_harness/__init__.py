"""RTL of the accelerators and the harness that runs programs on it.

What belongs here: one folder per design (:mod:`.gemmini`, :mod:`.qkv`: its SystemVerilog under
``hdl/``, its C++ shims under ``shim/``, its ctypes driver, random cases and cocotb testbench), the
Verilator build cache keyed by source hash and parameters (:mod:`.verilate`), code coverage of the
builds (:mod:`.coverage`) and the program runner that implements the ``rtl`` backend
(:mod:`.runner`).
"""
