"""What the partitioner reads of a graph, and the sub-graph of a set of its operators.

What belongs here: :class:`GraphView` (the entry computation seen as placeable operators: their
order, users, MACs and bytes; the values free everywhere; the graph's outputs) and
:meth:`GraphView.subgraph` (the kernel a region or a host step is: its inputs become parameters,
the free values it reads are copied in, its outputs the root). Nothing here compiles.

- A *free* value is a constant, an iota, or an operator all of whose operands are free (a
  broadcast of a constant, a clamp bound): no step hands one over; each step that reads one
  computes its own copy (as XLA's constant folding would have done).
  A free value a dot or a convolution reads as an operand is *materialized* instead: a first host
  step computes it and it lies in DRAM like a weight, read by the step that needs it (the
  compilers take constant operands of their matrix instructions from DRAM, not as immediates).
- A *placeable* operator is every other operator of the entry but its parameters and a tuple root.
  One whose value is a tuple (or that reads one) is *host-only*: no step hands tuples over.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from semantics.graph import GraphBuilder
from semantics.ir import Attrs, Computation, Graph, Instruction
from semantics.layout import byte_size
from semantics.types import TensorType

__all__ = ["GraphView", "Sub", "VIEWS", "type_text"]

#: operators that move or copy data and compute nothing (a region of these alone does no
#: arithmetic on the accelerator)
VIEWS = frozenset({"reshape", "bitcast", "broadcast", "transpose", "slice", "concatenate", "copy", "reverse",
                   "pad", "dynamic-slice", "get-tuple-element", "tuple"})


def type_text(t: object) -> str:
    """A value's type as :class:`compilers.errors.Reason` writes it (``s8[16, 16]``)."""
    if isinstance(t, TensorType):
        return f"{t.dtype.name}{list(t.shape)}"
    return str(t)


@dataclass(frozen=True)
class Sub:
    """A sub-graph of a :class:`GraphView`: the kernel, the names of the values it reads (its
    parameters, in order) and of the values it gives (its outputs, in order)."""

    graph: Graph
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


