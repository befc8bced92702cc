"""RTL of the accelerators and the harness that runs programs on it.

What belongs here: SystemVerilog sources (``rtl/<design>/``), cocotb/Verilator testbenches, the
Verilator build cache (keyed by source hash and parameters) and the program runner that
implements the ``rtl`` backend.
"""
