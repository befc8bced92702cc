"""Act's e-graph (seed 000 §5, Fig. 9), what phase 1 works on.

- :mod:`.store`: the e-graph stored in egglog (e-nodes, e-classes, snapshots, unions).
- :mod:`.terms`: graphs as hash-consed terms, the common form of kernels (seeding the e-graph) and
  of instruction semantics g_θ(α) (the IR-to-ISA patterns).
- :mod:`.seminaive`: semi-naive rounds of rule matching on e-graph snapshots.

The store's names are importable from the package itself.
"""

from .store import MAX_ARITY, EGraph, ENode, NodeInfo, Snapshot, class_literals, type_key

__all__ = ["MAX_ARITY", "EGraph", "ENode", "NodeInfo", "Snapshot", "class_literals", "type_key"]
