"""Random layer chains shaped for a target's matrix unit, with the operators around them that the
target may not run: the ``layers`` generator (gemmini, amx, qkv).

NNSmith's and :mod:`semantics.gen`'s graphs have small random shapes and operator mixes: few of
their cases reach a systolic array or a tile multiply, and with the whole-graph rule most were
``unsupported``. This generator writes what users' layers look like around those units (seed 000's
workloads, jax's int8 and bf16 layers), so that with host partitioning (:mod:`compilers.partition`)
every case offloads its matrix work and its neighbours land wherever the compiler can run them.
Every chain starts with its matrix work (a linear layer, a gemm):

- **gemmini**: an ``s8[m, k]`` input (m of 1, 7, 16, 23, 32; k of 16, 29, 32, 64; layer widths
  16, 19, 32 and, one time in seven, 1: every tail of the array); steps: an int8 linear layer (``s8 x s8 -> s32`` dot,
  its weights at times in PyTorch's layout, ``x @ w.T``, and a tail: saturate, ReLU, an s32 bias
  row or an s8 bias matrix added, or the wraparound low byte), an ``s8 x s8 -> s8`` dot, a
  wraparound add, a saturating residual add, a ReLU, a clamp with odd bounds, a column sum
  broadcast back, a square transpose; a quarter of the linear layers are a gate as an RNN cell
  writes it, ``x @ Wx + h @ Wh`` (two products summed before the tail);
  With ``block16`` (the ``layers_os`` and ``layers_bias`` cases, compiled with Gemmini's
  weight-stationary instructions, resp. its int8 accumulator load, withheld: fuzz/opsets.py)
  every product is one 16-deep block (K = N = 16, or N = 8, then K = 8 for the next one, and for
  ``layers_os`` at times N = 1, then K = 1; m of 1, 7, 16, 23, 32: the array's partial row and
  column blocks) with a saturating tail, an int8 bias matrix half the time, or the last one's raw int32 result: what the
  output-stationary dataflow and the array's bias input (``matmul_ws_bias_*``) compute (a gate's
  second product accumulates into the first one's: ``store_os_acc`` with ``accumulate``);
- **amx**: the same int8 chain (m of 1, 7, 16, 23, 32; K of 64, 4 or 36 and layer widths 64, 12
  or 1: a dimension inside one tile runs tiles of its size; its input u8 at times, clipped half
  of those times, the first layer then a ``u8 x s8`` product, TDPBUSD's; the last layer's result
  u8 at times, ``jnp.clip(y, 0, 255).astype(uint8)``) or a bf16 one (m of 1, 7, 16, 32; K of 32,
  64 or 2; widths 32, 64, 1, 7; ``bf16 x bf16 -> f32`` dot converted back to bf16, ReLU, a bias
  add, a row sum; at times an f32 bias added to the f32 result, ``jnp.dot(x, w,
  preferred_element_type=jnp.float32) + b``, a ReLU of it, ``jnp.maximum(0.0, y)``, and the last
  f32 result quantized to u8, ``jnp.clip(y, 0, 255).astype(uint8)``);
- **qkv**: a ``bf16[64m, 64]`` input; steps: a gemm by a 64 x 64 matrix, a softmax as
  ``jax.nn.softmax`` writes it (the row maximum subtracted first) or as ``exp / sum``, a scale by a
  constant, a transpose; a 128-row chain returns its input beside its result at times (a tuple:
  the residual stream, moved whole through the scratchpad).

Deterministic in the seed (numpy PCG64, stream ``[seed, 11]``); at most ``max_nodes - 1`` steps;
the HLO text is parsed into a :class:`~semantics.ir.Graph`.
"""

from __future__ import annotations

import numpy as np

from semantics.hlo_parser import parse_hlo
from semantics.ir import Graph

__all__ = ["LAYER_TARGETS", "layers_graph"]

#: targets this generator draws for
LAYER_TARGETS: tuple[str, ...] = ("gemmini", "amx", "qkv")


