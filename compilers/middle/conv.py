"""A quantized 2-D convolution layer lowered to the GEMM machinery (direct tiling, as Gemmini's
own library's ``tiled_conv`` does): recognition, the identity as an HLO graph, and the schedule.

What belongs here: :class:`Conv` and :func:`recognize_conv` (the layer read off a graph),
:func:`conv_gemm_graph` (the identity every conv program implements, as a graph),
:func:`conv_program` (the whole :class:`compilers.program.Program` from a target's
:class:`~.schedule.TileTarget` micro-kernels) and :func:`conv_graph` (the layer as jax dumps it:
what tests and benchmarks compile).
No target name appears here.

The layer (N, H, W, C, O >= 1; a KH x KW window, strides (sh, sw), zero padding lo/hi >= 0, no
dilation, any feature grouping (below); jax's ``conv_general_dilated`` with NHWC / HWIO / NHWC dimension
numbers and ``preferred_element_type=int32`` on int8 operands)::

    acc  = s32[N,OH,OW,O] convolution(X s8[N,H,W,C], Wt s8[KH,KW,C,O]), dim_labels=b01f_01io->b01f
    acc' = acc | add(acc, broadcast(bias s32[O], dimensions={3}))
    out  = acc' | the s8 tails of :mod:`.gemm` (saturate, f32 scale + round + clamp), then ReLU

The identity (tested bit for bit against the reference interpreter with hypothesis by
``tests/compilers/test_middle_conv.py``): with Xp the input zero-padded in H and W, M = N*OH*OW::

    conv(X, Wt)  =  reshape(sum over taps (kh, kw) in any order of
                    dot(reshape(Xp[:, kh : kh + sh*(OH-1)+1 : sh, kw : kw + sw*(OW-1)+1 : sw, :], M x C),
                        reshape(Wt[kh, kw], C x O)),  N x OH x OW x O)

(the definition of convolution regrouped: each output element is the sum over taps and input
channels of products; s32 addition wraps, so every order gives the same bits, identity 2 of
:mod:`.tiled`). The schedule computes each tap's GEMM block by block: a block of output rows is up
to ``bm`` consecutive output pixels in memory order (n, oh, ow), so a block may span output rows
and every block but the last is full (a 56-pixel output row no longer leaves a block of 8 rows
idle). Its A block for tap (kh, kw) and channel block q is, per output row it touches, the input
row ih = oh*sh + kh - pad_top read at columns iw = ow*sw + kw - pad_left: one strided DRAM read
(row stride sw*C bytes) per run of rows consecutive in the input, moved into the block's rows.
Padding is never materialized in HBM: rows whose tap lies in the padding are moved in as zero
rows from a zero constant (they contribute zero products, identity 1), so each multiply takes
the whole block; a tap that reads only padding for a block is skipped for it.

Schedule (weight-stationary): the weight blocks (tap, q, j) stay on chip when they fit half the
operand buffer (else per use, two slots); row blocks go in chunks whose accumulators (every output
column block) fit the accumulator; per chunk, per tap and channel block, each row block's A block
is loaded once into its own slot and serves every column block, and per column block one weight
load serves the chunk's multiplies. An accumulator starts as the bias rows, or is overwritten by
its first product (every product covers the whole block), or, where every tap of every row lies
in the padding, is set to zero rows from a constant; the chunk's tiles are then stored through
the tail (a block's pixels are consecutive in the NHWC result: one strided store per column block).
The target's buffers must be addressed in rows (a run of rows is a row offset into a slot).

A target whose tiles read packed copies of the operands (``TileTarget.pack``: AMX, whose
accumulators are tile registers with no row offset) runs the layer instead as the GEMM of its
im2col matrix (:func:`conv_as_gemm`, seed 004 §3.2's packing applied to the window): A is the M x
(KH*KW*C) matrix whose row m = (n, oh, ow) holds, tap by tap, the C input channels at (ih, iw)
(zero where the tap lies in the padding), B is Wt's row-major bytes as [KH*KW*C, O] (HWIO already
is), and the GEMM's schedule builds A's packed copy from the input image with the pack
micro-kernel (:func:`im2col_packs`) instead of copying A's rows. It is the identity above with
the taps' dots concatenated along K (a dot over a concatenated K is the sum of the parts' dots).
Where a pixel's whole row of KW taps lies inside the input, its KW * C bytes are one contiguous
run in the input and in A's row, copied as one; the taps of other pixels are copied one by one,
and the padding is never written (the packed copy's bytes start zero, as every unwritten byte of
a packed block does).

A grouped layer (``feature_group_count = G``, weights ``[KH, KW, C/G, O]``; depthwise where G =
C = O, MobileNet's one filter per channel) is the dense layer of the block-diagonal weights
``Wd[kh, kw, ci, co] = Wt[kh, kw, ci mod C/G, co]`` where ci and co lie in the same group (ci //
(C/G) = co // (O/G)) and 0 elsewhere (each output channel sums only its own group's products;
the others are zero products, identity 1). The program writes ``Wd`` into HBM itself before the
layer (:func:`dense_weights`; the rest of ``Wd`` is HBM's zeros): for a depthwise layer the
target's ``spread`` kernel moves each run of channels of a tap along the diagonal (a DRAM stride
of C + 1), otherwise its ``copy`` kernel moves each group's C/G x O/G block of a tap into place.
"""

