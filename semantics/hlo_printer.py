"""Printer of a :class:`~semantics.ir.Graph` as XLA-style HLO text, which :mod:`semantics.hlo_parser`
reads back.

The output looks like what XLA prints, with bare names (no ``%``)::

    HloModule name, entry_computation_layout={(s8[16,16]{1,0})->s8[16]{0}}

    region (x: s8[], y: s8[]) -> s8[] {
      x = s8[] parameter(0)
      ...
    }

    ENTRY main (A: s8[16,16]) -> s8[16] {
      ...
      ROOT r = s8[16] reduce(A, zero), dimensions={1}, to_apply=region
    }

Called computations come first, the entry last. An instruction's type carries a layout only
when the instruction has one. Attributes follow the operator's :class:`~semantics.ops.AttrSpec`
order. Constant literals are printed so that they parse back bit-exactly: floats as the shortest
repr of their (exact) Python float, ``-0.0``, ``inf``, ``-inf``, ``nan``/``-nan`` for the default
quiet NaN and ``nan(0x<mantissa>)`` for any other payload. Hence
``parse_hlo(print_hlo(g)) == g`` for every graph the parser produces, and printing is a fixed
point after one round.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dtypes import DType
from .ir import Attrs, Computation, Graph, Instruction, Literal
from .ops import REGISTRY
from .types import TupleType, Type

__all__ = ["print_hlo", "format_type", "format_literal", "format_scalar"]


def format_type(t: Type, effective: bool = False) -> str:
    """``dtype[shape]{layout}``; the layout is written exactly when the type has one (``effective``:
    always, the default row-major one when it has none, as XLA's entry_computation_layout does)."""
    if isinstance(t, TupleType):
        return "(" + ", ".join(format_type(e, effective) for e in t.elements) + ")"
    s = t.short()
    if t.layout is not None:
        s += str(t.layout)
    elif effective and t.rank > 0:
        s += str(t.effective_layout)
    return s


def format_scalar(bits: int, dt: DType) -> str:
    """One element given as its raw bit pattern (an unsigned int of the dtype's width)."""
    if dt.is_pred:
        return "true" if bits else "false"
    if dt.is_int:
        if dt.is_signed and bits >= 1 << (dt.bits - 1):
            bits -= 1 << dt.bits
        return str(bits)
    sign = "-" if bits >> (dt.bits - 1) else ""
    exp = (bits >> dt.man_bits) & ((1 << dt.exp_bits) - 1)
    man = bits & ((1 << dt.man_bits) - 1)
    if exp == (1 << dt.exp_bits) - 1:
        if man == 0:
            return sign + "inf"
        if man == 1 << (dt.man_bits - 1):
            return sign + "nan"
        return f"{sign}nan(0x{man:x})"
    value = float(np.array(bits, dtype=dt.uint_np).view(dt.np))  # exact: every dtype fits in f64
    return repr(value)


def format_literal(lit: Literal) -> str:
    """The literal as HLO text: a scalar, or nested braces following the shape."""
    dt = lit.dtype
    if dt.is_pred:
        flat = [int(b) for b in np.frombuffer(lit.data, dtype=np.uint8)]
    else:
        flat = [int(b) for b in np.frombuffer(lit.data, dtype=dt.uint_np)]
    items = [format_scalar(b, dt) for b in flat]
    if not lit.shape:
        return items[0]

    def level(d: int, start: int) -> str:
        n = lit.shape[d]
        if d == len(lit.shape) - 1:
            return "{" + ", ".join(items[start:start + n]) + "}"
        stride = int(np.prod(lit.shape[d + 1:], dtype=np.int64))
        inner = [level(d + 1, start + i * stride) for i in range(n)]
        return "{ " + ", ".join(inner) + " }" if inner else "{}"

    return level(0, 0)


def _format_attr(kind: str | None, value: Any) -> str:
    if kind == "slice":
        return "{" + ", ".join(f"[{s}:{e}]" if st == 1 else f"[{s}:{e}:{st}]" for s, e, st in value) + "}"
    if kind == "padding":
        interior = any(it != 0 for _, _, it in value)
        return "x".join(f"{lo}_{hi}_{it}" if interior else f"{lo}_{hi}" for lo, hi, it in value)
    if kind == "ints" or (kind is None and isinstance(value, tuple)):
        return "{" + ",".join(str(int(v)) for v in value) + "}"
    return str(value)


def _format_attrs(opcode: str, attrs: Attrs) -> list[str]:
    op = REGISTRY.get(opcode)
    specs = {s.name: s for s in op.attrs} if op is not None else {}
    order = [s.name for s in op.attrs] if op is not None else []
    order += [k for k in attrs.keys() if k not in order]
    out = []
    for name in order:
        if name not in attrs or (opcode == "parameter" and name == "index") or (
                opcode == "constant" and name == "literal"):
            continue
        spec = specs.get(name)
        out.append(f"{name}={_format_attr(spec.kind if spec else None, attrs[name])}")
    return out


def _format_instruction(ins: Instruction, root: bool) -> str:
    if ins.opcode == "parameter":
        args = str(ins.attrs["index"])
    elif ins.opcode == "constant":
        args = format_literal(ins.attrs["literal"])
    else:
        args = ", ".join(ins.operands)
    head = f"{ins.name} = {format_type(ins.type)} {ins.opcode}({args})"
    parts = [head, *_format_attrs(ins.opcode, ins.attrs)]
    return ("ROOT " if root else "") + ", ".join(parts)


def _format_computation(comp: Computation, entry: bool) -> list[str]:
    params = ", ".join(f"{p}: {format_type(comp[p].type)}" for p in comp.params)
    head = f"{'ENTRY ' if entry else ''}{comp.name} ({params}) -> {format_type(comp.result_type)} {{"
    body = [f"  {_format_instruction(i, i.name == comp.root)}" for i in comp.instructions]
    return [head, *body, "}"]


def print_hlo(g: Graph) -> str:
    """The module as HLO text (see the module docstring for the form)."""
    entry = g.entry
    params = ", ".join(format_type(t, effective=True) for t in entry.param_types)
    result = format_type(entry.result_type, effective=True)
    lines = [f"HloModule {g.name}, entry_computation_layout={{({params})->{result}}}"]
    for comp in g.computations:
        if comp.name != g.entry_name:
            lines += ["", *_format_computation(comp, False)]
    lines += ["", *_format_computation(entry, True)]
    return "\n".join(lines) + "\n"
