"""The outer schedule of a tiled GEMM and its composition from per-shape micro-kernels.

What belongs here: :class:`TileTarget` (= :class:`compilers.tile_offer.TileOffer`, what a target
package offers the middle end: block sizes, on-chip capacities, the store path's scales, and one
micro-kernel builder per step kind), :class:`MicroKernels` (each distinct (step, tile shape) built
once, then instantiated by addresses), :func:`plan` (the loop order, chunking and on-chip
placement, decided once from the capacities) and :func:`tile_program` (the whole
:class:`compilers.program.Program`). No target name appears here.

The schedule (seed 003 §3.3's split / reorder / stage, seed 004 §3.1-3.2's tile-and-pad, and the
loop orders Autocomp's Gemmini GEMMs use, seed 002 §4 and appendix D), weight-stationary:

    load B's blocks once if they fit half the operand buffer (else per use, two slots)
    for each chunk of Mc row blocks (Mc * 2 accumulator blocks fit: two column blocks in flight)
        load the chunk's A blocks (every contraction block: the row panel, reused for all j)
        for each column block j
            bias rows into the chunk's accumulators (if any)
            for each contraction block q
                [load B(q, j)]; multiply B(q, j) into every row block of the chunk (B loaded into
                the array once, then reused: the micro-kernel's first multiply preloads it)
            store the chunk's accumulators through the tail (scale, round, clamp, ReLU)

Software pipelining (a target whose offer sets ``overlap``: its load, execute and store units run
concurrently and its kernels keep no state but the array's weights). The same steps, reordered so
that independent work sits between the multiplies:

- when B is resident, the first chunk loads its operands just in time: in column block 0, B(q, 0)
  right before the first multiply of contraction block q and each A(i, q) right before the
  multiply that reads it; B(q, j + 1) in column block j, right after the first multiply of
  contraction block q + 1 (the last after the block's last multiply), so that it queues behind
  the A loads that column block needs first. The first multiply then follows its two operand
  loads, and the execute unit starts while the rest of the panel and of B stream in (with B per
  use, the first chunk's panel is loaded up front).
- the stores of column block j are deferred into the next column block (of this chunk or the
  next): one after each multiply, in order, and whatever remains is flushed at the end of that
  block (and of the program). The accumulator half alternates with a column-block counter over
  the whole program, so the deferred stores never share accumulators with the block that runs
  beside them; each store still follows the last multiply into its accumulator and precedes the
  next bias or multiply that writes it.
- when the layer has more than one chunk and two A panels of the chunk fit beside B, the panels
  alternate between two regions: each next chunk's panel loads are spread over this chunk's last
  column block, one after each multiply (after that multiply's deferred store), the rest flushed
  before the next chunk's first multiply.

Without ``overlap`` the order is the loop nest above (accumulator half by j, one A panel).

Accumulation: the first multiply of a tile overwrites its accumulator (or adds to the bias), the
others add (identity 2 of :mod:`.tiled`). Placement: operand blocks and accumulators get fixed
slots from arithmetic on the loop indices, so no allocation is solved per tile; the cost of
building a program is one micro-kernel per distinct step and shape plus writing the instructions.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from semantics.dtypes import DTYPES
from semantics.errors import AccvError
from semantics.types import TensorType

from ..program import Concrete, Placement, Program
from ..tile_offer import TileOffer
from .gemm import Gemm
from .tiled import scale_bits, tiles
from .window import dense_steps, im2col_packs

__all__ = ["TileError", "TileTarget", "MicroKernels", "Plan", "plan", "check_strides", "tile_program", "ALIGN"]

ALIGN = 64          # HBM placements start on 64-byte boundaries, the first at ALIGN (never address 0)


class TileError(AccvError):
    """The target cannot run this layer tiled (the reason names what does not fit or is missing);
    the driver raises it as :class:`compilers.act.Unsupported` (exit 3)."""

    exit_code = 3


TileTarget = TileOffer


@dataclass
class MicroKernels:
    """Each (kernel, shape, flags) built once: later uses only rebase its addresses."""

    target: TileTarget
    built: dict[tuple, list[Concrete]] = field(default_factory=dict)
    _specs: dict[tuple, list[_Spec]] = field(default_factory=dict)

    def emit(self, out: list[Concrete], kind: str, shape: tuple, addrs: tuple, flags: tuple = ()) -> None:
        key = (kind, shape, flags)
        specs = self._specs.get(key)
        if specs is None:
            tpl = getattr(self.target, kind)(*shape, *(_mark(i) for i in range(len(addrs))), *flags)
            self.built[key] = tpl
            specs = self._specs[key] = _specs(tpl)
        for name, attrs, subs in specs:
            if not subs:
                out.append(Concrete(name, attrs))
            elif len(subs) == 1:         # the common case: one address (head and tail kept as tuples)
                pos, k, i, off = subs[0]
                out.append(Concrete(name, attrs[:pos] + ((k, addrs[i] + off),) + attrs[pos + 1:]))
            else:
                a = list(attrs)
                for pos, k, i, off in subs:
                    a[pos] = (k, addrs[i] + off)
                out.append(Concrete(name, tuple(a)))


# Address placeholders: a micro-kernel is built once with address i given as (i + 1) * MARK,
# which no real attribute value reaches; a kernel may add offsets below MARK to an address (row i
# of a block) but not scale it. Instantiation maps (i + 1) * MARK + off to the i-th actual
# address + off.
_MARK = 1 << 40


def _mark(i: int) -> int:
    return (i + 1) * _MARK


# Per instruction of a template: its name, its attributes (addresses as placeholders) and where the
# addresses go: (attribute position, attribute, address index, offset).
_Spec = tuple[str, tuple[tuple[str, int], ...], tuple[tuple[int, str, int, int], ...]]


def _specs(tpl: list[Concrete]) -> list[_Spec]:
    """The :data:`_Spec` of each instruction of a template."""
    out = []
    for c in tpl:
        subs = tuple((pos, k, v // _MARK - 1, v % _MARK) for pos, (k, v) in enumerate(c.attrs) if v >= _MARK)
        out.append((c.name, c.attrs, subs))
    return out


@dataclass(frozen=True)
class Plan:
    """The schedule's decisions (module doc) and the HBM layout of the layer."""

    gemm: Gemm
    block: tuple[int, int, int]
    chunk: int                 # Mc: row blocks per chunk
    b_resident: bool           # all of B's blocks loaded once
    a_resident: bool           # the chunk's A row panel loaded once (else per use, two slots)
    a_at: int
    b_at: int
    bias_at: int | None
    out_at: int
    hbm_end: int
    a_view: tuple[int, int]    # (address, row pitch) the A blocks are loaded from (A, or its packed copy)
    b_view: tuple[int, int]    # the same for B's image rows (ceil(K / b_group) rows of N * b_group bytes)
    consts_at: int
    scratch_at: int
    panels: int = 1            # A row panels on chip: 2 = the next chunk's loads while this one runs
    b_block: int = 0           # >0: B's packed copy is column-block-major, this many bytes a column block
    dw_at: int | None = None   # a grouped convolution's weights as stored (b_at: its dense weights)