from __future__ import annotations

from dataclasses import dataclass

from semantics.build import Builder, tensor
from semantics.dtypes import DTYPES
from semantics.ir import Computation, Graph
from semantics.types import TensorType

from ..program import Concrete, Placement, Program
from .gemm import Gemm, Tail, _dtype, _param, add_tail, recognize, tail_of
from .schedule import ALIGN, MicroKernels, TileError, TileTarget, check_strides
from .tiled import add_tile_tail, scale_bits, tiles
from .window import dense_steps, im2col_packs

__all__ = ["Conv", "recognize_conv", "conv_gemm_graph", "conv_program", "conv_graph", "conv_fits", "conv_as_gemm",
           "im2col_packs", "dense_weights", "layer_of"]

LABELS = "b01f_01io->b01f"
NHWC = ("b01f", "01io", "b01f")


@dataclass(frozen=True)
class Conv:
    """``out[N,OH,OW,O] = tail(conv(X[N,H,W,C], Wt[KH,KW,C,O]) (+ bias[O]))``; ``x``, ``w``,
    ``bias`` are parameter indices; ``pad`` = ((top, bottom), (left, right))."""

    n: int
    h: int
    w: int
    c: int
    kh: int
    kw: int
    o: int
    stride: tuple[int, int]
    pad: tuple[tuple[int, int], tuple[int, int]]
    x: int
    wt: int
    bias: int | None
    tail: Tail
    nparams: int
    param_types: tuple[TensorType, ...] = ()
    groups: int = 1                # feature_group_count: weights [KH, KW, C / groups, O]
    layouts: tuple[str, str, str] = ("b01f", "01io", "b01f")   # X, Wt and the result's dimension labels

    @property
    def nhwc(self) -> bool:
        """Whether X, Wt and the result are in the NHWC / HWIO layouts the schedules read."""
        return self.layouts == NHWC

    @property
    def cg(self) -> int:
        """Input channels per group (1 for a depthwise layer)."""
        return self.c // self.groups

    @property
    def depthwise(self) -> bool:
        """One input channel per group and one output per group (MobileNet's layer)."""
        return self.groups > 1 and self.cg == 1 and self.o == self.groups

    @property
    def w_bytes(self) -> int:
        """Bytes of the weights as stored (KH*KW*(C/groups)*O)."""
        return self.kh * self.kw * self.cg * self.o

    @property
    def oh(self) -> int:
        return (self.h + sum(self.pad[0]) - self.kh) // self.stride[0] + 1

    @property
    def ow(self) -> int:
        return (self.w + sum(self.pad[1]) - self.kw) // self.stride[1] + 1

    @property
    def m(self) -> int:
        return self.n * self.oh * self.ow

    @property
    def macs(self) -> int:
        """The layer's multiply-accumulates (a grouped layer: C/groups input channels per output)."""
        return self.m * self.kh * self.kw * self.cg * self.o


