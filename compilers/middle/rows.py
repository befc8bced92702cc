"""Row blocks: a kernel with more rows than a target's fixed block, computed block by block where
its operators decompose exactly by rows (matmuls by rows of the left operand, softmax by rows).

What belongs here: :func:`row_split` (which values are indexed by the output's rows, which
parameters are cut into row blocks and which every block reads whole, or why the kernel does not
decompose), :func:`block_graph` (the kernel at ``rows`` rows: what Act compiles once) and
:func:`row_program` (Act's block program instantiated per row block by rebasing its HBM addresses
into the whole operands and result). No target name appears here; a target offers row blocks with
a record whose ``row_block`` is its fixed block's rows (``TargetPackage.tiles``).

The decomposition (the identity, tested bit for bit against the reference interpreter by
``tests/compilers/test_middle_rows.py``): call a value *row-indexed* when its dimension 0 is the
output's dimension 0 and its row i depends only on row i of the row-indexed parameters. Working
back from the root, a row-indexed value may be

- an elementwise operator (or convert) of row-indexed operands;
- ``dot(a, b)`` contracting a's dimension 1 (no batch dimensions) with ``a`` row-indexed and ``b``
  read whole (row i of the product is row i of a times b);
- ``reduce(x, init)`` over dimensions other than 0 with ``x`` row-indexed (softmax's row sum);
- ``broadcast(x)`` whose operand dimension 0 maps to dimension 0 (x row-indexed), or that adds
  dimension 0 (x read whole);
- a parameter (cut into row blocks).

Every other value is computed whole from parameters that are not cut. Then for any set of rows
R, ``kernel(P[R], W)[R] = kernel(P, W)[R]``: the same operators on the same numbers, in the same
order (the reduction and contraction dimensions are not split, so no rounding moves), up to the
sign of a NaN that an add of two NaNs of both signs returns: IEEE 754 leaves it open and the
reference's numpy loops choose by the element's position in the array, which differs between the
whole kernel and its block (the QKV softmax contract's declared difference). Blocks of
``row_block`` rows are computed in turn; a last block shorter than the block is computed as the
``row_block`` rows ending at the last row (overlapping the previous block: those rows are written
twice with the same bits), so one block program serves every block. A kernel whose reduction or
contraction dimension (or any dimension other than the rows) is larger than the block does not
decompose: splitting it would change the order of floating-point sums and hence the rounding, so
it exits 3 naming the operator.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from semantics.hlo_parser import parse_hlo
from semantics.hlo_printer import print_hlo
from semantics.ir import Computation, Graph, Instruction
from semantics.ops._table import get_op
from semantics.types import TensorType

from ..isa import Accelerator
from ..program import Concrete, Placement, Program
from .schedule import ALIGN, TileError

__all__ = ["RowSplit", "row_split", "block_graph", "row_program", "row_blocks"]


@dataclass(frozen=True)
class RowSplit:
    """The kernel's rows (``m``), the parameters cut into row blocks, the row-indexed values."""

    m: int
    cut: tuple[int, ...]
    rows: frozenset[str]


class NoRows(TileError):
    """The kernel does not decompose by rows (the reason names the operator)."""


def _elementwise(op: str) -> bool:
    d = get_op(op)
    return d is not None and d.category in ("elementwise", "conversion") and op != "bitcast-convert"


def row_split(graph: Graph, block: int) -> RowSplit:
    """Which values are row-indexed (module doc), or :class:`NoRows` naming why not."""
    comp = graph.entry
    root = comp.root_instruction
    if not isinstance(root.type, TensorType) or not root.tensor_type.shape:
        raise NoRows("the result is not a tensor with rows")
    m = root.tensor_type.shape[0]
    rows: set[str] = {root.name}
    whole: set[str] = set()
    for ins in reversed(comp.instructions):
        if ins.name in rows:
            for name, is_row in _operands(comp, ins, m, block):
                (rows if is_row else whole).add(name)
        elif ins.name in whole:
            whole.update(ins.operands)
    both = rows & whole
    if both:
        name = sorted(both)[0]
        raise NoRows(f"'{name}' is read both by rows and whole")
    cut = tuple(sorted(int(comp[p].attrs["index"]) for p in comp.params if p in rows))
    for p in comp.params:
        t = comp[p].tensor_type
        if p in rows and t.layout is not None and not t.layout.is_default_for(len(t.shape)):
            raise NoRows(f"parameter '{p}' is cut into row blocks and must be row-major")
    for ins in comp.instructions:
        if not isinstance(ins.type, TensorType):
            raise NoRows(f"'{ins.name}' is not a tensor")
        shape = ins.tensor_type.shape
        big = [d for i, d in enumerate(shape) if d > block and not (i == 0 and ins.name in rows)]
        if big:
            raise NoRows(f"'{ins.name}' ({ins.opcode}) has a dimension of {big[0]} > the {block}-row block that is "
                         "not its rows: splitting it would change the order of the sums and their rounding")
    return RowSplit(m, cut, frozenset(rows))


