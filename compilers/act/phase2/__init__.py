"""Phase 2 of Act: scheduling and memory allocation (seed 000 §6, appendix C.4-C.6).

This package holds phase 2's parts, each in its own module:

- Module 4, :mod:`.order`: the extended Sethi-Ullman order (C.4), the other topological orders,
  and the description's fused pairs made adjacent.
- :mod:`.liveness`: alias groups, live ranges and the interference pairs of an order (CSP4).
- Module 5, :mod:`.csp` (the model's pieces: CSP1-CSP4 in CP-SAT terms, the HBM layout) and
  :mod:`.allocate` (:func:`~.allocate.solve`, deterministic CP-SAT).
- Module 6, :mod:`.emit`: the concrete instruction stream and the constant section (C.6).
"""

from __future__ import annotations

from .allocate import OPTIMIZE_MAX, Allocation, solve
from .csp import ALIGN, Layout, _hbm_hulls, clique_cover, hbm_layout
from .emit import emit
from .liveness import _live, alias_groups, interference
from .order import _fuse_facts, _orders, deps, fuse, orders, su_order, topological_orders

__all__ = ["su_order", "orders", "fuse", "Layout", "hbm_layout", "solve", "emit", "Allocation", "deps",
           "topological_orders", "alias_groups", "interference", "clique_cover", "ALIGN", "OPTIMIZE_MAX",
           "_live", "_hbm_hulls", "_fuse_facts", "_orders"]
