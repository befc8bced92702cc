"""Act (seed 000): the two-phase compiler generated from an ISA description.

Phase 1 (:mod:`.phase1`, e-graph in :mod:`.egraph`, rules in :mod:`.rewrite`): instruction
selection by equality saturation. Phase 2 (:mod:`.phase2`): ordering, CP-SAT memory allocation,
emission. :mod:`.driver`: the enumeration loop with a cost model. Nothing here names a target.
The compiler's entry is :func:`compilers.compile.compile` (the middle end, then Act).
"""

from ..errors import CompileError, Unsupported
from .driver import ActResult, Stats, compile_graph

__all__ = ["compile_graph", "ActResult", "Stats", "Unsupported", "CompileError"]
