"""Write the jax dump corpus (tests/corpus/jax/): common functions jitted with jax on the CPU.

For each function ``NAME`` this writes, under ``tests/corpus/jax/NAME/``:

* ``pre.hlo``: the pre-optimization module (``jax.jit(f).lower(*args).as_text(dialect="hlo")``);
* ``opt.hlo``: the module XLA:CPU compiled (``.compile().as_text()``);
* ``in0.npy``, ``in1.npy``, ...: the inputs; ``out0.npy``, ...: XLA's outputs on them (jax's
  default flags, as users run it).

and ``tests/corpus/jax/VERSIONS.json`` (jax, jaxlib, numpy versions, the XLA_FLAGS in effect).
The corpus is the test data of tests/semantics/test_jax_corpus.py; regenerate it with
``python scripts/jax_dumps.py`` (needs the ``xla`` extra). ``--only NAME,...`` writes a subset.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from semantics.npyio import save_output  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "tests" / "corpus" / "jax"

_rng = np.random.default_rng(31)


def f32(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (_rng.standard_normal(shape) * scale).astype(np.float32)


def bf16(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(jnp.bfloat16)


def f16(*shape: int) -> np.ndarray:
    return _rng.standard_normal(shape).astype(np.float16)


def i8(*shape: int) -> np.ndarray:
    return _rng.integers(-128, 128, shape).astype(np.int8)


def i32(*shape: int, lo: int = -1000, hi: int = 1000) -> np.ndarray:
    return _rng.integers(lo, hi, shape).astype(np.int32)


# -- the functions --------------------------------------------------------------------------------

def mlp_relu(x, w, b):
    return jax.nn.relu(x @ w + b)


def mlp_gelu(x, w, b):
    return jax.nn.gelu(x @ w + b, approximate=True)


def mlp_gelu_erf(x, w, b):
    return jax.nn.gelu(x @ w + b, approximate=False)


def mlp_tanh(x, w, b):
    return jnp.tanh(x @ w + b)


def mlp2_silu(x, w1, w2):
    return jax.nn.silu(x @ w1) @ w2


def layernorm(x, g, b):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def layernorm_var(x):
    return (x - x.mean(-1, keepdims=True)) / jnp.sqrt(x.var(-1, keepdims=True) + 1e-6)


def rmsnorm(x, g):
    return x * lax.rsqrt((x * x).mean(-1, keepdims=True) + 1e-6) * g


def softmax(x):
    return jax.nn.softmax(x, axis=-1)


def log_softmax(x):
    return jax.nn.log_softmax(x, axis=-1)


def attention_causal(q, k, v):
    s = q @ k.T / np.float32(np.sqrt(q.shape[-1]))
    n = s.shape[0]
    mask = jnp.tril(jnp.ones((n, n), bool))
    s = jnp.where(mask, s, -1e9)
    return jax.nn.softmax(s, -1) @ v


def attention_batched(q, k, v):
    s = jnp.einsum("bqd,bkd->bqk", q, k) * np.float32(0.25)
    return jnp.einsum("bqk,bkd->bqd", jax.nn.softmax(s, -1), v)


def int8_matmul_requant(a, b, scale):
    acc = lax.dot(a, b, preferred_element_type=jnp.int32)
    y = jnp.round(acc.astype(jnp.float32) * scale)
    return jnp.clip(y, -128, 127).astype(jnp.int8)


def int8_matmul_shift(a, b):
    acc = lax.dot(a, b, preferred_element_type=jnp.int32)
    return jnp.clip((acc + (1 << 6)) >> 7, -128, 127).astype(jnp.int8)


def conv2d_nhwc(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def conv2d_nchw_stride(x, w):
    return lax.conv_general_dilated(x, w, (2, 2), "VALID")


def conv2d_dilated(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), ((2, 2), (2, 2)), rhs_dilation=(2, 2),
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"))


def conv_transpose(x, w):
    return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def depthwise_conv(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    feature_group_count=x.shape[-1])


def conv1d(x, w):
    return lax.conv_general_dilated(x, w, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))


def conv2d_int8(x, w):
    return lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"),
                                    preferred_element_type=jnp.int32)


def avg_pool(x):
    return lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0


def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), "SAME")


def global_avg_pool(x):
    return x.mean(axis=(1, 2))


def cumsum(x):
    return jnp.cumsum(x, axis=-1)


def cumsum_int(x):
    return jnp.cumsum(x, axis=0)


def cumprod(x):
    return jnp.cumprod(x, axis=-1)


def cummax(x):
    return lax.cummax(x, axis=1)


def argmax(x):
    return jnp.argmax(x, axis=-1)


def argmin(x):
    return jnp.argmin(x, axis=0)


def one_hot(i):
    return jax.nn.one_hot(i, 10)


def floor_divide(a, b):
    return jnp.floor_divide(a, b)


def int_mod(a, b):
    return jnp.mod(a, b)


def converts(x):
    return (x.astype(jnp.bfloat16).astype(jnp.float32) + x.astype(jnp.float16).astype(jnp.float32),
            x.astype(jnp.int32), x.astype(jnp.uint8))


def bf16_mlp(x, w):
    return jax.nn.relu(x @ w).astype(jnp.float32)


def bf16_add_convert(a, b):
    return (a + b).astype(jnp.float32)


def f16_ops(a, b):
    return (a * b + a).astype(jnp.float32)


def pad_reflect(x):
    return jnp.pad(x, ((1, 1), (2, 2)), mode="reflect")


def pad_constant(x):
    return jnp.pad(x, ((1, 2), (0, 3)), constant_values=1.5)


def flip(x):
    return jnp.flip(x, axis=(0, 1))


def tril_triu(x):
    return jnp.tril(x) - jnp.triu(x, 1)


def clip_round(x):
    return jnp.round(jnp.clip(x, -1.0, 1.0) * 10.0)


def where_sign(x):
    return jnp.where(x > 0, jnp.sign(x) * x, 0.1 * x)


def fma_chain(a, b, c):
    return a * b + c


def mul_sub(a, b, c):
    return c - a * b


def mul_add_fused(a, b, c):
    return jnp.exp(a * b + c)


def sigmoid(x):
    return jax.nn.sigmoid(x)


def softplus(x):
    return jax.nn.softplus(x)


def elu_leaky(x):
    return jax.nn.elu(x) + jax.nn.leaky_relu(x)


def erf_fn(x):
    return jax.scipy.special.erf(x)


def expm1_log1p(x):
    return jnp.expm1(x) + jnp.log1p(jnp.abs(x))


def atan2_fn(a, b):
    return jnp.arctan2(a, b)


def cbrt_fn(x):
    return jnp.cbrt(x)


def isfinite_fn(x):
    return jnp.isfinite(x / (x - x[0]))


def popcount_clz(x):
    return lax.population_count(x) + lax.clz(x)


def sort_fn(x):
    return jnp.sort(x, axis=-1)


def topk(x):
    return lax.top_k(x, 3)


def gather_take(x, i):
    return jnp.take(x, i, axis=0)


def embedding(table, ids):
    return table[ids]


def scatter_add(x, i, u):
    return x.at[i].add(u)


def mse_loss(p, t):
    return jnp.mean((p - t) ** 2)


def cross_entropy(logits, labels):
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(labels, logits.shape[-1]), -1))


def l2_normalize(x):
    return x / jnp.linalg.norm(x, axis=-1, keepdims=True)


def residual_block(x, w1, w2, g):
    h = jax.nn.relu(x @ w1) @ w2
    y = x + h
    return y * lax.rsqrt((y * y).mean(-1, keepdims=True) + 1e-6) * g


def swiglu(x, w1, w2, w3):
    return (jax.nn.silu(x @ w1) * (x @ w3)) @ w2


def rope(x, cos, sin):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return jnp.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1)


def transpose_reshape(x):
    return x.reshape(4, 3, 8).transpose(2, 0, 1).reshape(8, 12)


def broadcast_ops(x, y):
    return x[:, None, :] * y[None, :, :]


def minmax_reduce(x):
    return x.max(0), x.min(1)


def int_ops(a, b):
    return (a * b) ^ (a >> 3), jnp.maximum(a, b) - jnp.minimum(a, b)


def bool_logic(a, b):
    return jnp.logical_and(a > 0, b < 0) | (a == b)


def dynamic_slice_fn(x, i):
    return lax.dynamic_slice(x, (i, 0), (2, 4))


def dynamic_update_fn(x, u, i):
    return lax.dynamic_update_slice(x, u, (i, 1))


def iota_mask(x):
    return jnp.where(jnp.arange(x.shape[-1]) % 2 == 0, x, -x)


def fori_loop_sum(x):
    return lax.fori_loop(0, 4, lambda i, c: c * 0.5 + x, jnp.zeros_like(x))


def cond_fn(x):
    return lax.cond(x.sum() > 0, lambda v: v * 2.0, lambda v: v - 1.0, x)


def batchnorm_inference(x, m, v, g, b):
    return (x - m) * lax.rsqrt(v + 1e-5) * g + b


def sum_large(x):
    return x.sum(), x.sum(axis=0)


def var_mean(x):
    return jnp.var(x, axis=0), jnp.mean(x, axis=0)


def power_abs(x):
    return jnp.abs(x) ** 1.5 + x ** 2


def square_sqrt(x):
    return jnp.sqrt(jnp.square(x) + 1.0)


def reduce_precision_fn(x):
    return lax.reduce_precision(x, exponent_bits=5, mantissa_bits=10)


def rng_uniform(key):
    return jax.random.uniform(jax.random.wrap_key_data(key), (8,))


def max_pool_grad(x):
    pool = lambda y: lax.reduce_window(y, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "SAME")  # noqa: E731
    return jax.grad(lambda y: (pool(y) ** 2).sum())(x)


def rng_bits(key):
    return jax.random.bits(jax.random.wrap_key_data(key, impl="rbg"), (8,), jnp.uint32)


# -- the table ------------------------------------------------------------------------------------

Case = tuple[Callable[..., Any], Callable[[], list[np.ndarray]]]

CASES: dict[str, Case] = {
    "mlp_relu": (mlp_relu, lambda: [f32(4, 16), f32(16, 8), f32(8)]),
    "mlp_gelu": (mlp_gelu, lambda: [f32(4, 16), f32(16, 8), f32(8)]),
    "mlp_gelu_erf": (mlp_gelu_erf, lambda: [f32(4, 16), f32(16, 8), f32(8)]),
    "mlp_tanh": (mlp_tanh, lambda: [f32(4, 16), f32(16, 8), f32(8)]),
    "mlp2_silu": (mlp2_silu, lambda: [f32(4, 16), f32(16, 32), f32(32, 8)]),
    "layernorm": (layernorm, lambda: [f32(8, 32), f32(32), f32(32)]),
    "layernorm_var": (layernorm_var, lambda: [f32(4, 64)]),
    "rmsnorm": (rmsnorm, lambda: [f32(8, 32), f32(32)]),
    "softmax": (softmax, lambda: [f32(4, 40)]),
    "log_softmax": (log_softmax, lambda: [f32(4, 40)]),
    "attention_causal": (attention_causal, lambda: [f32(8, 16), f32(8, 16), f32(8, 16)]),
    "attention_batched": (attention_batched, lambda: [f32(2, 8, 16), f32(2, 8, 16), f32(2, 8, 16)]),
    "int8_matmul_requant": (int8_matmul_requant, lambda: [i8(8, 32), i8(32, 16), np.float32(0.01)]),
    "int8_matmul_shift": (int8_matmul_shift, lambda: [i8(8, 32), i8(32, 16)]),
    "conv2d_nhwc": (conv2d_nhwc, lambda: [f32(1, 8, 8, 3), f32(3, 3, 3, 4)]),
    "conv2d_nchw_stride": (conv2d_nchw_stride, lambda: [f32(2, 3, 9, 9), f32(4, 3, 3, 3)]),
    "conv2d_dilated": (conv2d_dilated, lambda: [f32(1, 8, 8, 2), f32(3, 3, 2, 3)]),
    "conv_transpose": (conv_transpose, lambda: [f32(1, 4, 4, 2), f32(3, 3, 2, 3)]),
    "depthwise_conv": (depthwise_conv, lambda: [f32(1, 6, 6, 4), f32(3, 3, 1, 4)]),
    "conv1d": (conv1d, lambda: [f32(2, 10, 3), f32(3, 3, 5)]),
    "conv2d_int8": (conv2d_int8, lambda: [i8(1, 6, 6, 3), i8(3, 3, 3, 4)]),
    "avg_pool": (avg_pool, lambda: [f32(1, 8, 8, 3)]),
    "max_pool": (max_pool, lambda: [f32(1, 8, 8, 3)]),
    "global_avg_pool": (global_avg_pool, lambda: [f32(2, 6, 6, 4)]),
    "cumsum": (cumsum, lambda: [f32(4, 50)]),
    "cumsum_int": (cumsum_int, lambda: [i32(20, 3)]),
    "cumprod": (cumprod, lambda: [f32(3, 8)]),
    "cummax": (cummax, lambda: [f32(3, 12)]),
    "argmax": (argmax, lambda: [f32(4, 37)]),
    "argmin": (argmin, lambda: [f32(10, 5)]),
    "one_hot": (one_hot, lambda: [i32(12, lo=0, hi=10)]),
    "floor_divide": (floor_divide, lambda: [i32(64), i32(64, lo=1, hi=20) * np.where(_rng.random(64) < 0.5, -1, 1).astype(np.int32)]),
    "int_mod": (int_mod, lambda: [i32(64), i32(64, lo=1, hi=20) * np.where(_rng.random(64) < 0.5, -1, 1).astype(np.int32)]),
    "converts": (converts, lambda: [f32(64, scale=300.0)]),
    "bf16_mlp": (bf16_mlp, lambda: [bf16(4, 16), bf16(16, 8)]),
    "bf16_add_convert": (bf16_add_convert, lambda: [bf16(256), bf16(256)]),
    "f16_ops": (f16_ops, lambda: [f16(256), f16(256)]),
    "pad_reflect": (pad_reflect, lambda: [f32(4, 5)]),
    "pad_constant": (pad_constant, lambda: [f32(3, 4)]),
    "flip": (flip, lambda: [f32(3, 5)]),
    "tril_triu": (tril_triu, lambda: [f32(5, 5)]),
    "clip_round": (clip_round, lambda: [f32(32)]),
    "where_sign": (where_sign, lambda: [f32(32)]),
    "fma_chain": (fma_chain, lambda: [f32(1024), f32(1024), f32(1024)]),
    "mul_sub": (mul_sub, lambda: [f32(1024), f32(1024), f32(1024)]),
    "mul_add_fused": (mul_add_fused, lambda: [f32(256), f32(256), f32(256)]),
    "sigmoid": (sigmoid, lambda: [f32(64, scale=4.0)]),
    "softplus": (softplus, lambda: [f32(64, scale=4.0)]),
    "elu_leaky": (elu_leaky, lambda: [f32(64)]),
    "erf_fn": (erf_fn, lambda: [f32(64, scale=2.0)]),
    "expm1_log1p": (expm1_log1p, lambda: [f32(64)]),
    "atan2_fn": (atan2_fn, lambda: [f32(64), f32(64)]),
    "cbrt_fn": (cbrt_fn, lambda: [f32(64, scale=10.0)]),
    "isfinite_fn": (isfinite_fn, lambda: [f32(16)]),
    "popcount_clz": (popcount_clz, lambda: [i32(64, lo=-(1 << 31), hi=(1 << 31) - 1)]),
    "sort_fn": (sort_fn, lambda: [f32(4, 9)]),
    "topk": (topk, lambda: [f32(3, 10)]),
    "gather_take": (gather_take, lambda: [f32(10, 4), i32(6, lo=0, hi=10)]),
    "embedding": (embedding, lambda: [f32(20, 8), i32(3, 4, lo=0, hi=20)]),
    "scatter_add": (scatter_add, lambda: [f32(10, 3), i32(5, lo=0, hi=10), f32(5, 3)]),
    "mse_loss": (mse_loss, lambda: [f32(16, 4), f32(16, 4)]),
    "cross_entropy": (cross_entropy, lambda: [f32(8, 10), i32(8, lo=0, hi=10)]),
    "l2_normalize": (l2_normalize, lambda: [f32(4, 16)]),
    "residual_block": (residual_block, lambda: [f32(4, 16), f32(16, 32), f32(32, 16), f32(16)]),
    "swiglu": (swiglu, lambda: [f32(4, 16), f32(16, 24), f32(24, 16), f32(16, 24)]),
    "rope": (rope, lambda: [f32(8, 16), f32(8, 8), f32(8, 8)]),
    "transpose_reshape": (transpose_reshape, lambda: [f32(12, 8)]),
    "broadcast_ops": (broadcast_ops, lambda: [f32(3, 4), f32(5, 4)]),
    "minmax_reduce": (minmax_reduce, lambda: [f32(6, 7)]),
    "int_ops": (int_ops, lambda: [i32(32), i32(32)]),
    "bool_logic": (bool_logic, lambda: [f32(16), f32(16)]),
    "dynamic_slice_fn": (dynamic_slice_fn, lambda: [f32(6, 4), np.int32(3)]),
    "dynamic_update_fn": (dynamic_update_fn, lambda: [f32(6, 5), f32(2, 3), np.int32(2)]),
    "iota_mask": (iota_mask, lambda: [f32(3, 8)]),
    "fori_loop_sum": (fori_loop_sum, lambda: [f32(8)]),
    "cond_fn": (cond_fn, lambda: [f32(8)]),
    "batchnorm_inference": (batchnorm_inference, lambda: [f32(4, 8), f32(8), np.abs(f32(8)), f32(8), f32(8)]),
    "sum_large": (sum_large, lambda: [f32(300, 5)]),
    "var_mean": (var_mean, lambda: [f32(40, 6)]),
    "power_abs": (power_abs, lambda: [f32(32)]),
    "square_sqrt": (square_sqrt, lambda: [f32(32)]),
    "reduce_precision_fn": (reduce_precision_fn, lambda: [f32(64, scale=1000.0)]),
    "rng_uniform": (rng_uniform, lambda: [np.array([0, 42], dtype=np.uint32)]),
    "max_pool_grad": (max_pool_grad, lambda: [f32(1, 5, 5, 3)]),
    "rng_bits": (rng_bits, lambda: [np.array([0, 42, 7, 9], dtype=np.uint32)]),
}


def _save(d: Path, fn: Callable[..., Any], args: list[np.ndarray]) -> None:
    jitted = jax.jit(fn)
    lowered = jitted.lower(*args)
    compiled = lowered.compile()
    outs = jax.tree_util.tree_leaves(compiled(*args))
    d.mkdir(parents=True, exist_ok=True)
    here = str(Path(__file__).resolve().parents[1]) + "/"   # file names in the dumps: repo-relative
    (d / "pre.hlo").write_text(lowered.as_text(dialect="hlo").replace(here, ""))
    (d / "opt.hlo").write_text(compiled.as_text().replace(here, ""))
    # accv's own writer (bf16 as its raw 2-byte bits, read back by the parameter's declared type)
    for i, a in enumerate(args):
        save_output(d / f"in{i}.npy", np.asarray(a))
    for i, o in enumerate(outs):
        save_output(d / f"out{i}.npy", np.asarray(o))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated function names (default: all)")
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    out = Path(a.out)
    names = [n for n in a.only.split(",") if n] or list(CASES)
    if not a.only and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    import jaxlib
    (out / "VERSIONS.json").write_text(json.dumps(
        {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "numpy": np.__version__,
         "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""), "backend": jax.default_backend(),
         "functions": len(CASES)}, indent=2) + "\n")
    global _rng
    for name in names:
        fn, make = CASES[name]
        _rng = np.random.default_rng(zlib.crc32(name.encode()))   # inputs do not depend on --only
        _save(out / name, fn, make())
        print(name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
