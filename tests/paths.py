"""Where the tests find their kernels: one constant each, both inside the repository.

- :data:`PAPER`: the Act paper's evaluation kernels as the example regression suite
  (``examples/regression/``: each file the corpus kernel with its ``// accv:`` expectations, which
  the HLO parser reads as comments).
- :data:`ACT_CORPUS`: Act's public kernel corpus as published (``tests/corpus/act/``: the
  NNSmith-derived Gemmini fuzz kernels, the hand-written library kernels and the paper kernels
  without expectations; each folder's SOURCE.md says where it comes from and its license).
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAPER = REPO / "examples" / "regression"
ACT_CORPUS = REPO / "tests" / "corpus" / "act"