def _operands(comp: Computation, ins: Instruction, m: int, block: int) -> list[tuple[str, bool]]:
    """(operand, row-indexed) for a row-indexed ``ins`` (module doc), or NoRows naming why not."""
    op, shape = ins.opcode, ins.tensor_type.shape
    if shape[0] != m:
        raise NoRows(f"'{ins.name}' ({op}) does not have the output's {m} rows in dimension 0")
    if op == "parameter":
        return []
    if _elementwise(op) or op == "copy":
        out = []
        for o in ins.operands:
            t = comp[o].type
            if isinstance(t, TensorType) and not t.shape:
                out.append((o, False))
            else:
                out.append((o, True))
        return out
    if op == "dot":
        a = ins.attrs
        if a.get("lhs_contracting_dims") != (1,) or a.get("lhs_batch_dims", ()) or a.get("rhs_batch_dims", ()):
            raise NoRows(f"'{ins.name}' (dot) does not contract its left operand's dimension 1 without batch "
                         "dimensions")
        k = comp[ins.operands[0]].tensor_type.shape[1]
        if k > block:
            raise NoRows(f"'{ins.name}' (dot) contracts {k} > {block} elements: the target rounds once after the "
                         "whole sum, so splitting the contraction changes the result")
        return [(ins.operands[0], True), (ins.operands[1], False)]
    if op == "reduce":
        dims = tuple(ins.attrs.get("dimensions"))
        if 0 in dims:
            raise NoRows(f"'{ins.name}' (reduce) sums over the rows")
        n = 1
        for d in dims:
            n *= comp[ins.operands[0]].tensor_type.shape[d]
        if n > block:
            raise NoRows(f"'{ins.name}' (reduce) sums {n} > {block} elements per row: splitting the sum changes "
                         "its rounding")
        half = len(ins.operands) // 2
        return [(o, i < half) for i, o in enumerate(ins.operands)]
    if op == "broadcast":
        dims = tuple(ins.attrs.get("dimensions"))
        return [(ins.operands[0], bool(dims) and dims[0] == 0)]
    raise NoRows(f"'{ins.name}' ({op}) is not known to decompose by rows")


def block_graph(graph: Graph, rs: RowSplit, rows: int) -> Graph:
    """``graph`` with every row-indexed value at ``rows`` rows (what one block computes)."""
    comp = graph.entry
    new = []
    for ins in comp.instructions:
        if ins.name in rs.rows:
            t = ins.tensor_type
            ins = replace(ins, type=replace(t, shape=(rows, *t.shape[1:])))
        new.append(ins)
    c2 = replace(comp, instructions=tuple(new))
    g2 = replace(graph, computations=tuple(c2 if c.name == comp.name else c for c in graph.computations))
    return parse_hlo(print_hlo(g2))


def row_blocks(m: int, block: int) -> list[int]:
    """The first row of each block (the last ends at row m, overlapping its predecessor)."""
    starts = list(range(0, m - block + 1, block))
    if starts[-1] + block < m:
        starts.append(m - block)
    return starts


def _nbytes(t: TensorType) -> int:
    return t.size * (t.dtype.bits // 8)


def _hbm_accesses(acc: Accelerator, c: Concrete) -> list[tuple[str, int, int]]:
    """(attribute, start, length) of each HBM byte range the instruction reads or writes."""
    ins = acc.instructions[c.name]
    env = c.env
    out = []
    for s in (*ins.inputs, ins.output):
        if s.buffer != "d0":
            continue
        if len(s.start) != 1 or len(s.start[0].vars()) != 1 or str(s.start[0]) not in env:
            raise TileError(f"{c.name}'s HBM address is not one attribute: its block program cannot be rebased")
        (start,), (length,) = s.bounds(env)
        out.append((str(s.start[0]), start, length))
    return out


def row_program(graph: Graph, rs: RowSplit, block: int, prog: Program, acc: Accelerator) -> Program:
    """The whole kernel from ``prog`` (the block program of :func:`block_graph`): per row block
    the same instructions, with the HBM addresses of the cut parameters and the result moved to
    that block's rows of the whole ones (placed after everything ``prog`` uses in HBM)."""
    comp = graph.entry
    types = {i: comp[p].tensor_type for i, p in enumerate(comp.params)}
    moved = [(x, ("in", x.index)) for x in prog.inputs if x.index in rs.cut] + [(x, ("out", x.index))
                                                                                 for x in prog.outputs]
    end = max([x.addr + _nbytes(x.type) for x in (*prog.inputs, *prog.outputs)] +
              [a + len(b) for a, b in prog.constants] +
              [s + n for c in prog.instructions for _, s, n in _hbm_accesses(acc, c)] + [ALIGN])
    whole_at: dict[tuple[str, int], int] = {}
    row_bytes: dict[tuple[str, int], int] = {}
    for x, key in moved:
        full = types[x.index] if key[0] == "in" else graph.result_type
        assert isinstance(full, TensorType)
        at = -(-end // ALIGN) * ALIGN
        whole_at[key], row_bytes[key] = at, _nbytes(x.type) // block
        end = at + _nbytes(full)
    if end > acc.hbm_size:
        raise TileError(f"the kernel's operands and result need {end} bytes of HBM, the description has {acc.hbm_size}")

    def rebase(c: Concrete, r0: int) -> Concrete:
        env = dict(c.attrs)
        for attr, start, length in _hbm_accesses(acc, c):
            for x, key in moved:
                if x.addr <= start and start + length <= x.addr + _nbytes(x.type):
                    env[attr] = whole_at[key] + r0 * row_bytes[key] + (start - x.addr)
                    break
                if start < x.addr + _nbytes(x.type) and x.addr < start + length:
                    raise TileError(f"{c.name} reaches across the block's operand {key[0]} {key[1]}: its block "
                                    "program cannot be rebased")
        return Concrete(c.name, tuple((k, env[k]) for k, _ in c.attrs))

    out = [rebase(c, r0) for r0 in row_blocks(rs.m, block) for c in prog.instructions]
    inputs = tuple(Placement(x.index, whole_at[("in", x.index)], types[x.index]) if x.index in rs.cut else x
                   for x in prog.inputs)
    outputs = tuple(Placement(x.index, whole_at[("out", x.index)], graph.result_type)  # type: ignore[arg-type]
                    for x in prog.outputs)
    return Program(prog.target, tuple(out), inputs, outputs, prog.constants)
