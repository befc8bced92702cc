"""Act (seed 000): the two-phase compiler generated from an ISA description.

Phase 1 (:mod:`.phase1`, e-graph in :mod:`.egraph`, rules in :mod:`.rewrite`): instruction
selection by equality saturation. Phase 2 (:mod:`.phase2`): ordering, CP-SAT memory allocation,
emission. :mod:`.driver`: the enumeration loop with a cost model. Nothing here names a target.
"""

from .driver import Compiled, CompileError, Stats, Unsupported, compile_graph

__all__ = ["compile_graph", "Compiled", "Stats", "Unsupported", "CompileError"]
