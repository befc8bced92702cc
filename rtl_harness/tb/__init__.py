"""Testbench code shared by the RTL tests, the cocotb testbenches and the benches: random-case
generators with whole-state comparison (``*_cases``) and the cocotb testbench modules (``*_tb``)."""
