"""One campaign case: generate a graph, compile it, run every backend, compare with the reference.

:func:`run_case` is what a worker process runs for a :class:`CaseSpec` and returns a
:class:`~fuzz.store.Case` row (it never raises for a bug it finds: a crash is an outcome).
:func:`evaluate_graph` does the compile-run-compare part for a given graph (and, for the
reducer, given inputs); its :class:`Verdict` carries the failure's signature.

Outcomes: ``pass``; ``unsupported`` (the compiler's exit 3, coverage data: the operator and reason);
``degenerate`` (every comparison agreed but the ``scaled`` outputs carry no information: none is
finite or every output is constant); ``mismatch`` (a backend's outputs differ from the reference
interpreter's, or a graph oracle's (XLA) from the reference semantics, which is checked first and
whether or not the target compiles the graph; the first differing element is in the reason); ``compile-crash``; ``backend-crash``;
``gen-error`` (the generator produced nothing for this seed; not a failure). ``timeout`` and
``crash`` (the worker process died) are recorded by the campaign, which outlives the case.
"""

from __future__ import annotations

import functools
import re
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from semantics.compare import compare
from semantics.hlo_printer import print_hlo
from semantics.interp import evaluate
from semantics.ir import Graph
from semantics.types import TensorType

from . import oracles
from .inputs import informative_share, input_sets
from .store import Case

__all__ = ["CaseSpec", "Verdict", "evaluate_graph", "generate_graph", "run_case", "signature", "warm"]

GENERATORS = ("nnsmith", "gen", "blocks")


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


@dataclass
class Verdict:
    """The compile-run-compare result of one graph."""

    outcome: str
    stage: str | None = None
    symptom: str | None = None
    reason: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    cycles: dict[str, int | None] = field(default_factory=dict)
    informative: float | None = None
    coverage: dict[str, Any] = field(default_factory=dict)
    backend: str | None = None          # the failing backend
    input_set: str | None = None        # the failing input set
    inputs: list[np.ndarray] | None = None
    informative_sets: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)   # graph oracles not run, with the reason

    def signature(self, target: str) -> str | None:
        return signature(target, self.outcome, self.stage, self.symptom)


def signature(target: str, outcome: str, stage: str | None, symptom: str | None) -> str | None:
    """The bucket of a failure: target, stage and symptom (which names the first differing operator
    or the crashing place); None for an outcome that is not a failure."""
    from .store import FAILURES

    if outcome not in FAILURES:
        return None
    return f"{target} | {outcome} | {stage or '-'} | {symptom or '-'}"


@functools.cache
def _rules(target: str, proofs: str):  # noqa: ANN202 - IrRules
    from compilers.act.rewrite import IrRules, ProofGate

    return IrRules.for_target(oracles._acc(target), ProofGate(prove_missing=proofs == "prove"))


def warm(targets: tuple[str, ...], backends: tuple[str, ...] = (), rtl_coverage: bool = False) -> dict[str, float]:
    """Prepare in this process, before any case runs, what the cases of ``targets`` need on disk:
    the RTL models the rtl backend runs (built when missing: a build on a fresh machine takes
    minutes, which no case's timeout and no ``run.rtl`` time should pay; ``rtl_coverage``: their
    coverage builds). Loads the target descriptions and asks each backend whether it runs here.
    Imports nothing of the compiler (the campaign's workers must not be forked from a process that
    ran it). Returns the seconds of each RTL model built now."""
    built: dict[str, float] = {}
    for t in targets:
        oracles._acc(t)
        names = [n for n, why in oracles.available_backends(t) if why is None]
        if "rtl" in names and (not backends or "rtl" in backends):
            from rtl_harness.runner import build
            from semantics.errors import AccvError

            try:
                s = build(t, rtl_coverage)
            except AccvError:
                continue        # each rtl run then fails the same way and is recorded as a backend-crash
            if s is not None:
                built[t] = s
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
    raise ValueError(f"unknown generator '{spec.generator}' (known: {', '.join(GENERATORS)})")


