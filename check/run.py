"""The one check routine: a compiled program run on backends for input sets, each run judged.

What belongs here: :func:`check_program`. ``accv check`` / ``accv compile --check`` (one
backend), the pytest plugin (one backend per item), a campaign case and the reducer (every
available backend; :mod:`check.evaluate`) all run it and read the same :class:`~check.verdict.Verdict`.

For each input set (the given ones first, then the plan of :mod:`check.inputs`) the reference
interpreter's outputs are computed once; each backend runs the program on the set and its outputs
are judged by :func:`check.policy.judge` under the program's contract and what the backend
observes. The first run that differs ends the check (``mismatch``, the first differing element in
the reason), as does a backend that raises on the program (``backend-crash``: a compiled program
that cannot run is a finding). With ``repro_dir``, a failure writes a reproducer folder there
(:mod:`check.reproducer`). Every run agreeing gives ``pass``, or ``degenerate`` when no input set's
reference outputs carried information (all NaN/inf, or constant).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from compilers.backend import Backend
from compilers.isa import Accelerator
from compilers.partition.program import Partitioned
from compilers.partition.run import run_program
from compilers.program import Program
from semantics.informative import describe
from semantics.interp import evaluate
from semantics.ir import Graph

from .backends import get_backend
from .inputs import InputSet, given, input_sets
from .policy import Policy, judge, nan_bits_checked
from .verdict import SetReport, Verdict

__all__ = ["check_program", "crash_symptom", "output_opcode"]


def crash_symptom(e: BaseException) -> str:
    """A crash's symptom for its bucket: the exception type and the innermost frame of this
    project that raised it (``file:function``)."""
    frames = traceback.extract_tb(e.__traceback__)
    root = str(Path(__file__).resolve().parents[1])
    mine = [f for f in frames if root in f.filename and "/site-packages/" not in f.filename] or frames
    where = f"{Path(mine[-1].filename).name}:{mine[-1].name}" if mine else "?"
    return f"{type(e).__name__} at {where}"


def output_opcode(graph: Graph, k: int) -> str:
    """The operator that computes output ``k`` of ``graph`` (the root's, or a tuple root's k-th)."""
    root = graph.entry.root_instruction
    if root.opcode == "tuple" and k < len(root.operands):
        return graph.entry[root.operands[k]].opcode
    return root.opcode


def _backends(acc: Accelerator, backend: str | Backend | Sequence[str | Backend]) -> list[Backend]:
    items = [backend] if isinstance(backend, str) or not isinstance(backend, Sequence) else list(backend)
    return [get_backend(acc, b) if isinstance(b, str) else b for b in items]


def check_program(graph: Graph, acc: Accelerator, program: Program | Partitioned, n: int = 3, seed: int = 0, *,
                  backend: str | Backend | Sequence[str | Backend] = "sim",
                  inputs: Sequence[Sequence[np.ndarray]] = (), sets: Sequence[InputSet] | None = None,
                  repro_dir: Path | None = None) -> Verdict:
    """Check ``program`` (compiled from ``graph`` for ``acc``) on ``backend`` (a name, a backend,
    or several: each set runs on each in turn): the ``inputs`` given first, then ``sets`` (default
    the plan's ``n`` sets from ``seed``). Returns the verdict (module doc); ``cycles`` holds each
    backend's cycles on the first set, ``timings`` the seconds of the reference and of each
    backend."""
    runners = _backends(acc, backend)
    plan = given(inputs) + list(sets if sets is not None else input_sets(graph, n, seed))
    v = Verdict(contract=Policy.of(program, runners[0]).describe() if runners else program.contract.what)
    for i, s in enumerate(plan):
        t0 = time.perf_counter()
        if s.outputs is not None:
            ref = s.outputs
        else:
            with np.errstate(all="ignore"):
                ref = evaluate(graph, s.inputs)
        v.timings["reference"] = v.timings.get("reference", 0.0) + time.perf_counter() - t0
        share, text = describe(ref)
        report = SetReport(s.kind, s.seed, share, text)
        v.sets.append(report)
        v.informative_sets[s.name] = share
        if i == 0:
            v.informative = share
        for b in runners:
            t1 = time.perf_counter()
            try:
                got = run_program(b, program, s.inputs)
            except Exception as e:  # noqa: BLE001 - a program that breaks a backend is a finding
                v.timings[f"run.{b.name}"] = v.timings.get(f"run.{b.name}", 0.0) + time.perf_counter() - t1
                _fail(v, "backend-crash", f"run.{b.name}", crash_symptom(e),
                      f"{s.label}: {type(e).__name__}: {e}", b.name, s)
                _write(v, repro_dir, acc, graph, seed, program)
                return v
            v.timings[f"run.{b.name}"] = v.timings.get(f"run.{b.name}", 0.0) + time.perf_counter() - t1
            if got.steps:
                host_s = sum(r.seconds for r in got.steps if r.kind == "host")
                v.timings[f"host.{b.name}"] = v.timings.get(f"host.{b.name}", 0.0) + host_s
            if i == 0:
                v.cycles[b.name] = got.cycles
                if got.steps:
                    v.steps[b.name] = got.steps
            policy = Policy.of(program, b)
            j = judge(ref, got.outputs, s.inputs, policy)
            report.text += j.note
            if j.ok and (bad := corrupted(got.outputs, s.seed)) is not None and _accepts(ref, bad, s.inputs, policy):
                # the canary: the same comparison must reject the run's output with one bit of one
                # element flipped; accepting it means the oracle itself is broken
                _fail(v, "mismatch", f"canary.{b.name}", f"{b.name}: the comparison accepted a corrupted output",
                      f"{s.label}: the comparison accepted {b.name}'s output with one element's second-highest "
                      "bit flipped (check.run.corrupted): the oracle cannot see a difference there", b.name, s)
                return v
            if j.ok and (odd := other_nan(got.outputs)) is not None:
                # the NaN canary: another NaN payload where the run has a NaN is accepted exactly when
                # this backend is not held to NaN bits (check.policy.nan_bits_checked, asked of the
                # backend itself, not of the policy the comparison used)
                strict = nan_bits_checked(program.contract, bool(getattr(b, "nan_bits", True)))
                if _accepts(ref, odd, s.inputs, policy) == strict:
                    _fail(v, "mismatch", f"canary.{b.name}", f"{b.name}: the comparison's NaN rule is not the backend's",
                          f"{s.label}: a NaN with another payload in {b.name}'s output was "
                          f"{'accepted' if strict else 'rejected'}, but {b.name} is {'' if strict else 'not '}held to "
                          "NaN bits (check.policy.nan_bits_checked)", b.name, s)
                    return v
            if not j.ok:
                op = output_opcode(graph, j.first.output) if j.first is not None else None
                symptom = f"{b.name} differs on output of {op}" if op else f"{b.name}: {j.why[:80]}"
                _fail(v, "mismatch", f"compare.{b.name}", symptom, f"{s.label}: {j.why}", b.name, s)
                v.expected, v.actual = j.expected, [np.asarray(o) for o in got.outputs]
                _write(v, repro_dir, acc, graph, seed, program)
                return v
    if all(r.share == 0 for r in v.sets):
        v.outcome, v.stage = "degenerate", "inputs"
        v.reason = "no input set's reference outputs carry information (all NaN/inf or constant)"
    return v


def _accepts(ref: Sequence[np.ndarray], bad: Sequence[np.ndarray], inputs: Sequence[np.ndarray], policy: Policy) -> bool:
    with np.errstate(invalid="ignore", over="ignore"):
        return judge(ref, bad, inputs, policy).ok


def corrupted(outputs: Sequence[np.ndarray], seed: int) -> list[np.ndarray] | None:
    """``outputs`` with one element's second-highest bit flipped (the element at ``seed`` modulo
    the size of the first non-empty output): a value no contract accepts for the original one (an
    integer moves by a quarter of its range, a float's exponent's top bit flips, so 1.0 becomes
    inf and a NaN a number; a predicate is negated). None when every output is empty."""
    outs = [np.array(o, copy=True) for o in outputs]
    for o in outs:
        if o.size == 0:
            continue
        flat = o.reshape(-1).view(f"u{o.dtype.itemsize}")
        i = seed % flat.size
        flat[i] ^= flat.dtype.type(1 if o.dtype == np.bool_ else 1 << (8 * o.dtype.itemsize - 2))
        return outs
    return None


def other_nan(outputs: Sequence[np.ndarray]) -> list[np.ndarray] | None:
    """``outputs`` with the first NaN of a float output given another payload (still a NaN: the
    mantissa's lowest bit flipped, or the next one where that would leave no mantissa bit); None
    where no output holds a NaN."""
    outs = [np.array(o, copy=True) for o in outputs]
    for o in outs:
        if o.size == 0 or o.dtype.kind not in "fV" or o.dtype.itemsize not in (2, 4, 8):
            continue
        with np.errstate(invalid="ignore"):
            nan = np.isnan(o.reshape(-1).astype(np.float64))
        if not nan.any():
            continue
        i = int(np.flatnonzero(nan)[0])
        flat = o.reshape(-1).view(f"u{o.dtype.itemsize}")
        mant = int(flat[i]) & ((1 << {2: 7, 4: 23, 8: 52}[o.dtype.itemsize]) - 1)
        flat[i] ^= flat.dtype.type(1 if mant != 1 else 2)
        return outs
    return None


def _write(v: Verdict, repro_dir: Path | None, acc: Accelerator, graph: Graph, seed: int,
           program: Program | Partitioned) -> None:
    if repro_dir is not None:
        from compilers.targets import load_target

        from .reproducer import write_reproducer

        v.reproducer = Path(repro_dir)
        withheld = sorted(set(load_target(acc.name).instructions) - set(acc.instructions))
        write_reproducer(v.reproducer, acc.name, graph, v, seed, program=program, withhold=withheld)


def _fail(v: Verdict, outcome: str, stage: str, symptom: str, reason: str, backend: str, s: InputSet) -> None:
    v.outcome, v.stage, v.symptom, v.reason = outcome, stage, symptom, reason[:2000]
    v.backend, v.input_set, v.inputs = backend, s.name, s.inputs
