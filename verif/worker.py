"""One proof task on a worker process: the (rule, dtype, rank) record, the worker's rule table and
the call that proves one task. Shared by the local process pool (:mod:`verif.run`) and the Dask
cluster (:mod:`verif.cluster`), so neither imports the other's module for it."""

from __future__ import annotations

from dataclasses import dataclass

from rewrite_rules.dsl import Rule

from .prover import ProofResult, ProverBug, prove

__all__ = ["Task"]


@dataclass(frozen=True)
class Task:
    rule: str
    dtype: str
    rank: int


_LIB: dict[str, Rule] = {}


def _init_worker(extra: dict[str, Rule] | None = None) -> None:
    _LIB.update(_library())
    if extra:
        _LIB.update(extra)


def _work(task: Task, timeout: float | None, bound: int, rlimit: int | None = None) -> ProofResult:
    rule = _LIB[task.rule]
    try:
        return prove(rule, task.dtype, task.rank, timeout, bound, rlimit)
    except ProverBug as e:
        return ProofResult(rule.name, task.dtype, task.rank, "error", "", 0.0, detail=f"prover bug: {e}")
    except Exception as e:  # noqa: BLE001 - one broken rule must not lose the other results
        return ProofResult(rule.name, task.dtype, task.rank, "error", "", 0.0,
                           detail=f"{type(e).__name__}: {e}".splitlines()[0])


def _library() -> dict[str, Rule]:
    from rewrite_rules.library import load
    return load()
