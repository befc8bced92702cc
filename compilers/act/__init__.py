"""Act (seed 000): the two-phase compiler generated from an ISA description.

The folders follow the pipeline:

- :mod:`.egraph`: the e-graph phase 1 works on (egglog store, hash-consed terms, semi-naive rounds).
- :mod:`.phase1`: instruction selection by equality saturation: Module 1 (initialize), Module 2
  (IR-to-IR rules: rewrite, instantiate, match, normalize; IR-to-ISA rules: isa_rules), Module 3
  (extract, fold) and the completeness fallback (tiling, §5.2.3).
- :mod:`.pii`: the pii graph, what phase 1 hands phase 2.
- :mod:`.phase2`: Module 4 (order, liveness), Module 5 (csp, allocate: CP-SAT), Module 6 (emit).
- :mod:`.driver`: the enumeration loop with a cost model (§8); :mod:`.context`: where its caches live.

Nothing here names a target. The compiler's entry is :func:`compilers.compile.compile` (the middle
end, then Act).
"""

from ..errors import CompileError, Unsupported
from .driver import ActResult, Stats, compile_graph

__all__ = ["compile_graph", "ActResult", "Stats", "Unsupported", "CompileError"]
