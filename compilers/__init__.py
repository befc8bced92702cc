"""Compilers for tensor accelerators, generated from ISA descriptions (seed 000, Act).

What belongs here: the ISA description API (buffers, instructions with computational and
addressing attributes, constraints, semantics in HLO text), the backend interface
(:mod:`compilers.backend`), one package per target under ``compilers/targets/<name>/`` (qkv,
gemmini, amx: description, encoders to machine words, emitters, the backends it offers), the
generic functional simulator (the ``sim`` backend), phase 1 (e-graph instruction selection),
phase 2 (ordering and constraint-based memory allocation) and the driver. The phases read only
the description: no target name appears inside them. Nothing here imports ``rtl_harness`` or
``accv``.
"""
