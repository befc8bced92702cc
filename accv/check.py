"""Every compilation is checked: :func:`check_program` runs the program on a backend (default the
target's functional simulator; any of :mod:`accv.backends`) for input sets and compares with the
reference interpreter, bit for bit (every instruction of the three targets declares an exact
numeric contract). A mismatch is a compiler bug: it writes a reproducer folder (the kernel, the
inputs, the program, both outputs and a README with the first differing element).

The one exception is a tiled program whose float sum has the target instruction's order, not the
reference's (:func:`compilers.middle.contract.tiled_contract`: AMX's f32 layers of bf16
operands). Its outputs must equal the contract's model bit for bit (NaN bits only on the backends
the model states them for) and the reference within the contract's declared
:class:`semantics.compare.Bound` (NaN where the reference has NaN); :attr:`CheckResult.contract`
names the model and each set's report gives the distance to the reference.

The input sets are :func:`semantics.informative.check_sets`: set ``i`` is ``scaled`` (values
scaled by the kernel's contraction length so outputs are finite and varied), ``edges`` (NaN, inf,
-0.0, subnormals, ties, integer bounds) or ``full`` (the whole range) for ``i % 3`` = 0, 1, 2, with
seed ``seed + i``. Each set's report says whether its outputs carried information
(:func:`semantics.informative.describe`); a check whose every set agreed but none carried any is
``degenerate`` (:attr:`CheckResult.degenerate`), not a pass.

:func:`backend_cost` / :func:`rtl_cost` turn a backend into a cost model for the compiler's
candidate selection (``compile_graph(cost=...)``): the cycles a candidate program takes on it.

This module sits above both ``compilers`` and ``rtl_harness`` (the composition layer).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from semantics.compare import compare
from semantics.informative import check_sets, describe
from semantics.interp import evaluate
from semantics.ir import Graph

from compilers.backend import Backend, BackendUnavailable
from compilers.isa import Accelerator
from compilers.program import Program, print_asm

from .backends import get_backend
from .npyio import save_output

if TYPE_CHECKING:
    from compilers.middle.contract import TiledContract

__all__ = ["CheckResult", "SetReport", "check_program", "backend_cost", "rtl_cost"]


@dataclass
class SetReport:
    """One input set of a check: its kind and seed, the informative share of the reference outputs
    and the line saying it (``informative: 100% finite, varied`` / ``DEGENERATE: all outputs NaN``)."""

    kind: str
    seed: int
    share: float
    text: str


@dataclass
class CheckResult:
    """``ok``: every input set run agreed with the reference; ``sets``: the report of each set run
    (the failing one last)."""

    runs: int
    ok: bool
    message: str = ""
    reproducer: Path | None = None
    cycles: int | None = 0
    backend: str = "sim"
    sets: list[SetReport] = field(default_factory=list)
    contract: str = ""      # the model the outputs equal bit for bit, where not the reference (module doc)

    @property
    def degenerate(self) -> bool:
        """Every set agreed but no set's outputs carried information (all NaN/inf or constant)."""
        return self.ok and all(s.share == 0 for s in self.sets)


def check_program(graph: Graph, acc: Accelerator, program: Program, n: int, seed: int = 0,
                  kernel_path: str | Path | None = None, repro_dir: Path | None = None,
                  backend: Backend | None = None, inputs: Sequence[Sequence[np.ndarray]] = ()) -> CheckResult:
    """Run the given input sets ``inputs`` (one array per parameter each; a regression file's
    ``// accv: inputs``), then ``n`` drawn ones (module docstring; seeds ``seed``.. ``seed+n-1``) on
    ``backend`` (default the functional simulator); ``cycles`` is the last run's cycle count."""
    from compilers.middle.contract import tiled_contract

    backend = backend or get_backend(acc, "sim")
    contract = tiled_contract(graph, acc.name)
    cycles: int | None = 0
    reports: list[SetReport] = []
    given = [(list(xs), f"given input set {k}") for k, xs in enumerate(inputs)]
    drawn = [(s, f"input set {k} (seed {s.seed}, {s.kind} values)") for k, s in enumerate(check_sets(graph, n, seed))]
    for i, (s, label) in enumerate(given + drawn):
        if isinstance(s, list):
            xs, ref, kind, sseed = s, evaluate(graph, s), "given", seed
        else:
            xs, kind, sseed = s.inputs, s.kind, s.seed
            ref = s.outputs if s.outputs is not None else evaluate(graph, xs)
        reports.append(SetReport(kind, sseed, *describe(ref)))
        res = backend.run(program, xs)
        cycles = res.cycles
        if contract is not None:
            why = _contract_check(contract, backend.name, xs, ref, [np.asarray(o) for o in res.outputs],
                                  reports[-1])
            if why is None:
                continue
        else:
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
                f"# Compiler mismatch on target {acc.name} (backend {backend.name})\n\n{label[0].upper()}{label[1:]}: "
                f"{why}\n\nReplay: `accv sim program.asm --target {acc.name} "
                f"--inputs {','.join(f'input{k}.npy' for k in range(len(xs)))}` and compare with "
                f"`accv run kernel.hlo --inputs ...`.\n")
        return CheckResult(i + 1, False, f"{label}: {why}", where, cycles, backend.name, reports,
                           contract.what if contract else "")
    return CheckResult(len(given) + n, True, "", None, cycles, backend.name, reports,
                       contract.what if contract else "")


def _contract_check(contract: TiledContract, backend: str, xs: Sequence[np.ndarray], ref: list[np.ndarray],
                    got: list[np.ndarray], report: SetReport) -> str | None:
    """None when ``got`` equals the contract's model bit for bit and the reference within its
    bound (module doc; the distance is appended to ``report``), else what differs."""
    model = contract.model(xs)
    cm = compare(model, got)
    if not cm.within_bound or (cm.nan_diffs and backend in contract.nan_bits):
        return f"differs from {contract.what}: {cm.message or cm.first or cm.first_nan}"
    cb = compare(ref, got, contract.bounds(xs))  # type: ignore[arg-type]
    if not cb.within_bound:
        return f"outside the declared bound of the reference: {cb.message}"
    nan = f", {cb.nan_diffs} NaN(s) with other bits" if cb.nan_diffs else ""
    report.text += ("; = reference bit for bit" if cb.identical else
                    f"; within the declared bound of the reference (max {cb.max_ulp:g} ulp{nan})")
    return None


def backend_cost(acc: Accelerator, backend: str, inputs: Sequence[np.ndarray], **options: object
                 ) -> Callable[[Program], float]:
    """A cost model for ``compile_graph(cost=...)``: the cycles of a candidate program on backend
    ``backend`` of ``acc`` run on ``inputs`` (``options`` go to the backend, e.g. ``dram_latency``);
    raises :class:`BackendUnavailable` for a pair that cannot run or has no notion of cycles."""
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
