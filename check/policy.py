"""The one comparison rule: a backend's outputs judged against the contract their program carries.

What belongs here: :class:`Policy` (a program's :class:`compilers.contract.Contract` and what the
backend observes), :func:`judge` (pass or fail, and the first difference) and
:func:`compare_images` (two final HBM images of one program). ``accv check``, the pytest plugin,
a campaign case, the reducer, replays and the AMX image tests all decide here; nothing else says
what "equal" means. Element differences are found by :func:`semantics.compare.compare` (bit
patterns, ulp distances, declared bounds).

The rule:

- The outputs must equal the contract's model bit for bit where it has one (a tiled float layer:
  the target's summation order), else the reference interpreter's; and the reference within the
  contract's declared bounds (none: bit for bit). NaN where the reference has NaN, always.
- **NaN bits** (payload and sign of a NaN output) are compared only where the contract states
  them (``Contract.nan_bits``: the reference does; a model whose adds of two NaNs are left open by
  IEEE 754 does not) **and** the backend observes them as the reference models them
  (``nan_bits`` of its registry entry: the AMX hardware and our emulation of it return a NaN the
  reference does not model, for several NaN operands and for TDPBF16PS). Elsewhere a NaN matches
  any NaN. :func:`nan_bits_checked` is that rule; it is written nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from compilers.contract import EXACT, Contract
from compilers.partition.program import Partitioned
from compilers.program import Program, read_outputs
from semantics.compare import CompareResult, Mismatch, compare

__all__ = ["Judgement", "Policy", "compare_images", "judge", "nan_bits_checked"]


def nan_bits_checked(contract: Contract, backend_observes: bool) -> bool:
    """Whether NaN payloads and signs must match: the contract states them and the backend
    observes them as the reference models them (module doc); else a NaN matches any NaN."""
    return contract.nan_bits and backend_observes


def _agrees(c: CompareResult, nan_bits: bool) -> bool:
    return c.within_bound and (c.nan_diffs == 0 or not nan_bits)


@dataclass(frozen=True)
class Policy:
    """How one backend's runs of one program are judged."""

    contract: Contract = EXACT
    nan_bits: bool = True
    floats: bool = True         # some output is a float (only there can NaN bits differ)

    @classmethod
    def of(cls, program: Program | Partitioned, backend: object) -> Policy:
        """The policy for ``program`` on ``backend`` (a backend object or class: its ``nan_bits``
        says whether it observes NaN bits as the reference models them; default yes)."""
        observes = bool(getattr(backend, "nan_bits", True))
        types = program.output_types
        floats = any(t.dtype.is_float for t in types) if types else True
        return cls(program.contract, nan_bits_checked(program.contract, observes), floats)

    def describe(self) -> str:
        """What a run that passes equals, in words (``accv check`` prints it)."""
        c = self.contract
        nan = "" if self.nan_bits or not self.floats else " (a NaN matches any NaN)"
        if c.model is not None:
            return (f"{c.what} bit for bit{nan} and the reference within its declared bound (not bit for bit: "
                    "the sum's order is the instruction's)")
        if c.bounds is not None:
            return c.what + nan
        return f"the reference bit for bit{nan}"


@dataclass(frozen=True)
class Judgement:
    """``ok``; where not, ``why`` (one line: the first differing element, output index, both
    values and bits) and ``first``; ``expected``: the outputs the run was held to bit for bit (the
    model's or the reference's); ``note``: the distance to the reference where the contract allows
    one (appended to the input set's line)."""

    ok: bool
    why: str = ""
    first: Mismatch | None = None
    expected: list[np.ndarray] | None = None
    note: str = ""


def judge(reference: Sequence[np.ndarray], got: Sequence[np.ndarray], inputs: Sequence[np.ndarray],
          policy: Policy) -> Judgement:
    """Judge one run's outputs ``got`` on ``inputs`` against the reference's and the contract."""
    ref, out = list(reference), [np.asarray(o) for o in got]
    c = policy.contract
    if c.model is not None:
        want = c.model(inputs)
        cm = compare(want, out)
        if not _agrees(cm, policy.nan_bits):
            return Judgement(False, f"differs from {c.what}: {cm.message or cm.first or cm.first_nan}",
                             cm.first or cm.first_nan, want)
    bounds = c.bounds(inputs) if c.bounds is not None else None
    cb = compare(ref, out, bounds)
    if c.model is not None:
        if not cb.within_bound:
            return Judgement(False, f"outside the declared bound of the reference: {cb.message}", cb.first, ref)
    elif not _agrees(cb, policy.nan_bits):
        return Judgement(False, cb.message or str(cb.first or cb.first_nan), cb.first or cb.first_nan, ref)
    if c.model is None and bounds is None:
        return Judgement(True, expected=ref)
    nan = f", {cb.nan_diffs} NaN(s) with other bits" if cb.nan_diffs else ""
    note = ("; = reference bit for bit" if cb.identical
            else f"; within the declared bound of the reference (max {cb.max_ulp:g} ulp{nan})")
    return Judgement(True, expected=ref, note=note)


def compare_images(program: Program, got: np.ndarray, want: np.ndarray, policy: Policy) -> str | None:
    """None when two final HBM images of ``program`` agree: its outputs under ``policy`` (read back
    from their placements; :func:`judge`'s rule, ``want``'s outputs taking the reference's place)
    and every other byte equal, except that where NaN bits are not compared a 4-byte-aligned word
    that is an f32 NaN in both matches (an f32 intermediate the program stages in HBM, e.g. a tiled
    float layer's partial sums, carries the NaN bits the backend does not model); else the first
    difference, in one line."""
    from semantics.layout import byte_size

    a, b = np.asarray(got, np.uint8), np.asarray(want, np.uint8)
    if a.shape != b.shape:
        return f"images of {a.size} and {b.size} bytes"
    differ = a != b
    for pl in program.outputs:
        differ[pl.addr:pl.addr + byte_size(pl.type)] = False
    if differ.any() and not policy.nan_bits and a.size % 4 == 0:
        wa, wb = a.view(np.uint32), b.view(np.uint32)
        both = _f32_nan(wa) & _f32_nan(wb)
        differ &= ~np.repeat(both, 4)
    diff = np.nonzero(differ)[0]
    if diff.size:
        i = int(diff[0])
        return f"{diff.size} bytes outside the outputs differ, first at {i}: got {a[i:i + 8].tolist()}, want {b[i:i + 8].tolist()}"
    exact = Policy(EXACT, policy.nan_bits, policy.floats)   # the other image's outputs take the reference's place
    j = judge(read_outputs(program, b), read_outputs(program, a), (), exact)
    return None if j.ok else j.why


def _f32_nan(w: np.ndarray) -> np.ndarray:
    return ((w & 0x7F800000) == 0x7F800000) & ((w & 0x7FFFFF) != 0)
