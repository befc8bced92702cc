"""Proofs on a Dask distributed cluster (``accv prove --scheduler ADDRESS``).

Each (rule, dtype, rank) task is one Dask task running :func:`verif.prover.prove` on a worker; a
library rule travels by name (the worker loads the library itself), any other rule (a user's rule
file or ``--rule`` text) travels as the pickled :class:`~rewrite_rules.dsl.Rule`. Workers must
have this package importable (the same version: the verdicts are cached under its prover version)
and one thread each (z3's Python API shares one context per process). Results come back as they
finish, in no particular order, exactly as from local workers.

Needs the ``dask`` extra (``pip install 'accv[dask]'``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rewrite_rules.dsl import Rule
from semantics.errors import InputError

from .results import ProofResult

__all__ = ["run_on_cluster"]


def _task(name: str, rule: Rule | None, dtype: str, rank: int, timeout: float | None, bound: int,
          rlimit: int | None = None) -> ProofResult:
    """On a worker: prove one instantiation (the library rule ``name`` when ``rule`` is None)."""
    from .worker import _LIB, Task, _init_worker, _work

    if rule is None and name not in _LIB:
        _init_worker()
    if rule is not None:
        _LIB[name] = rule
    return _work(Task(name, dtype, rank), timeout, bound, rlimit)


def run_on_cluster(address: str, tasks: list[Any], extra: dict[str, Rule], timeout: float | None, bound: int,
                   connect_timeout: float = 30.0, rlimit: int | None = None) -> Iterator[ProofResult]:
    """Prove ``tasks`` on the cluster whose scheduler is at ``address``; yields results as they finish.

    Raises:
        InputError: dask is not installed, or the scheduler cannot be reached.
    """
    try:
        from distributed import Client, as_completed
    except ImportError as e:
        raise InputError("--scheduler needs dask[distributed] (pip install 'accv[dask]')") from e
    try:
        client = Client(address, timeout=connect_timeout)
    except (OSError, TimeoutError) as e:
        raise InputError(f"--scheduler {address}: cannot connect ({e})") from e
    try:
        futs = [client.submit(_task, t.rule, extra.get(t.rule), t.dtype, t.rank, timeout, bound, rlimit,
                              pure=False)
                for t in tasks]
        for f in as_completed(futs):
            yield f.result()
    finally:
        client.close()
