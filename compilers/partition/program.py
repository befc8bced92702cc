"""A partitioned program: accelerator programs and host steps that hand tensors over in DRAM.

What belongs here: :class:`Step`, :class:`HostOp`, :class:`Split` (where everything ran: the
share of MACs and of operators on the accelerator, the bytes handed between host and
accelerator, each host operator with the reason it is there), :class:`Partitioned` (the program
:func:`compilers.compile.compile` returns for a graph it partitions), its contract
(:func:`composite_contract`) and its text (:func:`print_partitioned`).

An accelerator step is a whole :class:`~compilers.program.Program` of the target: its inputs are
placed in DRAM in the layouts its ``.input`` placements give (the layouts the program reads), its
outputs read back from its ``.output`` placements; a host step is a sub-graph the host CPU runs
(the reference interpreter, XLA:CPU's semantics). Steps run in order; a value a step gives is
read by the steps after it. Graph inputs and outputs live in DRAM either way; the bytes *handed
over* are those of values one side gives and the other reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from semantics.compare import Bound
from semantics.ir import Graph
from semantics.types import TensorType

from ..contract import EXACT, Contract
from ..program import Concrete, Program, print_asm
from .graphs import Sub

__all__ = ["HostOp", "Partitioned", "Split", "Step", "composite_contract", "print_partitioned"]


@dataclass(frozen=True)
class Step:
    """One step: ``kind`` is ``"accelerator"`` (``program`` runs it) or ``"host"``; ``sub`` the
    kernel it computes (its inputs and outputs named as in the graph); ``ops`` the graph's
    operators it computes."""

    kind: str
    sub: Sub
    ops: tuple[str, ...]
    program: Program | None = None

    @property
    def accelerator(self) -> bool:
        return self.kind == "accelerator"


@dataclass(frozen=True)
class HostOp:
    """An operator the host runs: its name, opcode, type and why it is not on the accelerator."""

    name: str
    opcode: str
    type: str
    why: str


@dataclass(frozen=True)
class Split:
    """Where a partitioned graph ran (module doc)."""

    macs_acc: int
    macs_total: int
    ops_acc: int
    ops_total: int
    bytes_to_acc: int
    bytes_to_host: int
    regions: int
    host_steps: int
    host: tuple[HostOp, ...] = ()

    @property
    def mac_share(self) -> float:
        """MACs on the accelerator over all MACs (1.0 for a graph without MACs that runs there)."""
        return self.macs_acc / self.macs_total if self.macs_total else float(self.ops_acc == self.ops_total)

    @property
    def op_share(self) -> float:
        """Operators on the accelerator over all placeable operators."""
        return self.ops_acc / self.ops_total if self.ops_total else 1.0

    @property
    def host_share(self) -> float:
        """Operators on the host over all placeable operators (``host <= N%`` headers bound it)."""
        return 1.0 - self.op_share

    def lines(self) -> list[str]:
        """The placement as ``accv compile`` prints it."""
        out = [f"placement: {self.regions} accelerator region(s), {self.host_steps} host step(s); "
               f"{self.macs_acc:,} of {self.macs_total:,} MACs ({100 * self.mac_share:.1f}%) and {self.ops_acc} of "
               f"{self.ops_total} operators ({100 * self.op_share:.1f}%) on the accelerator; "
               f"{self.bytes_to_acc:,} bytes handed to it, {self.bytes_to_host:,} to the host"]
        whys: dict[str, list[HostOp]] = {}
        for h in self.host:
            whys.setdefault(h.why, []).append(h)
        for why, hs in whys.items():
            names = ", ".join(f"{h.name} ({h.opcode} {h.type})" for h in hs[:6]) + (f" and {len(hs) - 6} more" if len(hs) > 6 else "")
            out.append(f"  on the host: {names}: {why}")
        return out

    def as_dict(self) -> dict[str, Any]:
        """The JSON form (written beside the program, kept in a campaign case's coverage)."""
        return {"macs_acc": self.macs_acc, "macs_total": self.macs_total, "ops_acc": self.ops_acc,
                "ops_total": self.ops_total, "bytes_to_acc": self.bytes_to_acc, "bytes_to_host": self.bytes_to_host,
                "regions": self.regions, "host_steps": self.host_steps,
                "host": [{"name": h.name, "op": h.opcode, "type": h.type, "why": h.why} for h in self.host]}


@dataclass(frozen=True)
class Partitioned:
    """A graph's program as accelerator and host steps (module doc). ``params`` / ``outputs``
    name the graph's entry parameters and outputs; ``instructions`` are every accelerator step's
    (what coverage counts)."""

    target: str
    graph: Graph
    steps: tuple[Step, ...]
    split: Split
    contract: Contract = field(default=EXACT, compare=False)

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(self.graph.entry.params)

    @property
    def outputs(self) -> tuple[str, ...]:
        root = self.graph.entry.root_instruction
        return tuple(root.operands) if root.opcode == "tuple" else (root.name,)

    @property
    def output_types(self) -> tuple[TensorType, ...]:
        return self.graph.result_types

    @property
    def instructions(self) -> tuple[Concrete, ...]:
        return tuple(c for s in self.steps if s.program is not None for c in s.program.instructions)

    @property
    def constants(self) -> tuple[tuple[int, bytes], ...]:
        return tuple(c for p in self.programs for c in p.constants)

    @property
    def programs(self) -> tuple[Program, ...]:
        return tuple(s.program for s in self.steps if s.program is not None)

    def __len__(self) -> int:
        return len(self.instructions)


def walk(p: Partitioned, inputs: Sequence[np.ndarray], accelerator: Any) -> tuple[list[np.ndarray], list[Any]]:
    """Run ``p``'s steps in order on ``inputs``: a host step on the reference interpreter, an
    accelerator step by ``accelerator(step, step_inputs) -> (outputs, info)``. Returns the graph's
    outputs and each step's info (for a host step: its seconds)."""
    import time

    from semantics.interp import evaluate

    values: dict[str, np.ndarray] = dict(zip(p.params, inputs, strict=True))
    infos: list[Any] = []
    for s in p.steps:
        xs = [values[n] for n in s.sub.inputs]
        if s.accelerator:
            outs, info = accelerator(s, xs)
        else:
            t0 = time.perf_counter()
            with np.errstate(all="ignore"):
                outs = evaluate(s.sub.graph, xs)
            info = time.perf_counter() - t0
        infos.append(info)
        values.update(zip(s.sub.outputs, outs, strict=True))
    return [values[n] for n in p.outputs], infos


def composite_contract(p: Partitioned) -> Contract:
    """What ``p``'s outputs must equal: the reference bit for bit where every accelerator step is
    held to it; else the steps' own contracts composed (a step with a model gives its model's
    outputs to the steps after it; a step with a declared bound gives outputs of the graph only,
    which the partitioner ensures, each within that step's bound)."""
    progs = [s for s in p.steps if s.program is not None]
    if all(s.program.contract.exact for s in progs):  # type: ignore[union-attr]
        return EXACT
    names = sorted({s.program.contract.what for s in progs if not s.program.contract.exact})  # type: ignore[union-attr]
    outputs = p.outputs

    def run(xs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[Bound | None]]:
        from semantics.interp import evaluate

        bounds: dict[str, Bound | None] = {}

        def acc(s: Step, ins: list[np.ndarray]) -> tuple[list[np.ndarray], None]:
            c = s.program.contract  # type: ignore[union-attr]
            with np.errstate(all="ignore"):
                outs = c.model(ins) if c.model is not None else evaluate(s.sub.graph, ins)
            if c.bounds is not None:
                bounds.update(zip(s.sub.outputs, c.bounds(ins), strict=True))
            return outs, None

        outs, _ = walk(p, xs, acc)
        return outs, [bounds.get(n) for n in outputs]

    has_model = any(s.program.contract.model is not None for s in progs)  # type: ignore[union-attr]
    has_bounds = any(s.program.contract.bounds is not None for s in progs)  # type: ignore[union-attr]
    return Contract(what="the partition's steps under " + "; ".join(names),
                    model=(lambda xs: run(xs)[0]) if has_model else None,
                    bounds=(lambda xs: run(xs)[1]) if has_bounds else None,
                    nan_bits=all(s.program.contract.nan_bits for s in progs))  # type: ignore[union-attr]


def print_partitioned(p: Partitioned) -> str:
    """The program's text: the placement, then each step: an accelerator step's assembly, a host
    step's kernel as HLO text (``#`` comments), each headed by its inputs and outputs."""
    from semantics.hlo_printer import print_hlo

    lines = [f"# partitioned program for {p.target}: {len(p.steps)} step(s)"]
    lines += [f"# {ln}" for ln in p.split.lines()]
    for k, s in enumerate(p.steps):
        lines.append(f"#.step {k} {s.kind} reads ({', '.join(s.sub.inputs)}) gives ({', '.join(s.sub.outputs)})")
        if s.program is not None:
            lines += print_asm(s.program).rstrip("\n").split("\n")
        else:
            lines += ["#   " + ln for ln in print_hlo(s.sub.graph).rstrip("\n").split("\n")]
    return "\n".join(lines) + "\n"
