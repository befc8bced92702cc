"""Elementwise glue between tiled layers: the residual add of a ResNet block, on the accelerator.

What belongs here: :class:`Residual` (the glue read off a graph), :func:`residual_root` (where a
graph ends in one, for :mod:`.chain`'s split), :func:`recognize_residual` and
:func:`residual_program` (its program from the target's ``resadd`` micro-kernel). No target name
appears here.

The form (jax's ``jnp.clip(x32 + skip32, -128, 127)`` of two int8 activations, optionally
``jnp.maximum(., 0)``, then ``astype(int8)``), canonical (:mod:`compilers.canon`)::

    s   = add(convert_s32(A s8[..., C]), convert_s32(B s8[..., C]))     (either order)
    out = convert_s8(clamp(lo, s, 127))              lo = -128, or 0 (the ReLU inside the clip)
        | convert_s8(maximum(clamp(-128, s, 127), 0))                    ReLU after the clip
        | maximum(convert_s8(clamp(-128, s, 127)), 0)                    ReLU of the int8 result

that is ``relu?(sat8(A + B))`` element by element: the s32 sum of two int8 values never wraps, the
clamp is the saturation, and ReLU commutes with it. A is the previous layer's result (parameter 0
of the glue's graph), B an entry parameter of the user's graph (the block's input, the skip).

The program: the tensor as its ``[M, C]`` row-major matrix, in tiles of ``bm`` rows x ``bk``
bytes (the target's block), one ``resadd(rows, cols, a, b, out, acc, stride, relu)`` each: on
Gemmini two int8 moves into one accumulator block (the second accumulating) and a move out at
scale 1.0 with the ReLU bit, Gemmini's own residual add; on AMX a saturating byte add per row.
"""

from __future__ import annotations

from dataclasses import dataclass

from semantics.dtypes import DTYPES
from semantics.ir import Computation, Graph, Instruction
from semantics.types import TensorType

from ..program import Concrete, Placement, Program
from .gemm import _dtype, _scalar
from .schedule import ALIGN, MicroKernels, TileError, TileTarget, check_strides
from .tiled import tiles

__all__ = ["Residual", "residual_root", "recognize_residual", "residual_program"]


@dataclass(frozen=True)
class Residual:
    """``out = relu?(sat8(A + B))`` on ``shape``; ``a``, ``b``: parameter indices of its graph."""

    shape: tuple[int, ...]
    a: int
    b: int
    relu: bool

    @property
    def m(self) -> int:
        """Rows of the ``[M, C]`` view."""
        out = 1
        for d in self.shape[:-1]:
            out *= d
        return out

    @property
    def c(self) -> int:
        return self.shape[-1]


def _is_zero(comp: Computation, name: str) -> bool:
    return _scalar(comp, name) == 0


def _widened(comp: Computation, name: str) -> str | None:
    """The s8 value ``name`` is the s32 conversion of, else None."""
    ins = comp[name]
    if ins.opcode == "convert" and _dtype(ins) == "s32" and _dtype(comp[ins.operands[0]]) == "s8":
        return ins.operands[0]
    return None


def _relu_of(comp: Computation, ins: Instruction) -> Instruction | None:
    """The operand of ``maximum(x, 0)`` (either order), else None."""
    if ins.opcode != "maximum":
        return None
    x, z = ins.operands if _is_zero(comp, ins.operands[1]) else ins.operands[::-1]
    return comp[x] if _is_zero(comp, z) else None


def _match(comp: Computation, root: Instruction) -> tuple[str, str, bool] | None:
    """(A, B, relu) where ``root`` is the module doc's form, else None."""
    cur = root
    inner = _relu_of(comp, cur) if _dtype(cur) == "s8" else None       # ReLU of the int8 result
    relu = inner is not None
    cur = inner or cur
    if cur.opcode != "convert" or _dtype(cur) != "s8":
        return None
    cur = comp[cur.operands[0]]
    if not relu and (inner := _relu_of(comp, cur)) is not None:        # ReLU after the clip
        relu, cur = True, inner
    if cur.opcode != "clamp" or _dtype(cur) != "s32":
        return None
    lo, s, hi = cur.operands
    low, high = _scalar(comp, lo), _scalar(comp, hi)
    if high != 127 or low not in (-128, 0):
        return None
    relu = relu or low == 0
    add = comp[s]
    if add.opcode != "add":
        return None
    a, b = (_widened(comp, o) for o in add.operands)
    if a is None or b is None or comp[a].type != comp[b].type:
        return None
    return a, b, relu


def residual_root(comp: Computation) -> tuple[str, str] | None:
    """Where the entry's root is the glue: (the value computed before it, the entry parameter it
    adds), else None."""
    m = _match(comp, comp.root_instruction)
    if m is None:
        return None
    a, b, _ = m
    for x, y in ((a, b), (b, a)):
        if comp[y].opcode == "parameter" and comp[x].opcode != "parameter":
            return x, y
    return None


def recognize_residual(graph: Graph) -> Residual | None:
    """The graph (parameter 0 = the previous layer's result) as a :class:`Residual`, or None."""
    if len(graph.computations) != 1 or not isinstance(graph.result_type, TensorType):
        return None
    comp = graph.entry
    m = _match(comp, comp.root_instruction)
    if m is None:
        return None
    a, b, relu = m
    ia, ib = comp[a], comp[b]
    if ia.opcode != "parameter" or ib.opcode != "parameter":
        return None
    t = ia.tensor_type
    if not t.shape or not t.row_major or not ib.tensor_type.row_major:
        return None
    return Residual(t.shape, int(ia.attrs["index"]), int(ib.attrs["index"]), relu)


def _align(x: int) -> int:
    return -(-x // ALIGN) * ALIGN


def residual_program(rs: Residual, t: TileTarget, hbm_size: int, target: str, base: int, a_at: int,
                     b_at: int | None) -> tuple[Program, int]:
    """The glue's program (module doc) reading A at ``a_at`` and B at ``b_at`` (None: B is placed
    here, an input of the program), its result after ``base``; and the end of its HBM."""
    if t.resadd is None:
        raise TileError("the residual add (saturating int8 add) has no micro-kernel on this target")
    bm, bk, _ = t.block
    check_strides(t, {"activation": rs.c})
    nbytes = rs.m * rs.c
    inputs = []
    end = _align(base) + ALIGN
    if b_at is None:
        b_at, end = end, _align(end + nbytes)
        inputs.append(Placement(rs.b, b_at, TensorType(DTYPES["s8"], rs.shape)))
    out_at, end = end, _align(end + nbytes)
    if end > hbm_size:
        raise TileError(f"the residual add's operands and result need {end} bytes of HBM, the description has {hbm_size}")
    mk = MicroKernels(t)
    out: list[Concrete] = []
    k = 0
    for i0, r in tiles(rs.m, bm):
        for j0, c in tiles(rs.c, bk):
            off = i0 * rs.c + j0
            mk.emit(out, "resadd", (r, c), (a_at + off, b_at + off, out_at + off, t.acc_addr(k % t.acc_blocks)),
                    (rs.c, int(rs.relu)))
            k += 1
    outputs = (Placement(0, out_at, TensorType(DTYPES["s8"], rs.shape)),)
    return Program(target, tuple(out), tuple(inputs), outputs, ()), end