def _where(e: BaseException) -> str:
    """The innermost frame of ``e`` inside this project (file:function)."""
    frames = traceback.extract_tb(e.__traceback__)
    root = Path(__file__).resolve().parents[1]
    mine = [f for f in frames if str(root) in f.filename and "/site-packages/" not in f.filename] or frames
    if not mine:
        return "?"
    f = mine[-1]
    return f"{Path(f.filename).name}:{f.name}"


def _coverage(graph: Graph, target: str, program: Any | None) -> dict[str, Any]:
    ops = sorted({f"{i.opcode}:{i.type.dtype.name}" for i in graph.entry.instructions
                  if i.opcode not in ("parameter", "constant") and isinstance(i.type, TensorType)})
    cov: dict[str, Any] = {"ops": ops}
    if program is not None:
        acc = oracles._acc(target)
        cov["instructions"] = dict(Counter(c.name for c in program.instructions))
        alphas = set()
        for c in program.instructions:
            dom = dict(acc.instructions[c.name].alpha_domain) if c.name in acc.instructions else {}
            alphas |= {f"{c.name}.{k}={v}" for k, v in c.attrs if k in dom}
        cov["alpha"] = sorted(alphas)
    return cov


def _output_opcode(graph: Graph, k: int) -> str:
    root = graph.entry.root_instruction
    if root.opcode == "tuple" and k < len(root.operands):
        return graph.entry[root.operands[k]].opcode
    return root.opcode


def evaluate_graph(target: str, graph: Graph, backends: tuple[str, ...] = (), seed: int = 0, proofs: str = "prove",
                   inputs: list[tuple[str, list[np.ndarray]]] | None = None) -> Verdict:
    """Check ``graph`` on the graph oracles among ``backends`` (:func:`fuzz.oracles.split_backends`), then
    compile it for ``target``, run it on the program backends for each input set (default
    :func:`fuzz.inputs.input_sets` of ``seed``) and compare with the reference."""
    programs, graph_oracles = oracles.split_backends(target, backends)
    skipped = {o: why for o in graph_oracles if (why := oracles.graph_oracle_unavailable(o, graph)) is not None}
    timings: dict[str, float] = {}
    if len(skipped) < len(graph_oracles):
        inputs = inputs if inputs is not None else input_sets(graph, seed)
        found = _graph_oracles(graph, [o for o in graph_oracles if o not in skipped], inputs, timings)
        if found is not None:
            found.skipped = skipped
            return found
    v = _compile_and_compare(target, graph, programs, seed, proofs, inputs)
    v.timings.update(timings)
    v.skipped = skipped
    return v


def _graph_oracles(graph: Graph, names: list[str], sets: list[tuple[str, list[np.ndarray]]],
                   timings: dict[str, float]) -> Verdict | None:
    """A mismatch or crash verdict of the first graph oracle that fails, else None (each oracle's
    seconds are added to ``timings`` as ``run.NAME``)."""
    for b in names:
        for set_name, xs in sets:
            t1 = time.perf_counter()
            try:
                chk = oracles.check_xla(graph, xs)
            except Exception as e:  # noqa: BLE001 - XLA rejecting or crashing on a valid graph is a finding
                timings[f"run.{b}"] = timings.get(f"run.{b}", 0.0) + time.perf_counter() - t1
                return Verdict("backend-crash", f"run.{b}", f"{type(e).__name__} at {_where(e)}",
                               f"input set {set_name}: {type(e).__name__}: {e}"[:2000], timings, backend=b,
                               input_set=set_name, inputs=xs)
            timings[f"run.{b}"] = timings.get(f"run.{b}", 0.0) + time.perf_counter() - t1
            if chk.status == "failed":
                m = re.search(r"\(([a-z-]+)\)", chk.detail or "")
                where = chk.result.first or chk.result.first_nan
                op = m.group(1) if m else (_output_opcode(graph, where.output) if where is not None else "?")
                return Verdict("mismatch", f"compare.{b}", f"{b} differs on output of {op}",
                               f"input set {set_name}: {chk.detail or chk.result.message}"[:2000], timings,
                               backend=b, input_set=set_name, inputs=xs)
    return None


