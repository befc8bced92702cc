"""The check: compiled programs run on backends and judged against the reference, one way.

It sits between ``rtl_harness`` (and ``compilers``) below and ``fuzz`` above; ``accv check``, the
pytest plugin and a campaign case all go through it, so the same program and outputs get the
same verdict whichever of them ran it.

- :mod:`.backends`: the backend registry (which backend runs a target's programs, what it
  observes, why one cannot run here).
- :mod:`.policy`: the one comparison rule (the program's contract, NaN bits where both the
  contract states them and the backend observes them) and :func:`~.policy.judge`.
- :mod:`.inputs`: the one input-set plan.
- :mod:`.run`: :func:`~.run.check_program`, the one check routine.
- :mod:`.verdict`: the :class:`~.verdict.Verdict`, the outcome vocabulary, the bucket signature.
- :mod:`.evaluate`: a graph's verdict on a target (graph oracles, compile, check).
- :mod:`.oracles`: the graph oracles (XLA:CPU against the reference semantics).
- :mod:`.reproducer`: the one reproducer format and its replay.
- :mod:`.cost`: backends as the compiler's cost models (``--cost rtl``).
- :mod:`.header`, :mod:`.plugin`: the ``// accv:`` directives of a kernel file and the pytest
  plugin that runs a folder of kernels as a regression suite (docs/regression.md).

The names below are importable from the package itself (loaded on first use).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["REGISTRY", "InputSet", "Judgement", "Policy", "SetReport", "Verdict", "backend_cost", "check_program",
           "compare_images", "evaluate_graph", "get_backend", "input_sets", "judge", "replay", "rtl_cost",
           "signature", "unavailable", "write_reproducer"]

_HOME = {"REGISTRY": "backends", "get_backend": "backends", "unavailable": "backends", "Policy": "policy",
         "Judgement": "policy", "judge": "policy", "compare_images": "policy", "InputSet": "inputs",
         "input_sets": "inputs", "check_program": "run", "Verdict": "verdict", "SetReport": "verdict",
         "signature": "verdict", "evaluate_graph": "evaluate", "write_reproducer": "reproducer",
         "replay": "evaluate", "backend_cost": "cost", "rtl_cost": "cost"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'check' has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)