def _align(x: int) -> int:
    return -(-x // ALIGN) * ALIGN


def _layout_ok(t: object, want: str) -> bool:
    from semantics.hlo_printer import format_type

    text = format_type(t)  # type: ignore[arg-type]
    have = text[text.index("]") + 1:]
    # row-major at any rank (an A with batch dimensions is its [M, K] view) is row-major [M, K]
    return have == want or (t.row_major and want in ("", "{1,0}"))  # type: ignore[attr-defined]


def offer_for(g: Gemm, t: TileTarget) -> TileTarget:
    """The variant of offer ``t`` for ``g``: ``wrap`` for an s8 x s8 -> s8 dot where ``t``'s store
    cannot write the low byte; then for ``g``'s weights ``transposed_b`` for a B stored ``[N, K]``
    (raises :class:`TileError` where the target has none), ``row_major_b`` for a row-major B where
    the offer's own layout is another, else ``t``."""
    if g.tail.wrap and not t.low_byte and t.wrap is not None:
        t = t.wrap                 # the store that writes each accumulator's low byte
    if g.b_t:
        if t.transposed_b is None:
            raise TileError("B is contracted on its last dimension (weights stored [N, K], PyTorch's layout) and this "
                            "target offers no tiles that read B transposed")
        return t.transposed_b      # B's rows read as columns by the program's packing
    if t.row_major_b is not None and g.param_types \
            and not _layout_ok(g.param_types[g.b], t.layouts[1]) and g.param_types[g.b].row_major:
        return t.row_major_b       # the user's row-major weights, repacked by the program
    return t


def check_strides(t: TileTarget, strides: dict[str, int]) -> None:
    """Raise :class:`TileError` when a row stride (``what -> bytes``) is past the offer's ``max_stride``."""
    if t.max_stride is None:
        return
    what, worst = max(strides.items(), key=lambda kv: kv[1])
    if worst > t.max_stride:
        raise TileError(f"the {what} row stride of {worst} bytes is more than a move's {t.max_stride} "
                        f"(the target's stride domain)")


def plan(g: Gemm, t: TileTarget, hbm_size: int, base: int = 0, a_at: int | None = None) -> Plan:
    """Chunking and placement for ``g`` on ``t`` (raises :class:`TileError` when it cannot fit):
    its HBM from ``base`` on; ``a_at``: A is already in HBM there (a chain's previous layer's
    result, :mod:`.chain`), else A is placed first."""
    bm, bk, bn = t.block
    kb = g.k_bytes             # K in bytes: blocks, the B group and pitches are in bytes of K
    mt, kt, nt = -(-g.m // bm), -(-kb // bk), -(-g.n // bn)
    if g.param_types:
        for role, idx, want in (("A", g.a, t.layouts[0]), ("B", g.b, t.layouts[1])):
            if not _layout_ok(g.param_types[idx], want):
                raise TileError(f"{role} (parameter {idx}) must have layout '{want or '{1,0}'}' for this target's "
                                f"tiles (declare it so; the weights pre-packed)")
    if g.window is not None and not g.window.nhwc:
        raise TileError(f"the im2col packing reads NHWC / HWIO / NHWC, not {'/'.join(g.window.layouts)}")
    if g.window is not None and t.pack is None:
        raise TileError("a convolution as the GEMM of its im2col matrix needs a target that packs A (its tiles "
                        "read the operands in place)")
    if g.tail.wrap and not t.low_byte:
        raise TileError("the store path saturates the int32 accumulator to s8 and has no way to write its low byte "
                        "(an s8 x s8 -> s8 dot wraps modulo 256)")
    if g.tail.u8 and not t.unsigned_out:
        raise TileError("the store path saturates to s8 and has no way to write a u8 result (a clamp to 0..255)")
    if g.tail.scale is not None:
        why = t.scale_ok(g.tail.scale)  # type: ignore[arg-type]
        if why is not None:
            raise TileError(f"the store path cannot scale by {g.tail.scale!r} "
                            f"(f32 bits {scale_bits(g.tail.scale):#010x}): {why}")  # type: ignore[arg-type]
    b_resident = kt * nt <= t.operand_blocks // 2
    b_slots = kt * nt if b_resident else 2
    room = t.operand_blocks - b_slots
    chunk = min(mt, t.acc_blocks // 2)
    a_resident = room // kt >= 1
    panels = 1
    if a_resident:
        chunk = min(chunk, room // kt)
        if t.overlap and mt > chunk and 2 * chunk * kt <= room:
            panels = 2
    elif room < 2:
        raise TileError(f"the {t.operand_blocks}-block operand buffer cannot hold two A and two B blocks")
    if chunk < 1:
        raise TileError(f"the {t.acc_blocks}-block accumulator cannot hold two output blocks")
    gb = t.b_group
    b_rows, b_pitch = -(-kb // gb), g.n * gb
    if g.b_t and t.pack is None:  # B stored [N, K] and read in place (the tiles transpose it)
        b_rows, b_pitch = g.n, kb
    if a_at is None:
        a_at = _align(base) + ALIGN
        b_at = _align(a_at + g.a_bytes)
    else:
        b_at = _align(base) + ALIGN
    end = _align(b_at + g.batch * b_rows * b_pitch)
    dw_at = None
    if g.window is not None and g.window.groups > 1:
        kernel = "spread" if g.window.depthwise else "copy"
        if getattr(t, kernel) is None:
            raise TileError(f"a convolution of {g.window.groups} feature groups needs its dense weights built on the "
                            f"target, which has no {kernel} micro-kernel")
        dw_at, end = end, _align(end + g.window.w_bytes)
    bias_at = None
    if g.bias is not None:
        bias_at, end = end, _align(end + 4 * g.n)
    out_at = end
    end = _align(out_at + g.batch * g.m * g.n * (4 if g.tail.raw else 1))
    a_view, b_view = (a_at, kb), (b_at, b_pitch)
    consts_at = scratch_at = end
    b_block = 0
    if t.pack is not None:        # packed copies: whole blocks, zero beyond the matrix
        # B's copy column-block-major (each column block's rows bn * gb bytes apart), so a block's
        # row stride stays one block row whatever N is
        a_pitch, bp_pitch = kt * bk, bn * gb
        b_block = kt * (bk // gb) * bp_pitch
        a_view, end = (end, a_pitch), _align(end + mt * bm * a_pitch)
        b_view, end = (end, bp_pitch), _align(end + nt * b_block)
    # the tile loads read with a stride: the packed copies where there are (the packing reads
    # the user's rows by address), else the operands themselves
    check_strides(t, {"A": a_view[1], "B": b_view[1]} if t.pack is not None else
                  {"A": kb, "B": b_pitch, "output": g.n * (4 if g.tail.raw else 1)})
    nconst = len(t.constants(g.tail))
    if nconst:
        consts_at, end = end, _align(end + nconst)
    if t.scratch_bytes:
        scratch_at, end = end, _align(end + t.scratch_bytes)
    if end > hbm_size:
        raise TileError(f"the layer's operands and result need {end} bytes of HBM, the description has {hbm_size}")
    return Plan(g, t.block, chunk, b_resident, a_resident, a_at, b_at, bias_at, out_at, end, a_view, b_view,
                consts_at, scratch_at, panels, b_block, dw_at)


class _Background:
    """The steps the pipelined schedule (module doc) places between multiplies: the previous column
    block's stores and the next chunk's A loads, each in order, at most one of each per multiply."""

    def __init__(self, mk: MicroKernels, out: list[Concrete]) -> None:
        self.mk, self.out = mk, out
        self.stores: deque[tuple] = deque()
        self.loads: deque[tuple] = deque()

    def step(self) -> None:
        if self.stores:
            self.mk.emit(self.out, *self.stores.popleft())
        if self.loads:
            self.mk.emit(self.out, *self.loads.popleft())

    def flush(self) -> None:
        while self.stores or self.loads:
            self.step()


def tile_program(p: Plan, t: TileTarget, target_name: str) -> tuple[Program, MicroKernels]:
    """The whole program of plan ``p``: the schedule of the module doc over ``t``'s micro-kernels."""
    g = p.gemm
    bm, bk, bn = p.block
    gb = t.b_group
    mk = MicroKernels(t)
    out: list[Concrete] = list(t.prologue(p.consts_at, g.tail))
    kb = g.k_bytes
    rows, ks, cols = tiles(g.m, bm), tiles(kb, bk), tiles(g.n, bn)
    kt = len(ks)
    b_slots = kt * len(cols) if p.b_resident else 2
    ob = 4 if g.tail.raw else 1
    oa, aa = t.operand_addr, t.acc_addr
    (a_src, a_pitch), (b_src, b_pitch) = p.a_view, p.b_view

    def b_slot(q: int, j: int, use: int) -> int:
        return q * len(cols) + j if p.b_resident else use % 2

    def b_addr(q0: int, j0: int) -> int:
        if g.b_t and t.pack is None:    # B^T in place: block (q, j) is rows j0.. of K bytes, from q0
            return b_src + j0 * b_pitch + q0
        if p.b_block:               # the column-block-major copy (plan)
            return b_src + (j0 // bn) * p.b_block + (q0 // gb) * b_pitch
        return b_src + (q0 // gb) * b_pitch + j0 * gb

    if p.dw_at is not None:      # a grouped convolution: its dense B first (row-major at b_at)
        for kind, shape, addrs, flags in dense_steps(g.window, t.block, p.dw_at, p.b_at, t.acc_addr(0)):
            mk.emit(out, kind, shape, addrs, flags)
    if t.pack is not None:
        if g.window is not None:     # a convolution: its im2col matrix is A's packed copy
            for shape, addrs, flags in im2col_packs(g.window, p.a_at, a_src, a_pitch):
                mk.emit(out, "pack", shape, addrs, flags)
        else:
            for i0, r in rows:
                mk.emit(out, "pack", (r, kb), (p.a_at + i0 * kb, a_src + i0 * a_pitch), (kb, a_pitch))
        brows, bpitch = -(-kb // gb), g.n * gb
        for r0, r in tiles(brows, bk // gb):
            if t.pack_b is not None:    # a row-major B (or B^T, [N, K]), repacked into the offer's layout
                elem = kb // g.k                       # bytes of one element; gb // elem rows a group
                krows = min(gb // elem * r, g.k - gb // elem * r0)
                src, src_pitch = (p.b_at + r0 * gb, kb) if g.b_t else (p.b_at + r0 * bpitch, g.n * elem)
                mk.emit(out, "pack_b", (r, g.n, krows), (src, b_src + r0 * b_pitch), (src_pitch, b_pitch, p.b_block))
            else:                       # one column block at a time into the block-major copy
                for j0, c in cols:
                    mk.emit(out, "pack", (r, c * gb), (p.b_at + r0 * bpitch + j0 * gb, b_src + r0 * b_pitch
                                                       + (j0 // bn) * p.b_block), (bpitch, b_pitch))
    def b_load(q: int, j: int) -> tuple:
        (q0, kk), (j0, c) = ks[q], cols[j]
        return ("load_b", (kk, c), (b_addr(q0, j0), oa(b_slot(q, j, 0))), (b_pitch,))

    # just in time (module doc): with overlap and B resident, the first chunk loads each A and
    # column-block-0 B block right before its first multiply, B(q, j + 1) inside column block j
    jit = t.overlap and p.b_resident
    if p.b_resident and not jit:
        for q in range(kt):
            for j in range(len(cols)):
                mk.emit(out, *b_load(q, j))
    bg = _Background(mk, out) if t.overlap else None
    use = a_use = 0
    col = 0                        # column blocks so far, over all chunks: picks the accumulator half
    chunks = [list(enumerate(rows))[c0:c0 + p.chunk] for c0 in range(0, len(rows), p.chunk)]

    def a_loads(ci: int) -> list[tuple]:
        c0 = ci * p.chunk
        base = b_slots + (ci % p.panels) * p.chunk * kt
        return [("load_a", (r, kk), (a_src + i0 * a_pitch + q0, oa(base + (i - c0) * kt + q)), (a_pitch,))
                for i, (i0, r) in chunks[ci] for q, (q0, kk) in enumerate(ks)]

    for ci, chunk in enumerate(chunks):
        c0 = ci * p.chunk
        a_base = b_slots + (ci % p.panels) * p.chunk * kt
        first = jit and ci == 0
        panel = a_loads(ci) if p.a_resident and (ci == 0 or p.panels == 1) else []
        if not first:
            for step in panel:
                mk.emit(out, *step)
        for j, (j0, c) in enumerate(cols):
            half = ((col if t.overlap else j) % 2) * p.chunk
            col += 1
            if bg is not None and p.panels == 2 and j == len(cols) - 1 and ci + 1 < len(chunks):
                bg.loads.extend(a_loads(ci + 1))
            if p.bias_at is not None and t.bias is not None:
                for i, (_, r) in chunk:
                    mk.emit(out, "bias", (r, c), (p.bias_at + 4 * j0, aa(half + i - c0)))
            for q, (q0, kk) in enumerate(ks):
                bs = b_slot(q, j, use)
                if first and j == 0:
                    mk.emit(out, *b_load(q, 0))
                if not p.b_resident:
                    mk.emit(out, "load_b", (kk, c), (b_addr(q0, j0), oa(bs)), (b_pitch,))
                    use += 1
                accumulate = int(q > 0 or (p.bias_at is not None and t.bias is not None))
                for n_i, (i, (i0, r)) in enumerate(chunk):
                    if p.a_resident:
                        a_slot = a_base + (i - c0) * kt + q
                        if first and j == 0:
                            mk.emit(out, *panel[(i - c0) * kt + q])
                    else:
                        a_slot, a_use = b_slots + a_use % 2, a_use + 1
                        mk.emit(out, "load_a", (r, kk), (a_src + i0 * a_pitch + q0, oa(a_slot)), (a_pitch,))
                    mk.emit(out, "mul", (r, kk, c), (oa(a_slot), oa(bs), aa(half + i - c0)),
                            (accumulate, int(n_i == 0)))
                    if bg is not None and (bg.stores or bg.loads):
                        bg.step()
                    if first and j + 1 < len(cols) and n_i == 0 and q > 0:
                        mk.emit(out, *b_load(q - 1, j + 1))
                if first and j + 1 < len(cols) and q == kt - 1:
                    mk.emit(out, *b_load(q, j + 1))
            stores = [("store", (r, c), (p.out_at + (i0 * g.n + j0) * ob, aa(half + i - c0),
                                          (p.bias_at or 0) + 4 * j0, p.scratch_at),
                       (g.n * ob, g.tail, p.bias_at is not None)) for i, (i0, r) in chunk]
            if bg is None:
                for step in stores:
                    mk.emit(out, *step)
            else:
                bg.flush()
                bg.stores.extend(stores)
    if bg is not None:
        bg.flush()
    s8, s32 = DTYPES["s8"], DTYPES["s32"]
    types = g.param_types or tuple(TensorType(s8, x) for x in ((g.m, g.k), (g.k, g.n)))
    pt = {g.a: types[g.a] if g.param_types else types[0], g.b: types[g.b] if g.param_types else types[1]}
    inputs = [Placement(g.a, p.a_at, pt[g.a]), Placement(g.b, p.b_at if p.dw_at is None else p.dw_at, pt[g.b])]
    if g.bias is not None and p.bias_at is not None:
        inputs.append(Placement(g.bias, p.bias_at, TensorType(s32, (g.n,))))
    inputs.sort(key=lambda x: x.index)
    outputs = (Placement(0, p.out_at, TensorType(DTYPES[g.out_dtype], g.out_shape or (g.m, g.n))),)
    consts = t.constants(g.tail)
    return Program(target_name, tuple(out), tuple(inputs), outputs,
                   ((p.consts_at, consts),) if consts else ()), mk