class _Text:
    """HLO text of one entry computation being written."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.lines: list[str] = []
        self.params: list[str] = []
        self.n = 0
        self.regions: dict[str, str] = {}

    def fresh(self, base: str) -> str:
        self.n += 1
        return f"{base}.{self.n}"

    def param(self, ty: str) -> str:
        name = f"p{len(self.params)}"
        self.lines.append(f"  {name} = {ty} parameter({len(self.params)})")
        self.params.append(ty)
        return name

    def op(self, base: str, ty: str, body: str) -> str:
        name = self.fresh(base)
        self.lines.append(f"  {name} = {ty} {body}")
        return name

    def scalar(self, dt: str, value: object) -> str:
        return self.op("c", f"{dt}[]", f"constant({value})")

    def splat(self, dt: str, shape: str, value: object) -> str:
        return self.op("b", f"{dt}[{shape}]", f"broadcast({self.scalar(dt, value)}), dimensions={{}}")

    def region(self, fn: str, dt: str) -> str:
        name = f"{fn}_{dt}"
        self.regions[name] = (f"{name} {{\n  x = {dt}[] parameter(0)\n  y = {dt}[] parameter(1)\n"
                              f"  ROOT r = {dt}[] {fn}(x, y)\n}}\n")
        return name

    def text(self, name: str, root: str) -> str:
        body = [ln.replace(f"  {root} =", f"  ROOT {root} =", 1) if ln.startswith(f"  {root} =") else ln
                for ln in self.lines]
        return f"HloModule {name}\n\n" + "\n".join(self.regions.values()) + "\nENTRY main {\n" + "\n".join(body) + "\n}\n"


def _pick(rng: np.random.Generator, items: tuple, p: tuple) -> object:
    return items[int(rng.choice(len(items), p=p))]


def _sat8(t: _Text, y: str, shape: str, relu: bool = False) -> str:
    lo = t.splat("s32", shape, 0 if relu else -128)
    hi = t.splat("s32", shape, 127)
    c = t.op("clamp", f"s32[{shape}]", f"clamp({lo}, {y}, {hi})")
    return t.op("convert", f"s8[{shape}]", f"convert({c})")


def _int8_chain(t: _Text, steps: int, m: int, k: int, ks: tuple[int, ...], wide_only: bool,
                u8_input: bool = False, saturating: bool = False) -> str:
    """An int8 chain on ``s8[m, k]`` (module doc); ``ks``: the widths a linear layer may give;
    ``u8_input``: the input is ``u8`` and the first layer reads it as jax writes a mixed-type
    product (both operands converted to s32, then the dot); ``saturating``: products only with
    saturating tails (saturate, ReLU, an s8 bias matrix; no wraparound low byte, no ``s8 -> s8``
    dot) and weights as they are (no ``x @ w.T``), the last layer's int32 result at times returned
    as it is. The first step is a linear
    layer: every chain has matrix work."""
    rng = t.rng
    x = t.param(f"{'u8' if u8_input else 's8'}[{m},{k}]")
    if u8_input:
        if rng.random() < 0.5:      # the uint8 input clipped first (jnp.clip on uint8: AMX's byte min / max)
            lo, hi = int(rng.integers(0, 64)), int(rng.integers(128, 256))
            x = t.op("clamp", f"u8[{m},{k}]", f"clamp({t.splat('u8', f'{m},{k}', lo)}, {x}, {t.splat('u8', f'{m},{k}', hi)})")
        n = int(rng.choice(ks))
        w = t.param(f"s8[{k},{n}]")
        a32 = t.op("convert", f"s32[{m},{k}]", f"convert({x})")
        w32 = t.op("convert", f"s32[{k},{n}]", f"convert({w})")
        y = t.op("dot", f"s32[{m},{n}]", f"dot({a32}, {w32}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")
        x, k = _sat8(t, y, f"{m},{n}", relu=bool(rng.random() < 0.5)), n
    names = ("linear", "wrapdot", "add", "residual", "relu", "clamp", "colsum", "transpose")
    p = (0.34, 0.08 if not (wide_only or saturating) else 0.0, 0.12, 0.1, 0.1, 0.08, 0.1, 0.08)
    p = tuple(v / sum(p) for v in p)
    for i in range(steps):
        step = "linear" if i == 0 and not u8_input else _pick(rng, names, p)
        shape = f"{m},{k}"
        if step == "transpose" and m != k:
            step = "linear"
        if step in ("linear", "wrapdot"):
            n = int(rng.choice(ks))
            out = f"{m},{n}"
            if not saturating and rng.random() < 0.2:      # PyTorch's layout: x @ w.T
                w = t.param(f"s8[{n},{k}]")
                dims = "lhs_contracting_dims={1}, rhs_contracting_dims={1}"
            else:
                w = t.param(f"s8[{k},{n}]")
                dims = "lhs_contracting_dims={1}, rhs_contracting_dims={0}"
            if step == "wrapdot":
                x = t.op("dot", f"s8[{out}]", f"dot({x}, {w}), {dims}")
            else:
                y = t.op("dot", f"s32[{out}]", f"dot({x}, {w}), {dims}")
                if rng.random() < 0.25:     # a gate as an RNN cell writes it: x @ Wx + h @ Wh
                    kh = 16 if saturating else k
                    h = t.param(f"s8[{m},{kh}]")
                    wh = t.param(f"s8[{kh},{n}]")
                    yh = t.op("dot", f"s32[{out}]", f"dot({h}, {wh}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")
                    y = t.op("add", f"s32[{out}]", f"add({y}, {yh})")
                tail = _pick(rng, ("sat", "relu", "bias", "bias8", "wrap"),
                             (0.3, 0.2, 0.2, 0.15, 0.15) if not saturating else (0.3, 0.2, 0.0, 0.5, 0.0))
                if tail == "bias":
                    b = t.param(f"s32[{n}]")
                    bb = t.op("broadcast", f"s32[{out}]", f"broadcast({b}), dimensions={{1}}")
                    y = t.op("add", f"s32[{out}]", f"add({y}, {bb})")
                elif tail == "bias8":       # an int8 bias matrix, widened (the array adds it as D)
                    b = t.op("convert", f"s32[{out}]", f"convert({t.param(f's8[{out}]')})")
                    y = t.op("add", f"s32[{out}]", f"add({y}, {b})")
                if saturating and i == steps - 1 and tail != "relu" and rng.random() < 0.5:
                    return y        # the last layer's int32 result as it is (the raw accumulator)
                if wide_only and i == steps - 1 and tail in ("sat", "relu") and rng.random() < 0.4:
                    # u8 activations for a next u8 x s8 layer: jnp.clip(y, 0, 255).astype(uint8)
                    lo, hi = t.splat("s32", out, 0), t.splat("s32", out, 255)
                    c = t.op("clamp", f"s32[{out}]", f"clamp({lo}, {y}, {hi})")
                    return t.op("convert", f"u8[{out}]", f"convert({c})")
                x = (t.op("convert", f"s8[{out}]", f"convert({y})") if tail == "wrap"
                     else _sat8(t, y, out, relu=tail == "relu"))
            k = n
        elif step == "add":
            x = t.op("add", f"s8[{shape}]", f"add({x}, {t.param(f's8[{shape}]')})")
        elif step == "residual":
            r = t.param(f"s8[{shape}]")
            a = t.op("convert", f"s32[{shape}]", f"convert({x})")
            b = t.op("convert", f"s32[{shape}]", f"convert({r})")
            x = _sat8(t, t.op("add", f"s32[{shape}]", f"add({a}, {b})"), shape)
        elif step == "relu":
            x = t.op("maximum", f"s8[{shape}]", f"maximum({x}, {t.splat('s8', shape, 0)})")
        elif step == "clamp":
            lo, hi = sorted(int(v) for v in rng.integers(-100, 100, 2))
            x = t.op("clamp", f"s8[{shape}]", f"clamp({t.splat('s8', shape, lo)}, {x}, {t.splat('s8', shape, hi + 1)})")
        elif step == "colsum":
            s = t.op("reduce", f"s8[{k}]", f"reduce({x}, {t.scalar('s8', 0)}), dimensions={{0}}, "
                     f"to_apply={t.region('add', 's8')}")
            x = t.op("broadcast", f"s8[{shape}]", f"broadcast({s}), dimensions={{1}}")
        else:
            x = t.op("transpose", f"s8[{shape}]", f"transpose({x}), dimensions={{1,0}}")
    return x


def _bf16_chain(t: _Text, steps: int, m: int, k: int) -> str:
    """A bf16 chain on ``bf16[m, k]`` for AMX's TDPBF16PS (module doc)."""
    rng = t.rng
    x = t.param(f"bf16[{m},{k}]")
    for i in range(steps):
        step = "linear" if i == 0 else _pick(rng, ("linear", "relu", "bias", "rowsum"), (0.5, 0.2, 0.15, 0.15))
        if step == "rowsum" and m == 1:     # one row: its sum broadcast back is a constant (degenerate)
            step = "relu"
        shape = f"{m},{k}"
        if step == "linear":
            n = int(rng.choice((32, 64, 32, 64, 1, 7)))
            w = t.param(f"bf16[{k},{n}]")
            y = t.op("dot", f"f32[{m},{n}]", f"dot({x}, {w}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")
            if rng.random() < 0.3:      # an f32 bias: jnp.dot(x, w, preferred_element_type=jnp.float32) + b
                fb = t.op("broadcast", f"f32[{m},{n}]", f"broadcast({t.param(f'f32[{n}]')}), dimensions={{1}}")
                y = t.op("add", f"f32[{m},{n}]", f"add({y}, {fb})")
            if rng.random() < 0.3:      # a ReLU of the f32 result, jnp.maximum(0.0, y)
                y = t.op("maximum", f"f32[{m},{n}]", f"maximum({t.splat('f32', f'{m},{n}', 0)}, {y})")
            if i == steps - 1 and rng.random() < 0.3:       # the f32 result quantized to u8
                c = t.op("clamp", f"f32[{m},{n}]",
                         f"clamp({t.splat('f32', f'{m},{n}', 0)}, {y}, {t.splat('f32', f'{m},{n}', 255)})")
                return t.op("convert", f"u8[{m},{n}]", f"convert({c})")
            x, k = t.op("convert", f"bf16[{m},{n}]", f"convert({y})"), n
        elif step == "relu":
            x = t.op("maximum", f"bf16[{shape}]", f"maximum({x}, {t.splat('bf16', shape, 0)})")
        elif step == "bias":
            b = t.param(f"bf16[{k}]")
            x = t.op("add", f"bf16[{shape}]", f"add({x}, {t.op('broadcast', f'bf16[{shape}]', f'broadcast({b}), dimensions={{1}}')})")
        else:
            s = t.op("reduce", f"bf16[{m}]", f"reduce({x}, {t.scalar('bf16', 0)}), dimensions={{1}}, "
                     f"to_apply={t.region('add', 'bf16')}")
            x = t.op("broadcast", f"bf16[{shape}]", f"broadcast({s}), dimensions={{0}}")
    return x


