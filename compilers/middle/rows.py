"""Row blocks: a kernel whose output rows each depend on the same rows of one input only, split
into blocks of rows that Act compiles once per distinct block height and the middle end repeats.

What belongs here: :func:`row_split` (the structural analysis that finds such an input and writes
the block kernel) and :func:`compile_rows` (the composed program). No target name appears here;
a target offers ``row_block`` (its fixed block height) and ``max_extent`` (the largest extent of
any dimension its instructions take) through ``TargetPackage.tiles()``.

The analysis is a sound subset (every rule keeps "row i of the result is a function of row i of
the input and of values that do not depend on it"), seed 004 §3.1's tiling of a parallel loop:

- the chosen parameter is row-wise in dimension 0; other parameters and constants are invariant;
- an elementwise operation of row-wise and invariant operands, where every invariant operand of
  a row-wise shape is a broadcast of a scalar, is row-wise;
- ``dot(x, y)`` contracting x's dimension 1 with y's dimension 0, no batch dimensions, x row-wise
  and y invariant, is row-wise; ``reduce`` over dimensions other than 0 of a row-wise value is
  row-wise; ``broadcast`` mapping a row-wise operand's dimension 0 to dimension 0 is row-wise;
- anything computed from invariant values only is invariant; anything else stops the analysis.

The block kernel is the same graph with dimension 0 of every row-wise value set to the block's
height; running it on each block of rows and writing each result block to the same rows of the
output is the original kernel (the rows do not interact). Every block has the full height: where
the rows are not a multiple of it, the last block is the one ending at the last row, overlapping
its predecessor (those rows are computed twice from the same numbers and written twice with the
same bits), so one block kernel serves every block. The same bits up to the sign of a NaN that an
add of NaNs of both signs returns (IEEE 754 leaves it open; the reference's numpy loops choose by
the element's position in the array, which a row has differently in the block and the whole). A dimension of the block kernel larger
than ``max_extent`` (a contraction or a reduction longer than the target's blocks) does not
decompose exactly in floating point (a split sum rounds differently): exit 3 names it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from semantics.build import rebuild
from semantics.ir import Computation, Graph, Instruction
from semantics.types import TensorType

from ..isa import HBM, Accelerator
from ..program import Concrete, Placement, Program
from .schedule import TileError

__all__ = ["RowSplit", "row_split", "compile_rows", "row_starts"]

ELEMENTWISE = frozenset({"add", "subtract", "multiply", "divide", "maximum", "minimum", "exponential", "negate",
                         "convert", "abs", "tanh", "sqrt", "rsqrt", "log", "clamp", "select", "compare", "power"})


@dataclasses.dataclass(frozen=True)
class RowSplit:
    """The row-wise parameter, its rows, and the row-wise instructions (their dimension 0 is rows)."""

    param: int
    rows: int
    rowwise: frozenset[str]


def _scalar_broadcast(comp: Computation, ins: Instruction) -> bool:
    return ins.opcode == "broadcast" and ins.attrs.get("dimensions") == () or ins.opcode == "constant"


def row_split(graph: Graph) -> RowSplit | None:
    """The first parameter the whole result is row-wise in (module doc), or None. The parameter
    and the result must be row-major (a block of rows is then a contiguous range of bytes)."""
    if len(graph.result_types) != 1 or not graph.result_types[0].row_major:
        return None
    comp = graph.entry
    for p, pname in enumerate(comp.params):
        t = comp[pname].type
        if not isinstance(t, TensorType) or len(t.shape) < 1 or t.shape[0] < 2 or not t.row_major:
            continue
        rw = _rowwise(comp, pname)
        if rw is not None and comp.root in rw:
            return RowSplit(p, t.shape[0], frozenset(rw))
    return None


def _rowwise(comp: Computation, pname: str) -> set[str] | None:
    rows = comp[pname].tensor_type.shape[0]
    rw: set[str] = {pname}
    for ins in comp.instructions:
        if ins.name == pname:
            continue
        ops = [comp[o] for o in ins.operands]
        if not any(o.name in rw for o in ops):
            continue              # invariant
        t = ins.type
        if not isinstance(t, TensorType) or not t.shape or t.shape[0] != rows:
            return None
        if ins.opcode in ELEMENTWISE:
            if all(o.name in rw or (_scalar_broadcast(comp, o) if o.tensor_type.shape else True) for o in ops):
                rw.add(ins.name)
                continue
            return None
        if ins.opcode == "dot":
            a = ins.attrs
            if (a.get("lhs_contracting_dims") == (1,) and a.get("rhs_contracting_dims") == (0,)
                    and not a.get("lhs_batch_dims", ()) and ops[0].name in rw and ops[1].name not in rw):
                rw.add(ins.name)
                continue
            return None
        if ins.opcode == "reduce":
            n = len(ops) // 2
            if 0 not in ins.attrs.get("dimensions", ()) and all(o.name in rw for o in ops[:n]) \
                    and not any(o.name in rw for o in ops[n:]):
                rw.add(ins.name)
                continue
            return None
        if ins.opcode == "broadcast":
            dims = ins.attrs.get("dimensions", ())
            if dims and dims[0] == 0:
                rw.add(ins.name)
                continue
            return None
        return None
    return rw


def block_graph(graph: Graph, split: RowSplit, height: int) -> Graph:
    """The kernel on ``height`` rows: dimension 0 of every row-wise value set to ``height``; a
    scalar broadcast feeding a row-wise operation is resized with it."""
    comp = graph.entry
    resize = set(split.rowwise)
    for ins in comp.instructions:
        if ins.name in split.rowwise:
            resize |= {o for o in ins.operands if comp[o].opcode == "broadcast" and
                       comp[o].attrs.get("dimensions") == () and comp[o].tensor_type.shape[:1] == (split.rows,)}
    types = {}
    for ins in comp.instructions:
        if ins.name in resize:
            t = ins.tensor_type
            types[ins.name] = TensorType(t.dtype, (height,) + t.shape[1:], t.layout)
    return rebuild(graph, types)


def _hbm_attrs(acc: Accelerator, ins: Concrete) -> list[str]:
    """The β attributes of ``ins`` that are HBM addresses (starts of its d0 slices)."""
    d = acc.instructions[ins.name]
    out = []
    for spec in (*d.inputs, d.output):
        if spec.buffer == HBM:
            name = str(spec.start[0]).strip()
            if name in d.attrs:
                out.append(name)
    return out


def compile_rows(graph: Graph, acc: Accelerator, split: RowSplit, block: int, max_extent: int,
                 compile_block: Callable[[Graph], Program]) -> tuple[Program, int]:
    """The program of ``graph`` as row blocks of ``block`` rows (``split.rows > block``; the last
    overlapping its predecessor), the block kernel compiled once by ``compile_block``; returns it
    and the number of distinct block kernels (1)."""
    heights = [block]
    programs: dict[int, Program] = {}
    for h in heights:
        bg = block_graph(graph, split, h)
        for ins in bg.entry.instructions:
            t = ins.type
            if isinstance(t, TensorType) and t.shape and max(t.shape) > max_extent:
                raise TileError(f"'{ins.name}' ({ins.opcode}) is {list(t.shape)} in a {h}-row block: an extent above "
                                f"{max_extent} needs a split contraction or reduction, which does not give the "
                                "same rounding (only row blocks decompose exactly)")
        programs[h] = compile_block(bg)
    full_in = [t for t in graph.param_types]
    out_t = graph.result_types[0]
    # HBM layout of the whole kernel: the block programs' own layout, with the row-wise input and
    # the output moved past everything the block programs use
    end = max(_hbm_end(acc, p) for p in programs.values())
    end = -(-end // 64) * 64
    row_in_bytes = _row_bytes(full_in[split.param])
    row_out_bytes = _row_bytes(out_t)
    in_at = end
    out_at = -(-(in_at + row_in_bytes * split.rows) // 64) * 64
    if out_at + row_out_bytes * split.rows > acc.hbm_size:
        raise TileError(f"the kernel needs {out_at + row_out_bytes * split.rows} bytes of HBM, the description has "
                        f"{acc.hbm_size}")
    instrs: list[Concrete] = []
    first = programs[heights[0]]
    for r0 in row_starts(split.rows, block):
        p = programs[block]
        src = next(x for x in p.inputs if x.index == split.param)
        dst = p.outputs[0]
        moves = ((src.addr, src.addr + row_in_bytes * block, in_at + r0 * row_in_bytes),
                 (dst.addr, dst.addr + row_out_bytes * block, out_at + r0 * row_out_bytes))
        for c in p.instructions:
            hb = _hbm_attrs(acc, c)
            attrs = []
            for k, v in c.attrs:
                if k in hb:
                    for lo, hi, to in moves:
                        if lo <= v < hi:
                            v = to + (v - lo)
                            break
                attrs.append((k, v))
            instrs.append(Concrete(c.name, tuple(attrs)))
    for p in programs.values():
        for x in p.inputs:
            if x.index != split.param and x not in first.inputs:
                raise TileError("the block programs place the invariant inputs differently")
    inputs = [Placement(x.index, in_at, full_in[split.param]) if x.index == split.param else x for x in first.inputs]
    consts = sorted({c for p in programs.values() for c in p.constants})
    prog = Program(acc.name, tuple(instrs), tuple(inputs), (Placement(0, out_at, out_t),), tuple(consts))
    return prog, len(programs)


def row_starts(rows: int, block: int) -> list[int]:
    """The first row of each block of ``block`` rows covering ``rows >= block`` rows (the last
    block ends at the last row, overlapping its predecessor where ``block`` does not divide ``rows``)."""
    starts = list(range(0, rows - block + 1, block))
    if starts[-1] + block < rows:
        starts.append(rows - block)
    return starts


def _row_bytes(t: TensorType) -> int:
    from semantics.layout import byte_size

    return byte_size(t) // t.shape[0]


def _hbm_end(acc: Accelerator, p: Program) -> int:
    from semantics.layout import byte_size

    end = max([x.addr + byte_size(x.type) for x in (*p.inputs, *p.outputs)] + [a + len(b) for a, b in p.constants])
    for c in p.instructions:
        d = acc.instructions[c.name]
        env = c.env
        for spec in (*d.inputs, d.output):
            if spec.buffer == HBM:
                s, n = spec.bounds(env)
                end = max(end, s[0] + n[0])
    return end
