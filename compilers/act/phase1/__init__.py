"""Phase 1 of Act: instruction selection by equality saturation (seed 000 §5, appendix C.1-C.3).

This package holds phase 1's parts, each in its own module:

- Module 1, :mod:`.initialize`: the kernel with byte-flattened inputs and outputs in the e-graph.
- Module 2, :mod:`.isa_rules` (IR-to-ISA rules from each g_θ(α)) and :mod:`.rewrite` (the proven
  IR-to-IR rules: :mod:`.instantiate`, :mod:`.match`, :mod:`.normalize`).
- Module 3, :mod:`.extract`: constants (:mod:`.fold`) and the buffer-guided extraction of pii
  graphs (:mod:`compilers.act.pii`), with the node bound Γ(k) = 2^k (§5.4).
- :mod:`.tiling`: the completeness fallback with the identity instructions slice^H / concat^H
  (§5.2.3), when the e-graph saturates without a complete pii graph.

Nothing here names a target: everything comes from the :class:`~compilers.isa.Accelerator`.
"""

from __future__ import annotations

from ..egraph import type_key
from ..pii import PiiGraph, PiiNode, pii_parts
from .extract import Choice, Extractor, constant_witnesses, constants, gamma
from .initialize import Kernel, initialize, insert, literal_forms
from .isa_rules import IsaRule, IsaRules, apply_isa_rules
from .isa_rules import match as match_isa

__all__ = ["Kernel", "initialize", "insert", "literal_forms", "IsaRule", "IsaRules", "apply_isa_rules", "match_isa",
           "constants", "constant_witnesses", "Choice", "PiiGraph", "PiiNode", "pii_parts", "Extractor", "gamma",
           "type_key"]