def _qkv_chain(t: _Text, steps: int) -> str:
    """A chain of QKV blocks with jax's softmax and scalings between them (module doc)."""
    rng = t.rng
    rows = 64 * (2 if rng.random() < 0.3 else 1)
    ty = f"bf16[{rows},64]"
    x = t.param(ty)
    after_dot = False
    for i in range(steps):
        step = "dot" if i == 0 else _pick(rng, ("dot", "softmax", "jax_softmax", "scale", "transpose"),
                                          (0.45, 0.15, 0.2, 0.1, 0.1))
        if step in ("softmax", "jax_softmax") and not after_dot:
            step = "dot"
        if step == "transpose" and rows != 64:
            step = "dot"
        if step == "dot":
            w = t.param("bf16[64,64]")
            if rng.random() < 0.4:
                w = t.op("transpose", "bf16[64,64]", f"transpose({w}), dimensions={{1,0}}")
            x = t.op("dot", ty, f"dot({x}, {w}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}")
        elif step in ("softmax", "jax_softmax"):
            if step == "jax_softmax":
                mx = t.op("max", f"bf16[{rows}]", f"reduce({x}, {t.scalar('bf16', '-inf')}), dimensions={{1}}, "
                          f"to_apply={t.region('maximum', 'bf16')}")
                mb = t.op("broadcast", ty, f"broadcast({mx}), dimensions={{0}}")
                x = t.op("subtract", ty, f"subtract({x}, {mb})")
            e = t.op("exp", ty, f"exponential({x})")
            s = t.op("sum", f"bf16[{rows}]", f"reduce({e}, {t.scalar('bf16', 0)}), dimensions={{1}}, "
                     f"to_apply={t.region('add', 'bf16')}")
            x = t.op("probs", ty, f"divide({e}, {t.op('broadcast', ty, f'broadcast({s}), dimensions={{0}}')})")
        elif step == "scale":
            x = t.op("scaled", ty, f"multiply({x}, {t.splat('bf16', f'{rows},64', 0.125)})")
        else:
            x = t.op("transpose", ty, f"transpose({x}), dimensions={{1,0}}")
        after_dot = step == "dot"
    if rows == 128 and rng.random() < 0.35:     # the block's input returned beside its result (a residual
        return t.op("out", f"({ty}, {ty})", f"tuple({x}, p0)")     # stream a later add on the host takes)
    return x


