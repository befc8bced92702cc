"""Every compilation is checked: run the program on a backend (default: the target's functional
simulator; ``rtl``: the Verilated accelerator) for random input sets and compare with the reference interpreter, bit for bit (every instruction of the
three targets declares an exact numeric contract; a bounded one would be applied here). A
mismatch is a compiler bug: :func:`check_program` writes a reproducer folder (the kernel, the
inputs, the program, both outputs and a README with the first differing element).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from semantics.compare import compare
from semantics.inputs import random_inputs
from semantics.interp import evaluate
from semantics.ir import Graph

from ..backend import Backend, SimBackend
from ..isa import Accelerator
from ..program import Program, print_asm

__all__ = ["CheckResult", "check_program"]


@dataclass
class CheckResult:
    runs: int
    ok: bool
    message: str = ""
    reproducer: Path | None = None
    cycles: int | None = 0
    backend: str = "sim"


def check_program(graph: Graph, acc: Accelerator, program: Program, n: int, seed: int = 0,
                  kernel_path: str | Path | None = None, repro_dir: Path | None = None,
                  backend: Backend | None = None) -> CheckResult:
    """Run ``n`` input sets (seeds ``seed``.. ``seed+n-1``; odd runs use edge values) on ``backend``
    (default the functional simulator); ``cycles`` is the last run's cycle count."""
    from accv.npyio import save_output

    backend = backend or SimBackend(acc)
    cycles: int | None = 0
    for i in range(n):
        xs = random_inputs(graph, seed + i, edges=bool(i % 2))
        ref = evaluate(graph, xs)
        res = backend.run(program, xs)
        cycles = res.cycles
        cmp = compare(ref, res.outputs)
        if cmp.ok:
            continue
        why = cmp.message or str(cmp.first or cmp.first_nan)
        where = None
        if repro_dir is not None:
            where = Path(repro_dir)
            if where.exists():
                shutil.rmtree(where)
            where.mkdir(parents=True)
            if kernel_path is not None:
                shutil.copy(kernel_path, where / "kernel.hlo")
            (where / "program.asm").write_text(print_asm(program))
            for k, x in enumerate(xs):
                save_output(where / f"input{k}.npy", x)
            for k, (e, a) in enumerate(zip(ref, res.outputs, strict=False)):
                save_output(where / f"expected{k}.npy", e)
                save_output(where / f"actual{k}.npy", np.asarray(a))
            (where / "README.md").write_text(
                f"# Compiler mismatch on target {acc.name} (backend {backend.name})\n\nInput set {i} (seed {seed + i}, "
                f"edge values {bool(i % 2)}): {why}\n\nReplay: `accv sim program.asm --target {acc.name} "
                f"--inputs {','.join(f'input{k}.npy' for k in range(len(xs)))}` and compare with "
                f"`accv run kernel.hlo --inputs ...`.\n")
        return CheckResult(i + 1, False, f"input set {i} (seed {seed + i}): {why}", where, cycles, backend.name)
    return CheckResult(n, True, "", None, cycles, backend.name)
