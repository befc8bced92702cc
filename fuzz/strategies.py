"""Hypothesis strategies over the project's own random-graph generator (:mod:`semantics.gen`), for
operators and dtypes NNSmith lacks::

    from hypothesis import given
    from fuzz.strategies import graphs

    @given(graphs(target="gemmini"))
    def test_compiles_or_exit3(g): ...

A drawn graph is ``random_graph(seed, ops=..., dtypes=..., max_ops=...)`` for a drawn seed, so
hypothesis shrinks towards small seeds and few operators and a failure replays from its seed.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from semantics.gen import random_graph
from semantics.ir import Graph

from .opsets import OPSETS

__all__ = ["graphs"]


def graphs(target: str | None = None, *, ops: Sequence[str] | None = None, dtypes: Sequence[str] | None = None,
           max_ops: int = 6, opset: int = 2) -> st.SearchStrategy[Graph]:
    """Random valid graphs: with ``target``, restricted to its operator list number ``opset`` of
    :data:`fuzz.opsets.OPSETS` (``ops`` / ``dtypes`` override it); without, every XLA operator."""
    if target is not None:
        if (target, opset) not in OPSETS:
            raise ValueError(f"no operator list ({target}, {opset}) in fuzz.opsets.OPSETS")
        o = OPSETS[(target, opset)]
        ops = ops if ops is not None else o.ops.split(",")
        dtypes = dtypes if dtypes is not None else o.dtypes.split(",")
    ops_l = list(ops) if ops is not None else None
    dts_l = list(dtypes) if dtypes is not None else None
    return st.builds(lambda seed, n: random_graph(seed, ops=ops_l, dtypes=dts_l, max_ops=n),
                     st.integers(0, 2**32 - 1), st.integers(1, max(1, max_ops)))
