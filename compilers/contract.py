"""The numeric contract a program is compiled under: what a checker holds its outputs to.

What belongs here: :class:`Contract` (carried by every :class:`compilers.program.Program` as
``program.contract``), :data:`EXACT` and :func:`of_instructions`. Whoever builds a program fills
its contract: Act and the middle end's integer layers from the instructions' own
:class:`compilers.isa.NumericContract` (:func:`of_instructions`), the middle end's float layers
with the model of the order the target's instruction sums in (:mod:`compilers.middle.compile`).
The check (``check.policy``) reads it and nothing else; the contract is not part of the assembly
text (a program read back from assembly is held to the reference bit for bit).

A contract says:

- ``model``: where the program's outputs are not the reference's bit for bit by design (a tiled
  f32 sum of bf16 products in the instruction's order), the function of the inputs they must
  equal bit for bit, named by ``what``; None: the reference interpreter's outputs.
- ``bounds``: the declared distance to the reference (one :class:`semantics.compare.Bound` per
  output, a function of the inputs); None: none allowed (bit for bit).
- ``nan_bits``: whether the outputs' NaN bits are stated (the reference's are: its NaN payloads
  and signs are exact). A model whose NaN bits are open (which NaN an add of two NaNs returns is
  left open by IEEE 754) says False: there a NaN matches any NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from semantics.compare import Bound

if TYPE_CHECKING:
    from .isa import Accelerator
    from .program import Concrete

__all__ = ["Contract", "EXACT", "of_instructions"]

Inputs = Sequence[np.ndarray]


@dataclass(frozen=True)
class Contract:
    """What a program's outputs must equal (module doc)."""

    what: str = "the reference"
    model: Callable[[Inputs], list[np.ndarray]] | None = None
    bounds: Callable[[Inputs], list[Bound | None]] | None = None
    nan_bits: bool = True

    @property
    def exact(self) -> bool:
        """The reference bit for bit, NaN bits included."""
        return self.model is None and self.bounds is None and self.nan_bits


#: the reference interpreter's outputs bit for bit (every integer program, every exact instruction)
EXACT = Contract()


def of_instructions(acc: Accelerator, instructions: Sequence[Concrete], n_outputs: int) -> Contract:
    """The contract of a program made of ``instructions``: :data:`EXACT` where every instruction's
    :class:`~compilers.isa.NumericContract` is exact; else the reference within the largest bound
    the approximate instructions declare, on every output (``ulp`` bounds in ulps of the output
    type, ``abs`` bounds absolute). That bound is the instructions' own: an error an approximate
    instruction makes that later instructions amplify fails the check (the check never passes
    a program outside the declared bound)."""
    ulps, tol, names = 0, 0.0, []
    for name in dict.fromkeys(c.name for c in instructions):
        nc = acc.instructions[name].contract if name in acc.instructions else None
        if nc is None or nc.kind == "exact":
            continue
        names.append(name)
        if nc.kind == "ulp":
            ulps = max(ulps, int(nc.bound))
        else:
            tol = max(tol, float(nc.bound))
    if not names:
        return EXACT
    bound = Bound(ulps=ulps, abs_tol=np.array(tol) if tol else None,
                  why=f"the numeric contracts of {', '.join(names)}")
    return Contract(f"the reference within the declared bound of {', '.join(names)}", None,
                    lambda xs: [bound] * n_outputs)
