"""Compilers for tensor accelerators, generated from ISA descriptions (seed 000, Act).

What belongs here: the ISA description API (buffers, instructions with computational and
addressing attributes, constraints, semantics in HLO text), the target descriptions (qkv,
gemmini, amx), the generic functional simulator, phase 1 (e-graph instruction selection),
phase 2 (ordering and constraint-based memory allocation), the emitters and the driver.
The phases read only the description: no target name appears inside them.
"""
