"""Users' layers as jax writes them: dumped by jax, compiled for every target they suit, checked.

    python bench/real_layers.py [--only NAME ...] [--forms pre,post] [--backends sim,second]
                                [--time-budget S] [--jobs N] [--json bench/results/real_layers.json]

Each layer below is a jax function written the way jax users write them (``lax.dot_general`` /
``lax.conv_general_dilated`` with ``preferred_element_type=jnp.int32``, a bias, a requantizing
tail of ``jnp.round`` and ``jnp.clip(...).astype(jnp.int8)``, ``jnp.maximum(y, 0)``; bf16
attention with ``jax.nn.softmax`` or ``exp`` / ``sum``) at the sizes of real models (BERT-base,
ResNet-18/50, MobileNet). It is dumped in two forms, as jax lowers it (``pre``:
``jax.jit(f).lower(*args).as_text(dialect="hlo")``) and after XLA's passes (``post``:
``.compile().as_text()``), cached under ``build/real_layers/`` by the jax version and the
function's source. Each (layer, form, target) pair is compiled with :func:`compilers.compile.compile`
and checked on ``sim`` and one more backend (gemmini ``rtl``, amx ``emulated``, qkv ``rtl``) with
:func:`check.check_program` against the reference interpreter on the user's graph; a pair that
does not compile records the compiler's reason (exit 3's text). A pair's compile time is the
better of two compiles in its worker process (the first also pays the process's one-time loads).

The emulated backend builds the emitted C with gcc -O2; a program whose C (its repeating runs
rolled into loops) is over :data:`EMULATED_LINES` lines is not built: the row says ``sim only``
and does not count as a pass.

Prints the table and writes JSON (docs/middle.md's ``real_layers`` table reads it). Needs jax (the
``test`` extra) for the dumps.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._meta import RESULTS, run_meta  # noqa: E402

CACHE = ROOT / "build" / "real_layers"
SECOND = {"gemmini": "rtl", "amx": "emulated", "qkv": "rtl"}
#: the emitted C of a program over this many lines is not built for the emulated backend (gcc -O2
#: takes tens of minutes on such a function); the row says so and does not count as passed
EMULATED_LINES = 55000
INT8 = ("gemmini", "amx")


@dataclass(frozen=True)
class Layer:
    """A layer: its jax function, its arguments' (dtype, shape) and the targets it suits."""

    name: str
    what: str
    fn: Callable
    args: tuple[tuple[str, tuple[int, ...]], ...]
    targets: tuple[str, ...]
    macs: int


# --- the layers, as users write them -------------------------------------------------------------

def _requant(acc, scale=0.0625, relu=False):
    import jax.numpy as jnp

    y = jnp.round(acc.astype(jnp.float32) * scale)
    if relu:
        y = jnp.maximum(y, 0)
    return jnp.clip(y, -128, 127).astype(jnp.int8)