def _operand(comp: Computation, name: str, dtype: str, labels: str) -> tuple[int | None, str]:
    """The parameter a convolution operand reads (through a widening convert and one transpose,
    as XLA's passes write PyTorch's layouts) and the operand's dimension labels read on the
    parameter's own dimensions."""
    ins = comp[name]
    if ins.opcode == "transpose":
        perm = tuple(ins.attrs["dimensions"])
        own = [""] * len(perm)
        for d, p in enumerate(perm):        # operand dim d is the parameter's dim perm[d]
            own[p] = labels[d]
        return _param(comp, ins.operands[0], dtype), "".join(own)
    return _param(comp, name, dtype), labels


def recognize_conv(graph: Graph) -> Conv | None:
    """The graph as a :class:`Conv`, or None when it is not one of the module doc's forms."""
    from semantics.ops.window import parse_window

    if len(graph.computations) != 1 or not isinstance(graph.result_type, TensorType):
        return None
    comp = graph.entry
    root = comp.root_instruction
    while root.opcode == "copy":
        root = comp[root.operands[0]]
    out_perm = None
    if root.opcode == "transpose":          # the result transposed after the tail (XLA's passes)
        out_perm, root = tuple(root.attrs["dimensions"]), comp[root.operands[0]]
    found = tail_of(comp, root)
    if found is None or found[1].u8:        # (a convolution's u8 result: not yet)
        return None
    acc, tail = found
    conv_ins = acc if acc.opcode == "convolution" else next(
        (comp[o] for o in acc.operands if comp[o].opcode == "convolution"), None) if acc.opcode == "add" else None
    if conv_ins is None or _dtype(conv_ins) != "s32" or len(conv_ins.tensor_type.shape) != 4:
        return None
    spec = str(conv_ins.attrs.get("dim_labels", ""))
    try:
        lhs, rest = spec.split("_")
        rhs, res = rest.split("->")
    except ValueError:
        return None
    if sorted(lhs) != sorted("b01f") or sorted(rhs) != sorted("01io") or sorted(res) != sorted("b01f"):
        return None
    bias = None
    if acc.opcode == "add":
        for d, other in (acc.operands, acc.operands[::-1]):
            bi = comp[other]
            if comp[d] is conv_ins and bi.opcode == "broadcast" and bi.attrs.get("dimensions") == (res.index("f"),):
                bias = _param(comp, bi.operands[0], "s32")
                if bias is not None:
                    acc = conv_ins
                    break
        if bias is None:
            return None
    groups = int(acc.attrs.get("feature_group_count", 1))
    if acc.attrs.get("batch_group_count", 1) != 1:
        return None
    (x, x_lab), (wt, w_lab) = _operand(comp, acc.operands[0], "s8", lhs), _operand(comp, acc.operands[1], "s8", rhs)
    o_lab = res if out_perm is None else "".join(res[p] for p in out_perm)
    if x is None or wt is None or len({x, wt, bias}) != 3:
        return None
    win = parse_window(acc.attrs["window"], 2)
    if win.lhs_dilate != [1, 1] or win.rhs_dilate != [1, 1] or any(win.reversal) or min(min(p) for p in win.pad) < 0:
        return None
    users = comp.users()
    if any(len(users[p]) != 1 for p in comp.params) or len(comp.params) != 2 + (bias is not None):
        return None
    types = tuple(comp[p].tensor_type for p in comp.params)
    n, h, w, c = (types[x].shape[x_lab.index(d)] for d in "b01f")
    kh, kw, c2, o = (types[wt].shape[w_lab.index(d)] for d in "01io")
    if groups < 1 or c % groups or o % groups or c2 != c // groups:
        return None
    if (bias is not None and types[bias].shape != (o,)) or not all(t.row_major for t in types):
        return None
    if not graph.result_type.row_major:
        return None
    cv = Conv(n, h, w, c, kh, kw, o, (win.stride[0], win.stride[1]), ((win.pad[0][0], win.pad[0][1]),
              (win.pad[1][0], win.pad[1][1])), x, wt, bias, tail, len(types), types, groups,
              (x_lab, w_lab, o_lab))
    want = dict(zip("b01f", (n, cv.oh, cv.ow, o), strict=True))
    if cv.oh < 1 or cv.ow < 1 or graph.result_type.shape != tuple(want[d] for d in o_lab):
        return None
    return cv