def layers_graph(target: str, seed: int, max_nodes: int = 5, block16: bool = False, narrow: bool = False,
                 ones: bool = False) -> Graph:
    """A random layer chain for ``target`` (module doc); raises ValueError for another target.
    ``block16`` (gemmini): every product one 16-deep block (K = N = 16) with a saturating tail:
    what Gemmini's output-stationary dataflow computes (the ``layers_os`` cases); ``narrow``
    (with ``block16``): a layer may also give 8 columns (N = 8, then K = 8 for the next one: a
    product whose depth and width differ, the ``layers_os`` and ``layers_bias`` cases); ``ones``
    (with ``narrow``): a layer may also give one column (N = 1, then K = 1: a depth-1 product; the
    ``layers_os`` cases; with the array's bias input, ``layers_bias``, such a search takes tens of
    seconds, so those cases do not draw it)."""
    if target not in LAYER_TARGETS or (block16 and target != "gemmini"):
        raise ValueError(f"layers: no layer shapes for target '{target}' (known: {', '.join(LAYER_TARGETS)})")
    rng = np.random.default_rng([seed, 11])
    t = _Text(rng)
    steps = int(rng.integers(1, max(2, max_nodes)))
    if target == "gemmini" and block16:
        widths = ((16, 8, 16, 8, 16, 8, 1) if ones else (16, 8)) if narrow else (16,)
        root = _int8_chain(t, steps, int(rng.choice((1, 7, 16, 23, 32))), 16, widths, False, saturating=True)
    elif target == "gemmini":      # sizes past one tile, primes and a batch of one included (every tail of the array)
        root = _int8_chain(t, steps, int(rng.choice((1, 7, 16, 23, 32))), int(rng.choice((16, 29, 32, 64))),
                           (16, 19, 32, 16, 19, 32, 1), False)
    elif target == "amx":
        if rng.random() < 0.35:
            root = _bf16_chain(t, steps, int(rng.choice((1, 7, 16, 32))), int(rng.choice((32, 64, 2))))
        else:
            root = _int8_chain(t, steps, int(rng.choice((1, 7, 16, 23, 32))), int(rng.choice((64, 64, 4, 36))),
                               (64, 64, 12, 1), True, u8_input=bool(rng.random() < 0.4))
    else:
        root = _qkv_chain(t, steps)
    return parse_hlo(t.text(f"layers_{target}_{seed}", root))