def linear(x, w, b):
    """int8 linear layer, weights [in, out], bias, requantized to int8."""
    import jax.numpy as jnp
    from jax import lax

    acc = lax.dot_general(x, w, (((x.ndim - 1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
    return _requant(acc + b)


def linear_relu(x, w, b):
    """int8 linear layer with ReLU before the clip."""
    import jax.numpy as jnp
    from jax import lax

    acc = lax.dot_general(x, w, (((x.ndim - 1,), (0,)), ((), ())), preferred_element_type=jnp.int32)
    return _requant(acc + b, relu=True)


def linear_relu_after(x, w, b):
    """int8 linear layer with ReLU on the int8 result."""
    import jax.numpy as jnp

    return jnp.maximum(linear(x, w, b), 0)


def linear_torch(x, w, b):
    """int8 linear layer with PyTorch-layout weights [out, in] (``x @ w.T``)."""
    import jax.numpy as jnp

    acc = jnp.matmul(x, w.T, preferred_element_type=jnp.int32)
    return _requant(acc + b)


def linear_sat(x, w, b):
    """int8 linear layer saturated in int32 (no scale)."""
    import jax.numpy as jnp

    acc = jnp.matmul(x, w, preferred_element_type=jnp.int32) + b
    return jnp.clip(acc, -128, 127).astype(jnp.int8)


def linear_raw(x, w, b):
    """int8 x int8 -> int32 with bias, no tail."""
    import jax.numpy as jnp

    return jnp.matmul(x, w, preferred_element_type=jnp.int32) + b


def mlp2(x, w1, b1, w2, b2):
    """Two int8 linear layers, ReLU between."""
    return linear(linear_relu(x, w1, b1), w2, b2)


def scores(q, k):
    """Batched int8 score matmul q @ k^T -> int32."""
    import jax.numpy as jnp

    return jnp.einsum("bqd,bkd->bqk", q, k, preferred_element_type=jnp.int32)


def dot_wrap(a, b):
    """int8 x int8 -> int8 (XLA's modulo-256 dot)."""
    import jax.numpy as jnp

    return jnp.dot(a, b)


def _conv(x, w, stride=1, pad="SAME", groups=1, dn=("NHWC", "HWIO", "NHWC")):
    import jax.numpy as jnp
    from jax import lax

    return lax.conv_general_dilated(x, w, (stride, stride), pad, dimension_numbers=dn, feature_group_count=groups,
                                    preferred_element_type=jnp.int32)


def conv(x, w, b):
    """int8 convolution, SAME padding, bias, requantized with ReLU."""
    return _requant(_conv(x, w) + b, relu=True)


def conv_s2(x, w, b):
    """int8 convolution, stride 2, SAME padding, bias, ReLU."""
    return _requant(_conv(x, w, 2) + b, relu=True)


def conv_dw(x, w, b):
    """int8 depthwise 3x3 convolution (feature groups = channels), bias, ReLU."""
    return _requant(_conv(x, w, groups=x.shape[-1]) + b, relu=True)


def conv_nchw(x, w, b):
    """int8 convolution in PyTorch's layouts (NCHW input, OIHW weights)."""
    return _requant(_conv(x, w, dn=("NCHW", "OIHW", "NCHW")) + b[:, None, None], relu=True)


def conv_conv(x, w1, b1, w2, b2):
    """Two int8 3x3 convolutions in a chain."""
    return conv(conv(x, w1, b1), w2, b2)


def residual(x, w1, b1, w2, b2):
    """A ResNet basic block in int8: conv, conv, the skip added with saturation, ReLU."""
    import jax.numpy as jnp

    y = conv(conv(x, w1, b1), w2, b2)
    s = jnp.clip(y.astype(jnp.int32) + x.astype(jnp.int32), -128, 127)
    return jnp.maximum(s, 0).astype(jnp.int8)


def linear_bf16(x, w):
    """bf16 linear layer accumulating in f32."""
    import jax.numpy as jnp

    return jnp.matmul(x, w, preferred_element_type=jnp.float32)


def attention_softmax(q, k, v):
    """bf16 attention with jax.nn.softmax."""
    import jax
    import jax.numpy as jnp

    s = jnp.matmul(q, k.T)
    return jnp.matmul(jax.nn.softmax(s, axis=-1), v)


def attention_exp(q, k, v):
    """bf16 attention with the softmax written out (max subtraction, exp, sum)."""
    import jax.numpy as jnp

    s = jnp.matmul(q, k.T)
    e = jnp.exp(s - jnp.max(s, axis=-1, keepdims=True))
    return jnp.matmul(e / jnp.sum(e, axis=-1, keepdims=True), v)


def _lin(name, what, fn, m, k, n, lead=(), torch=False, targets=INT8):
    x = ("s8", (*lead, m, k))
    w = ("s8", (n, k) if torch else (k, n))
    b = ("s32", (n,))
    rows = m
    for d in lead:
        rows *= d
    return Layer(name, what, fn, (x, w, b), targets, rows * k * n)


def _cv(name, what, fn, n, h, w, c, kk, o, stride=1, groups=1, nchw=False):
    x = ("s8", (n, c, h, w) if nchw else (n, h, w, c))
    wt = ("s8", (o, c // groups, kk, kk) if nchw else (kk, kk, c // groups, o))
    b = ("s32", (o,))
    oh, ow = -(-h // stride), -(-w // stride)
    return Layer(name, what, fn, (x, wt, b), INT8, n * oh * ow * o * kk * kk * (c // groups))


LAYERS: list[Layer] = [
    _lin("bert_qkv", "BERT-base Q/K/V projection 128x768x768", linear, 128, 768, 768),
    _lin("bert_ffn1", "BERT-base FFN up 128x768x3072, ReLU", linear_relu, 128, 768, 3072),
    _lin("bert_ffn2", "BERT-base FFN down 128x3072x768", linear, 128, 3072, 768),
    _lin("bert_qkv_batch", "BERT-base projection, activations [4, 128, 768]", linear, 128, 768, 768, lead=(4,)),
    _lin("bert_out_relu8", "BERT-base output, ReLU on the int8 result", linear_relu_after, 128, 768, 768),
    _lin("torch_linear", "PyTorch-layout weights [out, in], x @ w.T", linear_torch, 128, 768, 768, torch=True),
    _lin("resnet_fc", "ResNet-18 classifier GEMV 1x512x1000", linear, 1, 512, 1000),
    _lin("linear_sat", "linear saturated in int32, 64x256x128", linear_sat, 64, 256, 128),
    _lin("linear_raw", "int8 x int8 -> int32 + bias, 100x300x70", linear_raw, 100, 300, 70),
    Layer("mlp2", "two-layer MLP 64x512x256x128", mlp2,
          (("s8", (64, 512)), ("s8", (512, 256)), ("s32", (256,)), ("s8", (256, 128)), ("s32", (128,))),
          INT8, 64 * 512 * 256 + 64 * 256 * 128),
    Layer("scores", "batched int8 scores 8x64x64 (q @ k^T)", scores, (("s8", (8, 64, 64)), ("s8", (8, 64, 64))),
          INT8, 8 * 64 * 64 * 64),
    Layer("dot_wrap", "int8 x int8 -> int8 wraparound dot 64x64x64", dot_wrap,
          (("s8", (64, 64)), ("s8", (64, 64))), INT8, 64 ** 3),
    _cv("resnet18_3x3", "ResNet-18 conv2_x 3x3 56x56x64->64", conv, 1, 56, 56, 64, 3, 64),
    _cv("resnet50_1x1", "ResNet-50 conv2_x 1x1 56x56x64->256", conv, 1, 56, 56, 64, 1, 256),
    _cv("resnet50_3x3", "ResNet-50 conv3_x 3x3 28x28x128->128", conv, 1, 28, 28, 128, 3, 128),
    _cv("resnet_7x7s2", "ResNet stem 7x7 stride 2 224x224x3->64", conv_s2, 1, 224, 224, 3, 7, 64, stride=2),
    _cv("resnet_down", "ResNet downsample 1x1 stride 2 56x56x64->128", conv_s2, 1, 56, 56, 64, 1, 128, stride=2),
    _cv("mobilenet_dw", "MobileNet depthwise 3x3 56x56x32", conv_dw, 1, 56, 56, 32, 3, 32, groups=32),
    _cv("conv_batch2", "3x3 conv, batch 2, 28x28x64->64", conv, 2, 28, 28, 64, 3, 64),
    _cv("conv_nchw", "PyTorch layouts NCHW/OIHW 3x3 28x28x64->64", conv_nchw, 1, 28, 28, 64, 3, 64, nchw=True),
    Layer("conv_conv", "two 3x3 convs 28x28x64", conv_conv,
          (("s8", (1, 28, 28, 64)), ("s8", (3, 3, 64, 64)), ("s32", (64,)), ("s8", (3, 3, 64, 64)), ("s32", (64,))),
          INT8, 2 * 28 * 28 * 64 * 9 * 64),
    Layer("residual", "ResNet basic block 28x28x64 (two convs, saturating skip add, ReLU)", residual,
          (("s8", (1, 28, 28, 64)), ("s8", (3, 3, 64, 64)), ("s32", (64,)), ("s8", (3, 3, 64, 64)), ("s32", (64,))),
          INT8, 2 * 28 * 28 * 64 * 9 * 64),
    Layer("bf16_linear", "bf16 linear, f32 accumulation 128x768x768", linear_bf16,
          (("bf16", (128, 768)), ("bf16", (768, 768))), ("amx",), 128 * 768 * 768),
    Layer("attn64_softmax", "bf16 attention, 64 rows, jax.nn.softmax", attention_softmax,
          (("bf16", (64, 64)), ("bf16", (64, 64)), ("bf16", (64, 64))), ("qkv",), 2 * 64 ** 3),
    Layer("attn128_softmax", "bf16 attention, 128 rows, jax.nn.softmax", attention_softmax,
          (("bf16", (128, 64)), ("bf16", (128, 64)), ("bf16", (128, 64))), ("qkv",), 2 * 128 * 128 * 64),
    Layer("attn64_exp", "bf16 attention, 64 rows, exp / sum", attention_exp,
          (("bf16", (64, 64)), ("bf16", (64, 64)), ("bf16", (64, 64))), ("qkv",), 2 * 64 ** 3),
    Layer("attn128_exp", "bf16 attention, 128 rows, exp / sum", attention_exp,
          (("bf16", (128, 64)), ("bf16", (128, 64)), ("bf16", (128, 64))), ("qkv",), 2 * 128 * 128 * 64),
]


# --- dumps ---------------------------------------------------------------------------------------

def _source_key(layer: Layer) -> str:
    import jax

    src = inspect.getsource(sys.modules[__name__])
    return hashlib.sha256(f"{jax.__version__}|{layer.args}|{src}".encode()).hexdigest()[:16]


def dump(layer: Layer, form: str) -> str:
    """The HLO text jax writes for ``layer`` in ``form`` (``pre`` or ``post``), cached."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{layer.name}.{_source_key(layer)}.{form}.hlo"
    if path.exists():
        return path.read_text()
    import jax
    import jax.numpy as jnp

    args = [jnp.zeros(shape, getattr(jnp, {"s8": "int8", "s32": "int32", "bf16": "bfloat16"}[dt]))
            for dt, shape in layer.args]
    lowered = jax.jit(layer.fn).lower(*args)
    text = lowered.as_text(dialect="hlo") if form == "pre" else lowered.compile().as_text()
    path.write_text(text)
    return text


# --- one pair ------------------------------------------------------------------------------------

def run_pair(layer: Layer, form: str, target: str, backends: tuple[str, ...], time_budget: float) -> dict:
    """Compile and check one (layer, form, target); the row of the table."""
    from check import check_program
    from compilers.compile import compile
    from compilers.errors import Unsupported
    from semantics.errors import AccvError
    from semantics.hlo_parser import parse_hlo

    row: dict = {"layer": layer.name, "form": form, "target": target, "macs": layer.macs}
    try:
        graph = parse_hlo(dump(layer, form))
    except AccvError as e:
        row.update(status="parse", reason=str(e).splitlines()[0][:300])
        return row
    t0 = time.perf_counter()
    try:
        res = compile(graph, target, time_budget=time_budget)
    except Unsupported as e:
        row.update(status="unsupported", reason=e.reason[:300], compile_s=time.perf_counter() - t0)
        return row
    except AccvError as e:
        row.update(status="error", reason=f"{type(e).__name__}: {e}"[:300], compile_s=time.perf_counter() - t0)
        return row
    first = time.perf_counter() - t0
    t0 = time.perf_counter()        # the compile time is the better of two (the first pays the
    compile(graph, target, time_budget=time_budget)     # process's one-time loads; the other worker's load)
    row["compile_s"] = min(first, time.perf_counter() - t0)
    row["instructions"] = len(res.program)
    row["middle"] = bool(res.stats.middle)
    names = tuple(SECOND[target] if b == "second" else b for b in backends)
    checked: dict[str, dict] = {}
    for b in names:
        if b == "emulated":
            from compilers.targets.amx.emit_c import emit_c

            lines = emit_c(res.program).count("\n")
            if lines > EMULATED_LINES:
                checked[b] = {"outcome": "not run", "detail": f"the unit has {lines} lines of C, over {EMULATED_LINES}: "
                                                              f"gcc -O2 does not build it in minutes"}
                continue
        t1 = time.perf_counter()
        v = check_program(graph, res.acc, res.program, 1, 0, backend=b)
        checked[b] = {"outcome": v.outcome, "cycles": v.cycles.get(b) if v.cycles else None,
                      "seconds": time.perf_counter() - t1}
        if v.outcome != "pass":
            checked[b]["detail"] = (v.reason or v.symptom or "")[:300]
    row["checks"] = checked
    outcomes = {c["outcome"] for c in checked.values()}
    row["status"] = "pass" if outcomes == {"pass"} else "sim only" if outcomes == {"pass", "not run"} else "fail"
    if not checked:
        row["status"] = "compiled"      # no backend asked for (a compile-time run)
    cyc = checked.get("rtl", {}).get("cycles")
    if target == "gemmini" and cyc:
        row["utilization"] = layer.macs / (cyc * 16 * 16)
    return row


def _pair(work: tuple) -> dict:
    name, form, target, backends, budget = work
    return run_pair(next(x for x in LAYERS if x.name == name), form, target, backends, budget)


def _report(i: int, n: int, r: dict) -> None:
    extra = f"{r.get('compile_s', 0):.2f}s" if "compile_s" in r else ""
    why = "" if r["status"] == "pass" else " " + (r.get("reason") or json.dumps(r.get("checks")))[:140]
    print(f"[{i + 1}/{n}] {r['layer']:16s} {r['form']:4s} {r['target']:8s} {r['status']:11s} {extra}{why}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", default=None, help="layer names (default: all)")
    ap.add_argument("--forms", default="pre,post")
    ap.add_argument("--targets", default="gemmini,amx,qkv")
    ap.add_argument("--backends", default="sim,second", help="'second' is the target's second backend")
    ap.add_argument("--time-budget", type=float, default=20.0, help="Act's search budget per pair, seconds")
    ap.add_argument("--jobs", type=int, default=1, help="pairs run in this many worker processes")
    ap.add_argument("--json", default=str(RESULTS / "real_layers.json"))
    a = ap.parse_args(argv)
    layers = [x for x in LAYERS if a.only is None or x.name in a.only]
    targets = set(a.targets.split(","))
    pairs = [(x.name, f, t) for x in layers for f in a.forms.split(",") for t in x.targets if t in targets]
    for x in layers:                  # the dumps first, in this process (jax once)
        for f in a.forms.split(","):
            dump(x, f)
    backends = tuple(b for b in a.backends.split(",") if b)
    work = [(n, f, t, backends, a.time_budget) for n, f, t in pairs]
    rows: list[dict] = []
    if a.jobs > 1:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(a.jobs) as pool:
            for i, r in enumerate(pool.imap(_pair, work)):
                rows.append(r)
                _report(i, len(pairs), r)
    else:
        for i, w in enumerate(work):
            rows.append(_pair(w))
            _report(i, len(pairs), rows[-1])
    ok = sum(r["status"] == "pass" for r in rows)
    print(f"\n{ok} of {len(rows)} (layer, form, target) pairs compile and check bit for bit")
    cmd = "python bench/real_layers.py " + " ".join(sys.argv[1:] if argv is None else argv)
    out = {**run_meta(), "command": cmd.strip(), "pairs": len(rows), "passed": ok, "rows": rows,
           "layers": [{"name": x.name, "what": x.what, "targets": x.targets, "macs": x.macs} for x in layers]}
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
