"""Backends as cost models: the cycles a candidate program takes, for the compiler's selection.

What belongs here: :func:`backend_cost` and :func:`rtl_cost`, cost models for
:func:`compilers.compile.compile` (``cost=``; ``accv compile --cost rtl``). They sit here, above
``compilers`` and ``rtl_harness``, because they run a backend; the compiler takes any function
Program -> float.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from compilers.backend import BackendUnavailable
from compilers.isa import Accelerator
from compilers.program import Program

from .backends import get_backend

__all__ = ["backend_cost", "rtl_cost"]


def backend_cost(acc: Accelerator, backend: str, inputs: Sequence[np.ndarray], **options: object
                 ) -> Callable[[Program], float]:
    """A cost model: the cycles of a candidate program on backend ``backend`` of ``acc`` run on
    ``inputs`` (``options`` go to the backend, e.g. ``dram_latency``); raises
    :class:`BackendUnavailable` for a pair that cannot run or has no notion of cycles."""
    runner = get_backend(acc, backend, **options)

    def cost(program: Program) -> float:
        cycles = runner.run(program, inputs).cycles
        if cycles is None:
            raise BackendUnavailable(f"the {backend} backend measures no cycles; it cannot be a cost model")
        return float(cycles)

    return cost


def rtl_cost(acc: Accelerator, inputs: Sequence[np.ndarray], dram_latency: int | None = None
             ) -> Callable[[Program], float]:
    """The RTL cost model: the cycles a candidate program takes on the Verilated RTL of ``acc``
    (the designs' timing does not depend on the data, so one input set suffices)."""
    return backend_cost(acc, "rtl", inputs, dram_latency=dram_latency)