def conv_as_gemm(cv: Conv) -> Gemm:
    """``cv`` as the GEMM of its im2col matrix (module doc): M = N*OH*OW, K = KH*KW*C, N = O."""
    return Gemm(cv.m, cv.kh * cv.kw * cv.c, cv.o, cv.x, cv.wt, cv.bias, cv.tail, cv.nparams, cv.param_types,
                (cv.n, cv.oh, cv.ow, cv.o), window=cv)


def grouped_why(cv: Conv, t: TileTarget) -> str | None:
    """Why ``t`` cannot write ``cv``'s dense weights (a grouped layer), or None."""
    kernel = "spread" if cv.depthwise else "copy"
    if getattr(t, kernel) is None:
        return (f"a convolution of {cv.groups} feature groups needs its dense weights built on the target, which "
                f"has no {kernel} micro-kernel")
    return None


def dense_weights(cv: Conv, t: TileTarget, mk: MicroKernels, src: int, dst: int) -> list[Concrete]:
    """The instructions that write a grouped layer's dense weights (module doc) at ``dst`` from the
    stored ``[KH, KW, C/groups, O]`` at ``src`` (:func:`.window.dense_steps`)."""
    out: list[Concrete] = []
    for kind, shape, addrs, flags in dense_steps(cv, t.block, src, dst, t.acc_addr(0)):
        mk.emit(out, kind, shape, addrs, flags)
    return out


def layer_of(graph: Graph, t: TileTarget) -> Gemm | Conv | None:
    """The one layer ``graph`` is, as ``t`` runs it: a :class:`Conv` where ``t`` tiles convolutions
    directly (:func:`conv_fits`), the GEMM of its im2col matrix where ``t`` packs operands, a
    :class:`Gemm` of :mod:`.gemm`'s forms; None where it is none of these."""
    cv = recognize_conv(graph)
    if cv is not None and conv_fits(t):
        return cv
    g = recognize(graph)
    if g is None and cv is not None and t.pack is not None:
        g = conv_as_gemm(cv)
    return g


