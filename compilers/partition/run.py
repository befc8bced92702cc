"""Running a partitioned program: accelerator steps on a backend, host steps on the host.

What belongs here: :func:`run_program`, what the check calls for every program: a plain
:class:`~compilers.program.Program` goes to ``backend.run`` as it is; a
:class:`~.program.Partitioned` one runs step by step (:func:`.program.walk`): each accelerator
step's program on ``backend`` (its inputs placed in DRAM in the layouts its placements give, its
outputs read back from them, as for any program), each host step on the reference interpreter
(the host CPU's work, XLA:CPU's semantics). The result's ``cycles`` are the accelerator steps'
sum (None where the backend measures none); ``steps`` has each step's cycles or host seconds.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..backend import Backend, RunResult, StepRun
from ..program import Program
from .program import Partitioned, Step, walk

__all__ = ["run_program"]


def run_program(backend: Backend, program: Program | Partitioned, inputs: Sequence[np.ndarray]) -> RunResult:
    """``program`` run on ``backend`` (module doc)."""
    if not isinstance(program, Partitioned):
        return backend.run(program, inputs)
    log: list[str] = []

    def accelerator(s: Step, xs: list[np.ndarray]) -> tuple[list[np.ndarray], int | None]:
        assert s.program is not None
        r = backend.run(s.program, xs)
        log.extend(r.log)
        return r.outputs, r.cycles

    outs, infos = walk(program, inputs, accelerator)
    steps = [StepRun(k, s.kind, info, 0.0) if s.accelerator else StepRun(k, s.kind, None, float(info))
             for k, (s, info) in enumerate(zip(program.steps, infos, strict=True))]
    cycles = [r.cycles for r in steps if r.kind == "accelerator"]
    total = None if any(c is None for c in cycles) else sum(c for c in cycles if c is not None)
    return RunResult(outs, total, log, steps)
