"""Random graphs shaped for a tiled target: the ``blocks`` generator (qkv).

QKV computes only whole 64 x 64 bf16 blocks: a gemm of a [64m, 64] row block by a 64 x 64
matrix, a row softmax (``exp``, ``reduce``-add, ``broadcast``, ``divide``) of a gemm's result, and
square transposes on the way in and out of HBM. NNSmith's and :mod:`semantics.gen`'s graphs have
small random shapes (dimensions up to 24, resp. 5), so none of theirs can run on QKV: a campaign
over them measured 36 of 40 cases ``unsupported`` and the other four kernels with constant
outputs and no instruction. This generator composes random chains of those blocks, so QKV's
instructions, its softmax and its data movement are exercised:

- the chain starts from a parameter ``bf16[64m, 64]`` (m = 1, or 2 with probability 0.3);
- each step (up to ``max_nodes - 1``) is one of: a ``dot`` by a new 64 x 64 parameter (read as
  is, or transposed by a ``transpose``, or, less often, by the dot's ``rhs_contracting_dims={1}``,
  a form the compiler has no rewrite for), a row softmax of a dot's result, or a ``transpose`` (of
  a 64 x 64 value);
- the last value is the root.

Deterministic in the seed (numpy PCG64); the HLO text is parsed into a :class:`~semantics.ir.Graph`.
"""

from __future__ import annotations

import numpy as np

from semantics.hlo_parser import parse_hlo
from semantics.ir import Graph

__all__ = ["BLOCK_TARGETS", "blocks_graph"]

#: targets this generator draws for
BLOCK_TARGETS: tuple[str, ...] = ("qkv",)

_B = 64
#: the steps and their probabilities (softmax only of a dot's result, transpose only of 64 x 64)
_STEPS, _P_STEPS = ("dot", "softmax", "transpose"), (0.6, 0.25, 0.15)
#: how a dot reads its 64 x 64 parameter: as is, through a transpose, or by rhs_contracting_dims={1}
_P_DOT = (0.5, 0.45, 0.05)


def blocks_graph(target: str, seed: int, max_nodes: int = 5) -> Graph:
    """A random chain of QKV blocks (module docstring); raises ValueError for another target."""
    if target not in BLOCK_TARGETS:
        raise ValueError(f"blocks: no block shapes for target '{target}' (known: {', '.join(BLOCK_TARGETS)})")
    rng = np.random.default_rng([seed, 7])
    lines: list[str] = []
    params: list[str] = []
    n = 0

    def fresh(base: str) -> str:
        nonlocal n
        n += 1
        return f"{base}.{n}"

    def param(rows: int) -> str:
        name = f"p{len(params)}"
        params.append(f"bf16[{rows},{_B}]")
        lines.append(f"  {name} = bf16[{rows},{_B}] parameter({len(params) - 1})")
        return name

    rows = _B * (2 if rng.random() < 0.3 else 1)
    cur = param(rows)
    after_dot = False
    for _ in range(int(rng.integers(1, max(2, max_nodes)))):
        step = str(rng.choice(_STEPS, p=_P_STEPS))
        if (step == "transpose" and rows != _B) or (step == "softmax" and not after_dot):
            step = "dot"
        t = f"bf16[{rows},{_B}]"
        if step == "dot":
            w = param(_B)
            how = int(rng.choice(3, p=_P_DOT))
            if how == 1:
                wt = fresh("transpose")
                lines.append(f"  {wt} = bf16[{_B},{_B}] transpose({w}), dimensions={{1,0}}")
                w = wt
            nxt = fresh("dot")
            rc = 1 if how == 2 else 0
            lines.append(f"  {nxt} = {t} dot({cur}, {w}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{{rc}}}")
        elif step == "softmax":
            e, z, s, b, nxt = fresh("exp"), fresh("zero"), fresh("sum"), fresh("sum_b"), fresh("probs")
            lines += [f"  {e} = {t} exponential({cur})", f"  {z} = bf16[] constant(0)",
                      f"  {s} = bf16[{rows}] reduce({e}, {z}), dimensions={{1}}, to_apply=add_bf16",
                      f"  {b} = {t} broadcast({s}), dimensions={{0}}", f"  {nxt} = {t} divide({e}, {b})"]
        else:
            nxt = fresh("transpose")
            lines.append(f"  {nxt} = {t} transpose({cur}), dimensions={{1,0}}")
        cur, after_dot = nxt, step == "dot"
    lines[-1] = lines[-1].replace(f"  {cur} =", f"  ROOT {cur} =", 1)
    text = (f"HloModule blocks_{target}_{seed}\n\nadd_bf16 {{\n  x = bf16[] parameter(0)\n  y = bf16[] parameter(1)\n"
            f"  ROOT s = bf16[] add(x, y)\n}}\n\nENTRY main {{\n" + "\n".join(lines) + "\n}\n")
    return parse_hlo(text)