def conv_graph(n: int, h: int, w: int, c: int, k: int, o: int, stride: int = 1, pad: int = 0, bias: bool = False,
               scale: float | None = 1.0, relu: bool = False, name: str = "conv", pads: str | None = None,
               depthwise: bool = False, groups: int = 1) -> Graph:
    """A square-window conv layer as jax dumps it (``scale`` as :func:`.gemm.layer_graph`): the graph
    tests and benchmarks compile; ``pads``: the window's padding text instead of ``pad`` on every side;
    ``depthwise``: ``feature_group_count = c`` with weights ``[k, k, 1, c]`` (``o`` must be ``c``);
    ``groups``: ``feature_group_count`` with weights ``[k, k, c / groups, o]``."""
    if depthwise:
        groups = c
    (pt, pb), (pl, pr) = (tuple(map(int, d.split("_"))) for d in pads.split("x")) if pads else ((pad, pad), (pad, pad))
    oh, ow = (h + pt + pb - k) // stride + 1, (w + pl + pr - k) // stride + 1
    win = f"size={k}x{k}" + (f" stride={stride}x{stride}" if stride != 1 else "") + \
        (f" pad={pads or f'{pad}_{pad}x{pad}_{pad}'}" if pad or pads else "")
    b = Builder(name)
    b.param("x", 0, tensor("s8", n, h, w, c, layout=(3, 2, 1, 0)))
    b.param("w", 1, tensor("s8", k, k, c // groups, o, layout=(3, 2, 1, 0)))
    fg = {"feature_group_count": groups} if groups > 1 else {}
    b.op("d", "convolution", "x", "w", type=tensor("s32", n, oh, ow, o, layout=(3, 2, 1, 0)), window=f"{{{win}}}",
         dim_labels=LABELS, **fg)
    add_tail(b, "d", (n, oh, ow, o), o, 3, bias, scale, relu)
    return b.build()


def conv_gemm_graph(cv: Conv) -> Graph:
    """The identity of the module doc as a graph: taps' GEMMs over strided windows of the
    zero-padded input, summed, then the bias and the tail on the M x O matrix, reshaped."""
    (pt, pb), (pl, pr) = cv.pad
    sh, sw = cv.stride
    m, oh, ow = cv.m, cv.oh, cv.ow
    b = Builder("conv_gemm")
    params = {cv.x: ("X", tensor("s8", cv.n, cv.h, cv.w, cv.c)),
              cv.wt: ("Wt", tensor("s8", cv.kh, cv.kw, cv.cg, cv.o))}
    if cv.bias is not None:
        params[cv.bias] = ("bias", tensor("s32", cv.o))
    for idx in sorted(params):
        b.param(params[idx][0], idx, params[idx][1])
    b.const("z", 0, "s32")
    b.const("z8", 0, "s8")
    b.op("X32", "convert", "X", type=tensor("s32", cv.n, cv.h, cv.w, cv.c))
    b.op("Xp", "pad", "X32", "z", padding=((0, 0, 0), (pt, pb, 0), (pl, pr, 0), (0, 0, 0)))
    if cv.groups > 1:       # the dense weights: group g's filters in block (g, g), zero elsewhere
        full = tensor("s32", cv.kh, cv.kw, cv.c, cv.o)
        b.op("Wd", "convert", "Wt", type=tensor("s32", cv.kh, cv.kw, cv.cg, cv.o))
        b.op("Wb", "concatenate", *(["Wd"] * cv.groups), type=full, dimensions=(2,))   # Wt[.., ci % cg, ..]
        b.const("cgc", cv.cg, "s32")
        b.const("ogc", cv.o // cv.groups, "s32")
        b.op("ci", "iota", type=full, iota_dimension=2)
        b.op("co", "iota", type=full, iota_dimension=3)
        b.op("gi", "divide", "ci", b.op("cgb", "broadcast", "cgc", type=full, dimensions=()))
        b.op("go", "divide", "co", b.op("ogb", "broadcast", "ogc", type=full, dimensions=()))
        b.op("diag", "compare", "gi", "go", type=tensor("pred", cv.kh, cv.kw, cv.c, cv.o), direction="EQ")
        b.op("zw", "broadcast", "z", type=tensor("s32", cv.kh, cv.kw, cv.c, cv.o), dimensions=())
        b.op("W32", "select", "diag", "Wb", "zw")
    else:
        b.op("W32", "convert", "Wt", type=tensor("s32", cv.kh, cv.kw, cv.c, cv.o))
    acc = None
    for kh in range(cv.kh):
        for kw in range(cv.kw):
            t = f"t{kh}_{kw}"
            b.op(f"{t}_w", "slice", "Xp", slice=((0, cv.n, 1), (kh, kh + sh * (oh - 1) + 1, sh),
                                                  (kw, kw + sw * (ow - 1) + 1, sw), (0, cv.c, 1)))
            b.op(f"{t}_a", "reshape", f"{t}_w", type=tensor("s32", m, cv.c))
            b.op(f"{t}_k", "slice", "W32", slice=((kh, kh + 1, 1), (kw, kw + 1, 1), (0, cv.c, 1), (0, cv.o, 1)))
            b.op(f"{t}_b", "reshape", f"{t}_k", type=tensor("s32", cv.c, cv.o))
            d = b.op(f"{t}_d", "dot", f"{t}_a", f"{t}_b", lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
            acc = d if acc is None else b.op(f"{t}_s", "add", acc, d)
    assert acc is not None
    if cv.bias is not None:
        b.op("bb", "broadcast", "bias", type=tensor("s32", m, cv.o), dimensions=(1,))
        acc = b.op("sb", "add", acc, "bb")
    res = add_tile_tail(b, cv.tail, "tl", acc, m, cv.o)
    b.op("result", "reshape", res, type=tensor("s32" if cv.tail.raw else "s8", cv.n, oh, ow, cv.o))
    return b.build()


# -- the schedule ----------------------------------------------------------------------------------

def _runs(cv: Conv, m0: int, r: int, tap: tuple[int, int]) -> list[tuple[int, int, int]]:
    """The rows of the block of output pixels ``m0 .. m0 + r - 1`` (memory order n, oh, ow) whose
    tap reads inside the input, as runs consecutive in the input: (first row in the block, rows,
    input byte offset of the first)."""
    kh, kw = tap
    (pt, _), (pl, _) = cv.pad
    sh, sw = cv.stride
    out = []
    i = 0
    while i < r:
        n, rem = divmod(m0 + i, cv.oh * cv.ow)
        oh, ow = divmod(rem, cv.ow)
        span = min(r - i, cv.ow - ow)             # this output row's pixels in the block
        ih = oh * sh + kh - pt
        if 0 <= ih < cv.h:
            lo = max(ow, -(-(pl - kw) // sw))
            hi = min(ow + span, (cv.w - 1 + pl - kw) // sw + 1)
            if lo < hi:
                out.append((i + lo - ow, hi - lo, ((n * cv.h + ih) * cv.w + lo * sw + kw - pl) * cv.c))
        i += span
    return out


def conv_fits(t: TileTarget) -> bool:
    """Whether ``t``'s tiles can run a convolution: row-addressed buffers, row-major operands and a
    bias step (zero or bias rows into an accumulator)."""
    return t.pack is None and t.b_group == 1 and t.bias is not None and t.layouts in (("", ""), ("{1,0}", "{1,0}"))


@dataclass(frozen=True)
class ConvPlan:
    """HBM placement and the chunking of :func:`conv_program`."""

    x_at: int
    w_at: int
    bias_at: int | None
    out_at: int
    zeros_at: int
    consts_at: int
    scratch_at: int
    end: int
    chunk: int
    w_resident: bool
    dw_at: int | None = None      # a grouped layer's weights as stored (w_at: its dense weights)


def _plan(cv: Conv, t: TileTarget, hbm_size: int, base: int = 0, x_at: int | None = None) -> ConvPlan:
    bm, bk, bn = t.block
    if not cv.tail.raw:
        why = t.scale_ok(cv.tail.scale)  # type: ignore[arg-type]
        if why is not None:
            raise TileError(f"the store path cannot scale by {cv.tail.scale!r} "
                            f"(f32 bits {scale_bits(cv.tail.scale):#010x}): {why}")  # type: ignore[arg-type]
    ob = 4 if cv.tail.raw else 1
    check_strides(t, {"input window": cv.stride[1] * cv.c, "output": cv.o * ob, "weight": cv.o})
    qt, nt = -(-cv.c // bk), -(-cv.o // bn)
    if nt > t.acc_blocks:
        raise TileError(f"{cv.o} output channels need {nt} accumulator blocks, the target has {t.acc_blocks}")
    wblocks = cv.kh * cv.kw * qt * nt
    w_resident = wblocks <= t.operand_blocks // 2
    room = t.operand_blocks - (wblocks if w_resident else 2)
    chunk = min(t.acc_blocks // nt, room, -(-cv.m // bm))
    if chunk < 1:
        raise TileError(f"the {t.operand_blocks}-block operand buffer cannot hold the weight and input blocks")
    if x_at is None:          # else the input is already in HBM (a chain's previous result)
        x_at = _align(base) + ALIGN
        w_at = _align(x_at + cv.n * cv.h * cv.w * cv.c)
    else:
        w_at = _align(base) + ALIGN
    end = _align(w_at + cv.kh * cv.kw * cv.c * cv.o)
    bias_at = None
    if cv.bias is not None:
        bias_at, end = end, _align(end + 4 * cv.o)
    out_at, end = end, _align(end + cv.m * cv.o * ob)
    dw_at = None
    if cv.groups > 1:
        why = grouped_why(cv, t)
        if why is not None:
            raise TileError(why)
        dw_at, end = end, _align(end + cv.w_bytes)
    zeros_at, end = end, _align(end + max(4 * bn, bm * bk))     # a zero bias row; zero A rows (stride bk)
    consts_at = end
    nconst = len(t.constants(cv.tail))
    if nconst:
        end = _align(end + nconst)
    scratch_at = end
    if t.scratch_bytes:
        end = _align(end + t.scratch_bytes)
    if end > hbm_size:
        raise TileError(f"the convolution's operands and result need {end} bytes of HBM, "
                        f"the description has {hbm_size}")
    return ConvPlan(x_at, w_at, bias_at, out_at, zeros_at, consts_at, scratch_at, end, chunk, w_resident, dw_at)


def _align(x: int) -> int:
    return -(-x // ALIGN) * ALIGN


def conv_program(cv: Conv, t: TileTarget, hbm_size: int, target_name: str, base: int = 0,
                 x_at: int | None = None) -> tuple[Program, MicroKernels, int]:
    """The whole program of ``cv`` on ``t`` (module doc's schedule), its micro-kernels and its
    number of output tiles (raises :class:`TileError` when it cannot fit); its HBM from ``base``
    on, the input at ``x_at`` where it is already in HBM (a chain, :mod:`.chain`)."""
    if not cv.nhwc:
        raise TileError(f"the direct schedule reads NHWC / HWIO / NHWC, not {'/'.join(cv.layouts)} "
                        f"(:mod:`compilers.middle.layouts` moves other layouts)")
    p = _plan(cv, t, hbm_size, base, x_at)
    bm, bk, bn = t.block
    mk = MicroKernels(t)
    out: list[Concrete] = list(t.prologue(p.consts_at, cv.tail))
    oa, aa = t.operand_addr, t.acc_addr
    ob = 4 if cv.tail.raw else 1
    blocks = tiles(cv.m, bm)        # (m0, rows): runs of the output's pixels in memory order
    qs, js = tiles(cv.c, bk), tiles(cv.o, bn)
    nq, nj = len(qs), len(js)
    taps = [(kh, kw) for kh in range(cv.kh) for kw in range(cv.kw)]
    tap_ix = {tp: i for i, tp in enumerate(taps)}

    def w_addr(tap: tuple[int, int], q0: int, j0: int) -> int:
        return p.w_at + ((tap[0] * cv.kw + tap[1]) * cv.c + q0) * cv.o + j0

    def w_slot(tap: tuple[int, int], q: int, j: int, use: int) -> int:
        return (tap_ix[tap] * nq + q) * nj + j if p.w_resident else use % 2

    if p.dw_at is not None:
        out += dense_weights(cv, t, mk, p.dw_at, p.w_at)
    wslots = cv.kh * cv.kw * nq * nj if p.w_resident else 2
    if p.w_resident:
        for tap in taps:
            for q, (q0, kk) in enumerate(qs):
                for j, (j0, c) in enumerate(js):
                    mk.emit(out, "load_b", (kk, c), (w_addr(tap, q0, j0), oa(w_slot(tap, q, j, 0))), (cv.o,))
    a_stride = cv.stride[1] * cv.c
    use = 0
    for c0 in range(0, len(blocks), p.chunk):
        chunk = blocks[c0:c0 + p.chunk]
        started = [p.bias_at is not None] * len(chunk)
        if p.bias_at is not None:
            for i, (_, r) in enumerate(chunk):
                for j, (j0, c) in enumerate(js):
                    mk.emit(out, "bias", (r, c), (p.bias_at + 4 * j0, aa(i * nj + j)))
        for tap in taps:
            covs = [_runs(cv, m0, r, tap) for m0, r in chunk]
            if not any(covs):
                continue
            for q, (q0, kk) in enumerate(qs):
                for i, ((_, r), runs) in enumerate(zip(chunk, covs, strict=True)):
                    at = 0
                    for off, n, src in [*runs, (r, 0, 0)]:
                        if off > at:        # rows the tap reads in the padding: zero rows
                            mk.emit(out, "load_a", (off - at, kk), (p.zeros_at, oa(wslots + i) + at), (bk,))
                        if n:
                            mk.emit(out, "load_a", (n, kk), (p.x_at + src + q0, oa(wslots + i) + off), (a_stride,))
                        at = off + n
                for j, (j0, c) in enumerate(js):
                    bs = w_slot(tap, q, j, use)
                    if not p.w_resident:
                        mk.emit(out, "load_b", (kk, c), (w_addr(tap, q0, j0), oa(bs)), (cv.o,))
                        use += 1
                    first_mul = True
                    for i, ((_, r), runs) in enumerate(zip(chunk, covs, strict=True)):
                        if runs:
                            mk.emit(out, "mul", (r, kk, c), (oa(wslots + i), oa(bs), aa(i * nj + j)),
                                    (int(started[i] or q > 0), int(first_mul)))
                            first_mul = False
            for i, runs in enumerate(covs):
                started[i] = started[i] or bool(runs)
        for i, (_, r) in enumerate(chunk):
            if not started[i]:              # every tap of every row in the padding: zero rows
                for j, (_, c) in enumerate(js):
                    mk.emit(out, "bias", (r, c), (p.zeros_at, aa(i * nj + j)))
        for i, (m0, r) in enumerate(chunk):
            for j, (j0, c) in enumerate(js):
                dram = p.out_at + (m0 * cv.o + j0) * ob
                mk.emit(out, "store", (r, c), (dram, aa(i * nj + j), (p.bias_at or 0) + 4 * j0, p.scratch_at),
                        (cv.o * ob, cv.tail, p.bias_at is not None))
    s32 = DTYPES["s32"]
    inputs = [Placement(cv.x, p.x_at, cv.param_types[cv.x]),
              Placement(cv.wt, p.w_at if p.dw_at is None else p.dw_at, cv.param_types[cv.wt])]
    if cv.bias is not None and p.bias_at is not None:
        inputs.append(Placement(cv.bias, p.bias_at, cv.param_types[cv.bias]))
    inputs.sort(key=lambda x: x.index)
    outputs = (Placement(0, p.out_at, TensorType(s32 if cv.tail.raw else DTYPES["s8"], (cv.n, cv.oh, cv.ow, cv.o))),)
    consts = [(p.zeros_at, bytes(max(4 * bn, bm * bk)))]
    if len(t.constants(cv.tail)):
        consts.append((p.consts_at, t.constants(cv.tail)))
    return Program(target_name, tuple(out), tuple(inputs), outputs, tuple(consts)), mk, len(blocks) * nj


def conv_hbm_end(cv: Conv, t: TileTarget, hbm_size: int, base: int = 0, x_at: int | None = None) -> int:
    """The end of the HBM :func:`conv_program` of the same arguments uses."""
    return _plan(cv, t, hbm_size, base, x_at).end