class GraphView:
    """The entry computation of ``graph`` as the partitioner sees it (module doc)."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        comp = self.comp = graph.entry
        root = comp.root_instruction
        self.outputs: tuple[str, ...] = tuple(root.operands) if root.opcode == "tuple" else (comp.root,)
        self.params: tuple[str, ...] = tuple(comp.params)
        free: set[str] = set()
        for ins in comp.instructions:
            if ins.opcode in ("constant", "iota") or (
                    ins.operands and ins.opcode not in ("parameter", "tuple", "rng", "rng-bit-generator")
                    and all(o in free for o in ins.operands) and isinstance(ins.type, TensorType)):
                free.add(ins.name)
        self.free = frozenset(free)
        self.materialized = frozenset(o for i in comp.instructions if i.opcode in ("dot", "convolution")
                                      for o in i.operands if o in free)
        self.placeable: tuple[str, ...] = tuple(
            i.name for i in comp.instructions
            if i.opcode != "parameter" and i.name not in free and not (i.name == comp.root and i.opcode == "tuple"))
        self.position = {n: k for k, n in enumerate(self.placeable)}
        self.host_only = frozenset(
            n for n in self.placeable
            if not isinstance(comp[n].type, TensorType) or any(not isinstance(comp[o].type, TensorType)
                                                               for o in comp[n].operands))

    def __getitem__(self, name: str) -> Instruction:
        return self.comp[name]

    @cached_property
    def users(self) -> dict[str, tuple[str, ...]]:
        """The placeable operators reading each value (each once, in order)."""
        out: dict[str, list[str]] = {i.name: [] for i in self.comp.instructions}
        for n in self.placeable:
            for o in dict.fromkeys(self.comp[n].operands):
                out[o].append(n)
        return {k: tuple(v) for k, v in out.items()}

    def deps(self, name: str) -> tuple[str, ...]:
        """The placeable operators ``name`` reads (each once)."""
        return tuple(o for o in dict.fromkeys(self.comp[name].operands) if o in self.position)

    def macs(self, name: str) -> int:
        """Multiply-accumulates of operator ``name``: a dot's output elements times its
        contracted size, a convolution's output elements times its kernel's elements per output
        feature; 0 for every other operator."""
        ins = self.comp[name]
        if not isinstance(ins.type, TensorType):
            return 0
        out = ins.type.size
        if ins.opcode == "dot":
            lhs = self.comp[ins.operands[0]].type
            assert isinstance(lhs, TensorType)
            k = 1
            for d in ins.attrs.get("lhs_contracting_dims", ()):
                k *= lhs.shape[d]
            return out * k
        if ins.opcode == "convolution":
            rhs = self.comp[ins.operands[1]].type
            assert isinstance(rhs, TensorType)
            labels = str(ins.attrs["dim_labels"]).split("_")[1].split("->")[0]
            o = rhs.shape[labels.index("o")] if "o" in labels else 1
            return out * (rhs.size // max(o, 1))
        return 0

    def nbytes(self, name: str) -> int:
        """Bytes of value ``name`` (0 for a tuple)."""
        t = self.comp[name].type
        return byte_size(t.without_layout()) if isinstance(t, TensorType) else 0

    def arithmetic(self, name: str) -> bool:
        """Whether operator ``name`` computes (is not a view or a copy, :data:`VIEWS`)."""
        return self.comp[name].opcode not in VIEWS

    @cached_property
    def total_macs(self) -> int:
        return sum(self.macs(n) for n in self.placeable)

    def outputs_of(self, names: Iterable[str]) -> list[str]:
        """The values operators ``names`` give to others or to the graph's outputs, in order."""
        own = set(names)
        return [i.name for i in self.comp.instructions if i.name in own
                and (i.name in self.outputs or any(u not in own for u in self.users[i.name]))]

    def _called(self, names: list[str]) -> list[Computation]:
        """The computations operators ``names`` call (reduce regions), with those they call, in
        the graph's order (callees first)."""
        by_name = {c.name: c for c in self.graph.computations if c.name != self.comp.name}
        want: set[str] = set()
        stack = [v for n in names for _, v in self.comp[n].attrs if isinstance(v, str) and v in by_name]
        while stack:
            c = stack.pop()
            if c not in want:
                want.add(c)
                stack.extend(v for i in by_name[c].instructions for _, v in i.attrs
                             if isinstance(v, str) and v in by_name)
        return [c for c in self.graph.computations if c.name in want]

    def subgraph(self, names: Iterable[str], label: str, outputs: Sequence[str] | None = None) -> Sub:
        """The kernel computing operators ``names`` (module doc): its parameters are the values
        they read from outside (placeable operators and entry parameters, in first-use order), the
        free values they read are copied in, its outputs are ``outputs`` (default: those of
        ``names`` read outside them, or outputs of the graph, in order)."""
        comp = self.comp
        own = set(names)
        order = [i.name for i in comp.instructions if i.name in own]
        if outputs is None:
            outputs = self.outputs_of(own)
        # the constants step (no operators) computes materialized values; a region reads them
        clone = self.free if not own else self.free - self.materialized
        need_free: set[str] = set()
        stack = [o for n in order for o in comp[n].operands if o in clone] + [o for o in outputs if o in clone]
        while stack:
            n = stack.pop()
            if n not in need_free:
                need_free.add(n)
                stack.extend(o for o in comp[n].operands if o in clone)
        inputs: list[str] = []
        for ins in comp.instructions:
            if ins.name in own or ins.name in need_free:
                for o in ins.operands:
                    if o not in own and o not in clone and o not in inputs:
                        inputs.append(o)
        for o in outputs:
            if o not in own and o not in clone and o not in inputs:
                inputs.append(o)
        gb = GraphBuilder(f"{self.graph.name}.{label}")
        for c in self._called(list(own) + list(need_free)):
            gb.add_computation(c)
        cb = gb.computation(f"{self.graph.name}.{label}")
        for k, n in enumerate(inputs):
            cb.add(n, "parameter", (), Attrs.of(index=k), declared=comp[n].type, loc=comp[n].loc)
        for ins in comp.instructions:
            if ins.name in own or ins.name in need_free:
                cb.add(ins.name, ins.opcode, ins.operands, ins.attrs, declared=ins.type, loc=ins.loc)
        if len(outputs) == 1:
            cb.set_root(outputs[0])
        else:
            root = f"{label}.outputs"
            while root in comp.by_name:
                root += "_"
            cb.add(root, "tuple", list(outputs))
            cb.set_root(root)
        gb.add_computation(cb.build(), entry=True)
        return Sub(gb.build(), tuple(inputs), tuple(outputs))
