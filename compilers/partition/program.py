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

__all__ = ["HostOp", "Partitioned", "Split", "Step", "composite_contract", "print_partitioned", "walk", "whole_split"]


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
    #: operators on the accelerator by opcode
    acc_ops: tuple[tuple[str, int], ...] = ()

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
                "regions": self.regions, "host_steps": self.host_steps, "acc_ops": dict(self.acc_ops),
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


def whole_split(graph: Graph) -> Split:
    """The placement of a graph the target runs whole (every operator on the accelerator)."""
    from collections import Counter

    from .graphs import GraphView

    v = GraphView(graph)
    n = len(v.placeable)
    return Split(v.total_macs, v.total_macs, n, n, 0, 0, 1, 0, (),
                 tuple(sorted(Counter(v[x].opcode for x in v.placeable).items())))


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
    held to it; else the steps' own contracts composed. A step held to a model (a tiled float
    layer's sum in its instruction's order) gives its model's outputs to the steps after it, so
    the outputs equal the composed model bit for bit; an output a modelled step gives directly
    keeps that step's declared bound to the reference, one computed from such a value downstream
    has none (any distance to the reference passes: it is held to the model only). A step with
    a declared bound and no model gives outputs of the graph only (the partitioner ensures it),
    each within that bound."""
    progs = [s.program for s in p.steps if s.program is not None]
    if all(q.contract.exact for q in progs):
        return EXACT
    names = sorted({q.contract.what for q in progs if not q.contract.exact})
    outputs = p.outputs
    has_model = any(q.contract.model is not None for q in progs)

    def run(xs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[Bound | None]]:
        from semantics.interp import evaluate

        bounds: dict[str, Bound | None] = {}
        tainted: set[str] = set()

        def acc(s: Step, ins: list[np.ndarray]) -> tuple[list[np.ndarray], None]:
            c = s.program.contract  # type: ignore[union-attr]
            with np.errstate(all="ignore"):
                outs = c.model(ins) if c.model is not None else evaluate(s.sub.graph, ins)
            if c.bounds is not None:
                bounds.update(zip(s.sub.outputs, c.bounds(ins), strict=True))
            if c.model is not None or set(s.sub.inputs) & tainted:
                tainted.update(s.sub.outputs)
            return outs, None

        outs, _ = walk(p, xs, acc)
        for s in p.steps:      # host steps reading a modelled value give modelled values
            if not s.accelerator and set(s.sub.inputs) & tainted:
                tainted.update(s.sub.outputs)
        out_bounds: list[Bound | None] = []
        for n, o in zip(outputs, outs, strict=True):
            if n in bounds:
                out_bounds.append(bounds[n])
            elif n in tainted:
                out_bounds.append(Bound(anything=np.ones(np.shape(o), bool),
                                        why="computed from a modelled sum: held to the model bit for bit only"))
            else:
                out_bounds.append(None)
        return outs, out_bounds

    has_bounds = any(q.contract.bounds is not None for q in progs)
    return Contract(what="the partition's steps under " + "; ".join(names)
                    + (" (outputs computed from a modelled sum held to the model only)" if has_model else ""),
                    model=(lambda xs: run(xs)[0]) if has_model else None,
                    bounds=(lambda xs: run(xs)[1]) if has_bounds or has_model else None,
                    nan_bits=all(q.contract.nan_bits for q in progs))


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
