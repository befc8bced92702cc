"""Our SystemVerilog Gemmini-ISA accelerator (docs/rtl.md), one folder:

- ``hdl/``: the design (``gemmini_top`` and its units: the decoupled load, execute and store units
  behind the command queue, the PE array, the fp32 scale unit);
- ``shim/``: the C++ shims Verilator builds it with (the ctypes driver's, the coverage build's, the
  scale lane's);
- :mod:`.driver`: the ctypes driver (:func:`~.driver.run_commands`: RoCC commands from DRAM bytes
  to final DRAM bytes and measured cycles) and the build of the shared library;
- :mod:`.cases`: random command cases with whole-state comparison against the command-stream model;
- :mod:`.testbench`: the cocotb testbench (``cocotb_run``).
"""
