"""Our SystemVerilog QKV accelerator (docs/rtl-qkv.md), one folder:

- ``hdl/``: the design (``qkv_top``: DMA, buffers, the bf16 GEMM and softmax units; the exp table
  ``qkv_exp_rom.sv`` is generated from the reference interpreter by :mod:`.gen_exp_rom`);
- ``shim/``: the C++ shims Verilator builds it with (the ctypes driver's, the coverage build's, the
  FPU probe's);
- :mod:`.driver`: the ctypes driver (:func:`~.driver.run_instructions`) and the builds;
- :mod:`.cases`: random instruction cases with whole-state comparison against the simulator, under
  the instructions' numeric contracts;
- :mod:`.testbench`: the cocotb testbench.
"""
