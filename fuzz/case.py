"""One campaign case: generate a graph, then its verdict on the target (:mod:`check.evaluate`).

:func:`run_case` is what a worker process runs for a :class:`CaseSpec` and returns a
:class:`~fuzz.store.Case` row (it never raises for a bug it finds: a crash is an outcome). The
compile, the runs on every backend and the comparisons are :func:`check.evaluate.evaluate_graph`,
the same check ``accv check`` and the pytest plugin run; the outcomes are those of
:mod:`check.verdict`, plus ``gen-error`` here (the generator produced nothing for this seed; not
a failure). ``timeout`` and ``crash`` (the worker process died) are recorded by the campaign,
which outlives the case.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from check.verdict import Verdict
from semantics.hlo_printer import print_hlo
from semantics.ir import Graph

from .store import Case

__all__ = ["GENERATORS", "CaseSpec", "generate_graph", "run_case", "warm"]

GENERATORS = ("nnsmith", "gen", "blocks", "layers", "layers_os", "layers_bias")


@dataclass(frozen=True)
class CaseSpec:
    """What a worker needs to run one case (picklable)."""

    target: str
    seed: int
    generator: str = "nnsmith"
    backends: tuple[str, ...] = ()       # () = every available backend of the target
    max_nodes: int = 5
    proofs: str = "prove"                # "prove": prove a missing rule instantiation at first use (as accv compile); "cached": only proven ones
    rtl_coverage: str | None = None      # collect RTL coverage into this folder (fuzz/rtl_coverage.py)
    host: bool = False                   # partition a graph the target cannot run whole (compilers.partition)
    withhold: tuple[str, ...] = ()       # instructions the compiler may not use (fuzz.opsets.GENERATOR_WITHHOLD)


def warm(targets: tuple[str, ...], backends: tuple[str, ...] = (), rtl_coverage: bool = False,
         say: Callable[[str], None] | None = None) -> dict[str, float]:
    """Prepare in this process, before any case runs, what the cases of ``targets`` need on disk:
    the RTL models the rtl backend runs (built when missing: a build on a fresh machine takes
    minutes, which no case's timeout and no ``run.rtl`` time should pay; ``rtl_coverage``: their
    coverage builds). Loads the target descriptions and asks each backend whether it runs here.
    Imports nothing of the compiler (the campaign's workers must not be forked from a process that
    ran it). ``say`` gets a line before each RTL model is looked up and after one is built.
    Returns the seconds of each RTL model built now."""
    built: dict[str, float] = {}
    from check.backends import available_backends
    from compilers.targets import load_target

    for t in targets:
        load_target(t)
        names = [n for n, why in available_backends(t) if why is None]
        if "rtl" in names and (not backends or "rtl" in backends):
            from rtl_harness.runner import build
            from semantics.errors import AccvError

            if say:
                say(f"the {t} RTL model{' (coverage build)' if rtl_coverage else ''}: from build/rtl, or built now "
                    "(Verilator, a few minutes on first use; not on the campaign's clock)")
            try:
                s = build(t, rtl_coverage)
            except AccvError:
                continue        # each rtl run then fails the same way and is recorded as a backend-crash
            if s is not None:
                built[t] = s
                if say:
                    say(f"built the {t} RTL model in {s:.0f} s")
    return built


def generate_graph(spec: CaseSpec) -> Graph:
    """The graph of ``spec`` (raises GenerationError / ValueError when the generator gives none)."""
    if spec.generator == "nnsmith":
        from .nnsmith_gen import generate

        return generate(spec.target, spec.seed, spec.max_nodes)
    if spec.generator == "gen":
        from semantics.gen import random_graph

        from .opsets import OPSETS

        n = max(k for t, k in OPSETS if t == spec.target and k <= 2)
        o = OPSETS[(spec.target, n)]
        return random_graph(spec.seed, ops=o.ops.split(","), dtypes=o.dtypes.split(","), max_ops=spec.max_nodes - 1)
    if spec.generator == "blocks":
        from .blocks import blocks_graph

        return blocks_graph(spec.target, spec.seed, spec.max_nodes)
    if spec.generator in ("layers", "layers_os", "layers_bias"):
        from .layers_gen import layers_graph

        return layers_graph(spec.target, spec.seed, spec.max_nodes, block16=spec.generator != "layers",
                            narrow=spec.generator in ("layers_os", "layers_bias"), ones=spec.generator == "layers_os")
    raise ValueError(f"unknown generator '{spec.generator}' (known: {', '.join(GENERATORS)})")


def run_case(spec: CaseSpec) -> Case:
    """Run one case end to end (never raises for what it finds). With ``spec.rtl_coverage`` the rtl
    backend runs the coverage builds and this process's tally is written to that folder after the case."""
    if spec.rtl_coverage is None:
        return _run_case(spec)
    from rtl_harness import coverage

    coverage.start(spec.rtl_coverage)
    try:
        return _run_case(spec)
    finally:
        coverage.flush()


def _run_case(spec: CaseSpec) -> Case:
    t0 = time.perf_counter()
    try:
        graph = generate_graph(spec)
        text = print_hlo(graph)
    except Exception as e:  # noqa: BLE001 - a generator that gives nothing for a seed is recorded
        return Case(spec.target, spec.seed, spec.generator,
                    Verdict("gen-error", "generate", reason=f"{type(e).__name__}: {e}"[:2000],
                            timings={"gen": time.perf_counter() - t0}))
    from check.evaluate import evaluate_graph

    gen_s = time.perf_counter() - t0
    v = evaluate_graph(spec.target, graph, spec.backends, spec.seed, spec.proofs, host=spec.host,
                       withhold=spec.withhold)
    v.timings = {k: round(x, 6) for k, x in {"gen": gen_s, **v.timings, "total": time.perf_counter() - t0}.items()}
    return Case(spec.target, spec.seed, spec.generator, v, text)
