"""A graph's verdict on a target: graph oracles, compile, the program checked on its backends.

What belongs here: :func:`evaluate_graph` (what a campaign case, the reducer and a replay run for
one graph), :func:`replay` (a reproducer folder of :mod:`check.reproducer` run again) and
:func:`coverage` (what the graph and its program exercised: operators and dtypes,
instructions, attribute values). The compile is :func:`compilers.compile.compile`; the check is
:func:`check.run.check_program` on the input-set plan of :mod:`check.inputs` (three sets from the
case's seed), every backend of the target available here unless named.

Order: the graph oracles named (``xla``) first, whether or not the target compiles the graph (a
difference there is a finding about our semantics); then the compile (exit 3: ``unsupported``,
anything else raised: ``compile-crash``); then the check (``pass``, ``degenerate``, ``mismatch``,
``backend-crash``).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compilers.targets import load_target
from semantics.hlo_parser import parse_file
from semantics.ir import Graph
from semantics.npyio import load_input
from semantics.types import TensorType

from .inputs import InputSet, given, input_sets
from .oracles import check_xla, graph_oracle_unavailable, split_backends
from .run import check_program, crash_symptom, output_opcode
from .verdict import Verdict

__all__ = ["coverage", "evaluate_graph", "replay"]


def coverage(graph: Graph, target: str, program: Any | None) -> dict[str, Any]:
    """``ops``: the graph's operator:dtype pairs; with a program, ``instructions`` (uses per
    instruction), ``alpha`` (each instruction.attribute=value of its α domain used) and
    ``alpha_class`` (each instruction.attribute:class, :meth:`compilers.isa.InstrDef.alpha_class`); with a
    partitioned one, ``placement`` (:meth:`compilers.partition.program.Split.as_dict`: the shares
    on the accelerator, the bytes handed over, each host operator and why)."""
    ops = sorted({f"{i.opcode}:{i.type.dtype.name}" for i in graph.entry.instructions
                  if i.opcode not in ("parameter", "constant") and isinstance(i.type, TensorType)})
    cov: dict[str, Any] = {"ops": ops}
    if program is not None:
        acc = load_target(target)
        cov["instructions"] = dict(Counter(c.name for c in program.instructions))
        alphas, classes = set(), set()
        for c in program.instructions:
            d = acc.instructions.get(c.name)
            if d is None:
                continue
            env = dict(c.attrs)
            alphas |= {f"{c.name}.{k}={env[k]}" for k in d.alpha if k in env}
            if all(k in env for k in d.alpha):
                classes |= {f"{c.name}.{k}:{d.alpha_class(k, env)}" for k in d.alpha}
        cov["alpha"] = sorted(alphas)
        cov["alpha_class"] = sorted(classes)
        from compilers.partition.program import whole_split

        split = getattr(program, "split", None)
        cov["placement"] = (split if split is not None else whole_split(graph)).as_dict()
    return cov


def evaluate_graph(target: str, graph: Graph, backends: Sequence[str] = (), seed: int = 0, proofs: str = "prove",
                   sets: Sequence[InputSet] | None = None, host: bool = False,
                   withhold: Sequence[str] = ()) -> Verdict:
    """The verdict of ``graph`` on ``target`` (module doc): ``backends`` names program backends and
    graph oracles (none: every available backend, :func:`check.oracles.split_backends`); ``sets``
    replaces the plan's three sets of ``seed`` (a reducer's, a replay's); ``host``: a graph the
    target cannot run whole is partitioned (its accelerator regions checked, ``unsupported`` only
    where nothing can be offloaded); ``withhold``: instructions the compiler may not use
    (:func:`compilers.compile.without`), recorded in the coverage as ``withheld``."""
    programs, graph_oracles = split_backends(target, backends)
    skipped = {o: why for o in graph_oracles if (why := graph_oracle_unavailable(o, graph)) is not None}
    timings: dict[str, float] = {}
    plan: list[InputSet] | None = list(sets) if sets is not None else None
    if len(skipped) < len(graph_oracles):
        plan = plan if plan is not None else input_sets(graph, 3, seed)
        found = _graph_oracles(graph, [o for o in graph_oracles if o not in skipped], plan, timings)
        if found is not None:
            found.skipped = skipped
            return found
    v = _compile_and_check(target, graph, programs, seed, proofs, plan, host, tuple(withhold))
    v.timings.update(timings)
    v.skipped = skipped
    return v


def _graph_oracles(graph: Graph, names: list[str], plan: list[InputSet], timings: dict[str, float]) -> Verdict | None:
    """The mismatch or crash verdict of the first graph oracle that fails, else None (each
    oracle's seconds are added to ``timings`` as ``run.NAME``)."""
    import re

    for b in names:
        for s in plan:
            t1 = time.perf_counter()
            try:
                chk = check_xla(graph, s.inputs)
            except Exception as e:  # noqa: BLE001 - XLA rejecting or crashing on a valid graph is a finding
                timings[f"run.{b}"] = timings.get(f"run.{b}", 0.0) + time.perf_counter() - t1
                return Verdict("backend-crash", f"run.{b}", crash_symptom(e), f"{s.label}: {type(e).__name__}: {e}"[:2000],
                               dict(timings), backend=b, input_set=s.name, inputs=s.inputs)
            timings[f"run.{b}"] = timings.get(f"run.{b}", 0.0) + time.perf_counter() - t1
            if chk.status == "failed":
                m = re.search(r"\(([a-z-]+)\)", chk.detail or "")
                where = chk.result.first or chk.result.first_nan
                op = m.group(1) if m else (output_opcode(graph, where.output) if where is not None else "?")
                return Verdict("mismatch", f"compare.{b}", f"{b} differs on output of {op}",
                               f"{s.label}: {chk.detail or chk.result.message}"[:2000], dict(timings),
                               backend=b, input_set=s.name, inputs=s.inputs)
    return None


def _compile_and_check(target: str, graph: Graph, names: tuple[str, ...], seed: int, proofs: str,
                       plan: list[InputSet] | None, host: bool = False, withhold: tuple[str, ...] = ()) -> Verdict:
    from compilers.compile import compile
    from compilers.errors import Unsupported

    t0 = time.perf_counter()
    try:
        res = compile(graph, target, proofs=proofs, host=host, withhold=withhold)
    except Unsupported as e:
        v = Verdict("unsupported", "compile", reason=e.reason, timings={"compile": time.perf_counter() - t0})
        v.coverage = coverage(graph, target, None)
        v.coverage["unsupported"] = e.op or e.reason[:60]
        return v
    except Exception as e:  # noqa: BLE001 - a compiler crash is a finding
        v = Verdict("compile-crash", "compile", crash_symptom(e), f"{type(e).__name__}: {e}"[:2000],
                    {"compile": time.perf_counter() - t0})
        v.coverage = coverage(graph, target, None)
        return v
    compile_s = time.perf_counter() - t0
    v = check_program(graph, res.acc, res.program, 3, seed, backend=names, sets=plan)
    v.timings = {"compile": compile_s, **{f"compile.{k}": s for k, s in res.stats.times.items()}, **v.timings}
    v.coverage = coverage(graph, target, res.program)
    if withhold:
        v.coverage["withheld"] = list(withhold)
    return v


def replay(folder: str | Path, backends: Sequence[str] = ()) -> Verdict:
    """Run a reproducer folder (:mod:`check.reproducer`'s format) again: its kernel compiled for its
    target and checked on its backend (or ``backends``) with its input set."""
    folder = Path(folder)
    meta = json.loads((folder / "replay.json").read_text())
    g = parse_file(folder / "kernel.hlo")
    sets = None
    if meta.get("inputs") is not None:
        xs = [load_input(folder / f"input{k}.npy", t, k) for k, t in enumerate(g.param_types)]  # type: ignore[arg-type]
        sets = given([xs], "replay")
    names = tuple(backends) or ((meta["backend"],) if meta.get("backend") else ())
    return evaluate_graph(meta["target"], g, names, int(meta["seed"]), sets=sets, host=bool(meta.get("host", False)),
                          withhold=tuple(meta.get("withhold", ())))
