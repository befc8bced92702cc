"""Recognition of a quantized GEMM layer in an HLO graph: the operator the middle end tiles.

What belongs here: :class:`Gemm` (the layer's sizes, its operands' parameter indices and its
elementwise tail) and :func:`recognize`, which reads it off a :class:`semantics.ir.Graph` or says
(``None``) that the graph is not one. Nothing here knows about accelerators.

The forms recognized (M, K, N >= 1; the dot contracts A's last dimension with B's dimension 0, or
with B's dimension 1 where B is stored ``[N, K]`` as PyTorch keeps weights: ``b_t``)::

    acc  = s32[M,N] dot(A', B')             A' = A s8[M,K] or convert_s32(A), B' likewise;
                                            or A u8 (unsigned activations, ``dtype="u8"``), B s8
    acc' = acc | add(acc, broadcast(bias s32[N], dimensions={1}))     (either operand order)
    out  = acc'                                                        raw int32
         | s8[M,N] dot(A, B) (no bias)                                 the low byte (wraparound)
         | convert_s8(clamp(-128, acc', 127))                          saturate (scale 1.0)
           (a lower bound of 0 instead of -128, here and below: a ReLU inside the clip)
         | convert_s8(clamp(-128., round_ne(multiply(convert_f32(acc'), broadcast(scale))), 127.))
         | convert_s8(clamp(-128., round_ne(convert_f32(acc')), 127.))
    out' = out | maximum(out, broadcast(0 s8))                         ReLU (either operand order)
         | u8[M,N] convert_u8(clamp(0, acc', 255))                      an unsigned int8 result
         | convert_u8(clamp(0., round_ne(multiply(convert_f32(acc'), broadcast(scale))), 255.))
           (jax's ``jnp.clip(y, 0, 255).astype(jnp.uint8)``: u8 activations for the next layer's
           u8 x s8 product; ``Tail.u8``)

A root ``copy`` or row-major reshape of the result (the same bytes) is looked through; a scale is a constant or the bitcast of a u32 constant. The
product may also be a 1x1 convolution ``s32[N,H,W,K] convolution(x s8[N,H,W,C], w s8[1,1,C,K]),
window={size=1x1}, dim_labels=b01f_01io->b01f`` (bias broadcast along the last dimension): in
row-major bytes it is the GEMM of x as [N*H*W, C] and w as [C, K], with the result [N*H*W, K]
(each output pixel's K channels are the dot of its C input channels with the weights), so the
layer is that GEMM on the same bytes.

A of rank > 2 (``[..., M', K]``: batch and sequence dimensions, as jax writes a linear layer of
3-D activations), stored row-major, is the GEMM of its ``[prod(...) * M', K]`` view in the same
bytes, its result ``[..., M', N]`` the ``[prod(...) * M', N]`` result's bytes.

A batched dot (batch dimension 0 of A, B and the result, row-major: jax's ``einsum("bmk,bkn->bmn")``
or ``"bqd,bkd->bqk"``) is ``batch`` GEMMs of consecutive slices of the same bytes (``Gemm.batch``).

Each of A, B and bias is an entry parameter read only there; the tail is described by
:class:`Tail`, which the tiled form (:mod:`.tiled`) and the target lowering both read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from semantics.build import Builder, tensor
from semantics.ir import Computation, Graph, Instruction
from semantics.types import TensorType

__all__ = ["Tail", "Gemm", "recognize", "tail_of", "add_tail", "layer_graph"]


@dataclass(frozen=True)
class Tail:
    """The elementwise tail after the int32 accumulation: ``None`` scale = raw int32 output;
    otherwise ``sat8(rne(f32(x) * scale))`` (scale 1.0 is also the int32 clamp form), then ReLU.
    ``wrap``: the s8 result is the accumulator's low byte (XLA's s8 x s8 -> s8 dot, whose sums wrap
    modulo 256; the low byte of the wrapping s32 sum is that sum), no scale."""

    scale: float | None
    relu: bool = False
    wrap: bool = False
    u8: bool = False        # ``sat_u8(rne(f32(x) * scale))``: clamped to 0..255, a u8 result (no ReLU: it is >= 0)

    @property
    def raw(self) -> bool:
        return self.scale is None and not self.wrap

    @property
    def bounds(self) -> tuple[int, int]:
        """The clamp of the scaled value: the result type's range."""
        return (0, 255) if self.u8 else (-128, 127)