def _compile_and_compare(target: str, graph: Graph, names: tuple[str, ...], seed: int, proofs: str,
                         inputs: list[tuple[str, list[np.ndarray]]] | None) -> Verdict:
    from compilers.act import Unsupported, compile_graph

    v = Verdict("pass")
    t0 = time.perf_counter()
    try:
        res = compile_graph(graph, oracles._acc(target), rules=_rules(target, proofs))
    except Unsupported as e:
        v.timings["compile"] = time.perf_counter() - t0
        m = re.search(r"computes (\S+) on (\S+)", e.reason)
        v.coverage = _coverage(graph, target, None)
        v.coverage["unsupported"] = m.group(1) if m else e.reason[:60]
        v.outcome, v.stage, v.reason = "unsupported", "compile", e.reason
        return v
    except Exception as e:  # noqa: BLE001 - a compiler crash is a finding
        v.timings["compile"] = time.perf_counter() - t0
        v.coverage = _coverage(graph, target, None)
        v.outcome, v.stage, v.symptom = "compile-crash", "compile", f"{type(e).__name__} at {_where(e)}"
        v.reason = f"{type(e).__name__}: {e}"[:2000]
        return v
    v.timings["compile"] = time.perf_counter() - t0
    for k, s in res.stats.times.items():
        v.timings[f"compile.{k}"] = s
    program = res.program
    v.coverage = _coverage(graph, target, program)
    sets = inputs if inputs is not None else input_sets(graph, seed)
    for set_name, xs in sets:
        t1 = time.perf_counter()
        ref = evaluate(graph, xs)
        v.timings["reference"] = v.timings.get("reference", 0.0) + time.perf_counter() - t1
        v.informative_sets[set_name] = informative_share(ref)
        if set_name == sets[0][0]:
            v.informative = v.informative_sets[set_name]
        for b in names:
            t1 = time.perf_counter()
            try:
                r = oracles.run_backend(target, b, program, xs)
            except Exception as e:  # noqa: BLE001 - a backend crash is a finding
                v.timings[f"run.{b}"] = v.timings.get(f"run.{b}", 0.0) + time.perf_counter() - t1
                v.outcome, v.stage, v.backend, v.input_set, v.inputs = "backend-crash", f"run.{b}", b, set_name, xs
                v.symptom = f"{type(e).__name__} at {_where(e)}"
                v.reason = f"input set {set_name}: {type(e).__name__}: {e}"[:2000]
                return v
            v.timings[f"run.{b}"] = v.timings.get(f"run.{b}", 0.0) + time.perf_counter() - t1
            if set_name == sets[0][0]:
                v.cycles[b] = r.cycles
            cmp = compare(ref, [np.asarray(o) for o in r.outputs])
            ok = cmp.within_bound and (cmp.nan_diffs == 0 or not oracles.nan_bits_checked(target, b))
            if not ok:
                where = cmp.first or cmp.first_nan
                op = _output_opcode(graph, where.output) if where is not None else "?"
                v.outcome, v.stage, v.backend, v.input_set, v.inputs = "mismatch", f"compare.{b}", b, set_name, xs
                v.symptom = f"{b} differs on output of {op}" if where is not None else f"{b}: {cmp.message[:80]}"
                v.reason = f"input set {set_name}: {cmp.message}"[:2000]
                return v
    if not v.informative:
        v.outcome, v.stage = "degenerate", "inputs"
        v.reason = f"the {sets[0][0]} input set's outputs are all non-finite or constant"
    return v


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
        return Case(spec.target, spec.seed, spec.generator, "gen-error", None, "generate", None,
                    f"{type(e).__name__}: {e}"[:2000], {"gen": time.perf_counter() - t0})
    gen_s = time.perf_counter() - t0
    v = evaluate_graph(spec.target, graph, spec.backends, spec.seed, spec.proofs)
    v.timings = {"gen": gen_s, **v.timings, "total": time.perf_counter() - t0}
    return Case(spec.target, spec.seed, spec.generator, v.outcome, text, v.stage, v.symptom, v.reason,
                {k: round(x, 6) for k, x in v.timings.items()}, v.cycles, v.informative, v.coverage,
                v.signature(spec.target), v.informative_sets, v.skipped)
