"""Where the tests find their kernels: one constant each.

- :data:`PAPER`: the Act paper's evaluation kernels, kept in the repository as the example
  regression suite (``examples/regression/``: each file the corpus kernel with its ``// accv:``
  expectations, which the HLO parser reads as comments).
- :data:`SHARED_CORPUS`: the read-only corpus beside the repository (``../shared/corpus``: Act's
  NNSmith-derived fuzz kernels and its hand-written library kernels), which only some tests read;
  they skip, saying so, where it is absent (:func:`shared`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAPER = REPO / "examples" / "regression"
SHARED_CORPUS = REPO.parent / "shared" / "corpus"


def shared(sub: str) -> Path:
    """``SHARED_CORPUS / sub``, or skip the test when the shared corpus is not beside the checkout."""
    p = SHARED_CORPUS / sub
    if not p.is_dir():
        pytest.skip(f"the shared corpus is not beside this checkout ({p} is missing)")
    return p