@dataclass(frozen=True)
class Gemm:
    """``out[M,N] = tail(A[M,K] . B[K,N] (+ bias[N]))``; ``a``, ``b``, ``bias`` are parameter indices."""

    m: int
    k: int
    n: int
    a: int
    b: int
    bias: int | None
    tail: Tail
    nparams: int
    param_types: tuple[TensorType, ...] = ()
    out_shape: tuple[int, ...] = ()      # the result's shape ([M, N], or NHWK of a 1x1 convolution)
    dtype: str = "s8"                    # the operands' element type (bf16: :mod:`.gemm_bf16`'s f32 layer; u8: A u8, B s8)
    b_t: bool = False                    # B stored [N, K] and contracted on its last dimension (PyTorch)
    batch: int = 1                       # a batched dot: ``batch`` GEMMs, A [batch, M, K], B [batch, K, N]
    window: Any = None                   # a convolution's :class:`.conv.Conv`: A is its im2col matrix (:mod:`.conv`)

    @property
    def macs(self) -> int:
        return self.batch * self.m * self.k * self.n

    @property
    def a_bytes(self) -> int:
        """Bytes of A in HBM: the input image of a convolution (``window``), else batch x M x K."""
        if self.window is not None:
            w = self.window
            return w.n * w.h * w.w * w.c
        return self.batch * self.m * self.k_bytes

    @property
    def k_bytes(self) -> int:
        """Bytes of one A row (K elements of ``dtype``): the unit the schedule cuts K in."""
        return self.k * (2 if self.dtype == "bf16" else 1)

    @property
    def out_dtype(self) -> str:
        """The result's element type: f32 for bf16 operands, else s32 (raw) or s8 (a tail)."""
        if self.dtype == "bf16":
            return "f32"
        return "s32" if self.tail.raw else "u8" if self.tail.u8 else "s8"     # s8: a tail or the low byte


def _scalar(comp: Computation, name: str) -> float | int | None:
    """The value of a constant or a broadcast of a scalar constant, else None."""
    ins = comp[name]
    if ins.opcode == "broadcast" and ins.attrs.get("dimensions") == ():
        ins = comp[ins.operands[0]]
    cast = None
    if ins.opcode == "bitcast-convert" and _dtype(ins) == "f32":
        cast, ins = np.float32, comp[ins.operands[0]]
    if ins.opcode != "constant":
        return None
    a = ins.attrs["literal"].to_array()
    if cast is not None:
        if a.dtype.itemsize != 4:
            return None
        a = a.view(cast)
    if a.size != 1:
        return None
    v = a.reshape(-1)[0]
    return float(v) if np.issubdtype(a.dtype, np.floating) else int(v)


def _dtype(ins: Instruction) -> str:
    t = ins.type
    return t.dtype.name if isinstance(t, TensorType) else ""


def _view(comp: Computation, ins: Instruction) -> Instruction:
    """``ins`` looked through row-major ``reshape`` / ``bitcast`` views that keep the last
    dimension (XLA's passes write a linear layer of 3-D activations as the 2-D dot of such views):
    the same bytes, rows of the same length."""
    while ins.opcode in ("reshape", "bitcast") and isinstance(ins.type, TensorType):
        src = comp[ins.operands[0]]
        st = src.type
        if not (isinstance(st, TensorType) and st.dtype == ins.type.dtype and st.shape and ins.type.shape
                and st.shape[-1] == ins.type.shape[-1] and st.row_major and ins.type.row_major):
            break
        ins = src
    return ins


def _param(comp: Computation, name: str, dtype: str) -> int | None:
    ins = _view(comp, comp[name])
    if ins.opcode == "convert" and _dtype(ins) == "s32":
        ins = _view(comp, comp[ins.operands[0]])
    if ins.opcode == "parameter" and _dtype(ins) == dtype:
        return int(ins.attrs["index"])
    return None


def _clamp(comp: Computation, ins: Instruction) -> tuple[str, bool] | None:
    """The clamped operand of ``clamp(-128, x, 127)`` (False), or of ``clamp(0, x, 127)`` (True: a
    ReLU inside the clip, ``max(sat8(x), 0)`` for an integer x), else None."""
    if ins.opcode != "clamp" or _scalar(comp, ins.operands[2]) != 127:
        return None
    lo = _scalar(comp, ins.operands[0])
    if lo not in (-128, 0):
        return None
    return ins.operands[1], lo == 0


def _clamp_u8(comp: Computation, ins: Instruction) -> tuple[str, bool] | None:
    """The clamped operand of ``clamp(0, x, 255)`` (a u8 result's range; ReLU is implied), else None."""
    if ins.opcode != "clamp" or _scalar(comp, ins.operands[0]) != 0 or _scalar(comp, ins.operands[2]) != 255:
        return None
    return ins.operands[1], False


def tail_of(comp: Computation, cur: Instruction) -> tuple[Instruction, Tail] | None:
    """The accumulation under the module doc's tail (``out'`` down to ``acc'``, any rank) and the
    :class:`Tail`, from the root ``cur`` (a ``copy`` is looked through); None when the tail is
    not one of those forms. :mod:`.conv` reads its layers' tails with it too."""
    while cur.opcode == "copy" or (cur.opcode in ("reshape", "bitcast") and _same_bytes(comp[cur.operands[0]], cur)):
        cur = comp[cur.operands[0]]
    relu = False
    if cur.opcode == "maximum" and _dtype(cur) == "s8":
        x, y = cur.operands
        if _scalar(comp, y) == 0:
            cur, relu = comp[x], True
        elif _scalar(comp, x) == 0:
            cur, relu = comp[y], True
        else:
            return None
    u8 = not relu and cur.opcode == "convert" and _dtype(cur) == "u8"
    if not (cur.opcode == "convert" and _dtype(cur) == "s8") and not u8:
        return None if relu else (cur, Tail(None))
    clamped = _clamp_u8(comp, comp[cur.operands[0]]) if u8 else _clamp(comp, comp[cur.operands[0]])
    if clamped is None:
        return None
    inner, clip_relu = clamped
    relu = relu or clip_relu
    c = comp[inner]
    if _dtype(c) == "s32":
        return c, Tail(1.0, relu, u8=u8)
    if not (_dtype(c) == "f32" and c.opcode == "round-nearest-even"):
        return None
    f, scale = comp[c.operands[0]], 1.0
    if f.opcode == "multiply":
        x, y = f.operands
        s = _scalar(comp, y)
        if s is None:
            s, x = _scalar(comp, x), y
        if not isinstance(s, float):
            return None
        scale, f = s, comp[x]
    if f.opcode != "convert" or _dtype(comp[f.operands[0]]) != "s32":
        return None
    return comp[f.operands[0]], Tail(scale, relu, u8=u8)


def recognize(graph: Graph) -> Gemm | None:
    """The graph as a :class:`Gemm`, or None when it is not one of the module doc's forms."""
    if len(graph.computations) != 1 or not isinstance(graph.result_type, TensorType):
        return None
    comp = graph.entry
    users = comp.users()
    found = tail_of(comp, comp.root_instruction)
    if found is None:
        return None
    acc, tail = found
    bias: int | None = None
    if acc.opcode == "add":
        last = (len(acc.tensor_type.shape) - 1,)
        for d, o in (acc.operands, acc.operands[::-1]):
            bi = comp[o]
            if _view(comp, comp[d]).opcode in ("dot", "convolution") and bi.opcode == "broadcast" \
                    and bi.attrs.get("dimensions") == last:
                bias = _param(comp, bi.operands[0], "s32")
                if bias is not None:
                    acc = comp[d]
                    break
        else:
            return None
        if bias is None:
            return None
    acc = _view(comp, acc)
    if _dtype(acc) == "s8" and acc.opcode == "dot" and tail == Tail(None) and bias is None:
        tail = Tail(None, wrap=True)        # s8 x s8 -> s8: the low byte (Tail's doc)
    elif _dtype(acc) != "s32":
        return None
    conv = acc.opcode == "convolution"
    if conv:
        # a 1x1 convolution, NHWC x HWIO, unit window: the GEMM of the [N*H*W, C] and [C, K]
        # views of the same bytes (module doc)
        if (acc.attrs.get("window") != "{size=1x1}" or acc.attrs.get("dim_labels") != "b01f_01io->b01f"
                or len(acc.attrs.items) != 2):
            return None
    elif acc.opcode == "dot" and acc.attrs.get("lhs_batch_dims", ()) == (0,) == acc.attrs.get("rhs_batch_dims", ()):
        # a batched dot, batch dimension leading: [b, M, K] x [b, K, N] (or [b, N, K]) -> [b, M, N]
        if (len(acc.tensor_type.shape) != 3 or acc.attrs.get("lhs_contracting_dims") != (2,)
                or acc.attrs.get("rhs_contracting_dims") not in ((1,), (2,))):
            return None
    elif (acc.opcode != "dot" or len(acc.tensor_type.shape) < 2
            or acc.attrs.get("lhs_contracting_dims") != (len(acc.tensor_type.shape) - 1,)
            or acc.attrs.get("rhs_contracting_dims") not in ((0,), (1,))
            or acc.attrs.get("lhs_batch_dims", ()) or acc.attrs.get("rhs_batch_dims", ())):
        return None
    batch = acc.tensor_type.shape[0] if not conv and acc.attrs.get("lhs_batch_dims", ()) else 1
    rc = acc.attrs.get("rhs_contracting_dims")
    b_t = not conv and rc == ((2,) if acc.attrs.get("lhs_batch_dims", ()) else (1,))
    a, b = _param(comp, acc.operands[0], "s8"), _param(comp, acc.operands[1], "s8")
    dtype = "s8"
    if a is None and not conv:      # unsigned activations, signed weights (module doc)
        a, dtype = _param(comp, acc.operands[0], "u8"), "u8"
    if a is None or b is None or len({a, b, bias}) != 3:
        return None
    pa = comp[comp.params[a]].tensor_type.shape
    pb = comp[comp.params[b]].tensor_type.shape
    if conv:
        if len(pa) != 4 or len(pb) != 4 or pb[:2] != (1, 1):
            return None
        pa, pb = (pa[0] * pa[1] * pa[2], pa[3]), pb[2:]
    elif batch > 1 or acc.attrs.get("lhs_batch_dims", ()):
        if len(pa) != 3 or len(pb) != 3 or pa[0] != batch or pb[0] != batch \
                or not all(comp[comp.params[i]].tensor_type.row_major for i in (a, b)):
            return None
        pa, pb = pa[1:], pb[1:]
    elif len(pa) > 2 and comp[comp.params[a]].tensor_type.row_major:
        # leading batch / sequence dimensions: the GEMM of A's [prod(leading), K] view (module doc)
        pa = (int(np.prod(pa[:-1])), pa[-1])
    if len(pa) != 2 or len(pb) != 2:
        return None
    m, k = pa
    n = pb[0] if b_t else pb[1]
    if bias is not None and comp[comp.params[bias]].tensor_type.shape != (n,):
        return None
    if any(len(users[p]) != 1 and comp[p].opcode == "parameter" for p in comp.params):
        return None
    if len(comp.params) != 2 + (bias is not None):
        return None
    types = tuple(comp[p].tensor_type for p in comp.params)
    return Gemm(m, k, n, a, b, bias, tail, len(comp.params), types,
                tuple(graph.result_types[0].shape), dtype=dtype, b_t=b_t, batch=batch)


def _same_bytes(src: Instruction, view: Instruction) -> bool:
    """``view`` is ``src``'s bytes in another shape (a row-major reshape of the same element type)."""
    a, b = src.type, view.type
    return (isinstance(a, TensorType) and isinstance(b, TensorType) and a.dtype == b.dtype and a.size == b.size
            and a.row_major and b.row_major)


def layer_graph(m: int, k: int, n: int, bias: bool = False, scale: float | None = 1.0, relu: bool = False,
                name: str = "layer", b_layout: TensorType | None = None, b_t: bool = False) -> Graph:
    """A layer of the module doc's forms (``scale`` None: the raw int32 product; 1.0: the int32
    clamp form; else the f32 scale form), the graph tests and benchmarks compile; ``b_layout``: B's
    declared type where it has a layout (AMX's VNNI-packed weights)."""
    b = Builder(name)
    b.param("a", 0, tensor("s8", m, k))
    b.param("b", 1, b_layout or (tensor("s8", n, k) if b_t else tensor("s8", k, n)))
    b.op("d", "dot", "a", "b", type=tensor("s32", m, n), lhs_contracting_dims=(1,), rhs_contracting_dims=(1 if b_t else 0,))
    add_tail(b, "d", (m, n), n, 1, bias, scale, relu)
    return b.build()


def add_tail(b: Builder, acc: str, shape: tuple[int, ...], n: int, bias_dim: int, bias: bool, scale: float | None,
             relu: bool) -> str:
    """Append to ``b`` the elementwise tail :func:`tail_of` recognizes, applied to the s32 value
    ``acc`` of ``shape``: an optional ``s32[n]`` bias (parameter 2) broadcast on ``bias_dim``, then
    the raw int32 result (``scale`` None), the int32 clamp (1.0) or the f32 scale form, then an
    optional ReLU; the last instruction (``y``) is the root, which it returns."""
    def t(dt: str) -> TensorType:
        return tensor(dt, *shape)

    if bias:
        b.param("bias", 2, tensor("s32", n, layout=(0,)))
        b.op("bb", "broadcast", "bias", type=t("s32"), dimensions=(bias_dim,))
        acc = b.op("s", "add", acc, "bb")
    if scale is None:
        if relu:
            raise ValueError("ReLU applies to the s8 result")
        return b.op("y", "copy", acc)
    if scale == 1.0:
        b.const("lo", -128, "s32")
        b.const("hi", 127, "s32")
        b.op("c", "clamp", "lo", acc, "hi")
    else:
        b.op("f", "convert", acc, type=t("f32"))
        b.const("kb", int(np.array(scale, np.float32).view(np.uint32)), "u32")
        b.op("k", "bitcast-convert", "kb", type=tensor("f32"))
        b.op("kk", "broadcast", "k", type=t("f32"), dimensions=())
        b.op("sc", "multiply", "f", "kk")
        b.op("r", "round-nearest-even", "sc")
        b.const("lo", -128, "f32")
        b.const("hi", 127, "f32")
        b.op("c", "clamp", "lo", "r", "hi")
    if relu:
        b.op("q", "convert", "c", type=t("s8"))
        b.const("z", 0, "s8")
        b.op("zb", "broadcast", "z", type=t("s8"), dimensions=())
        return b.op("y", "maximum", "q", "zb")
    return b.op("y", "convert", "c", type=t("s8"))
