"""The campaign runner: cases in worker processes with a per-case timeout, rows into the store.

:func:`run_campaign` takes a :class:`CampaignArgs`, opens (or resumes) its campaign in the store
and runs the cases without a row, in seed order: case ``i`` of a target has seed ``seed + i`` and
generator ``generators[i % len(generators)]``, so the same arguments give the same cases.

Executors:

- ``workers == 0``: in this process, no timeout (tests, debugging, monkeypatched bugs).
- ``workers >= 1``: a pebble ``ProcessPool``; a case that runs past ``timeout`` is killed
  (outcome ``timeout``), a worker that dies (``os._exit``, a signal) is recorded as ``crash`` with
  its exit code or signal; the campaign goes on. Workers start from multiprocessing's fork server
  (:func:`process_pool`), not as forks of this process: a process forked after its parent ran the
  compiler's egglog e-graphs hangs in its own first e-graph, and the process that starts a campaign
  may have compiled before (a test session, a second campaign, triage).
- ``scheduler``: a Dask distributed cluster; each task runs its case in a ``python -m fuzz.campaign``
  subprocess inside the Dask worker, killed at the timeout (a running Dask task cannot be
  interrupted, and its daemonic worker may not start a pool); the task returns the row and only
  this process writes the database.

Rows are written as cases finish; a campaign stopped by ``--minutes`` or killed resumes from the
cases without a row when started again with the same arguments on the same database.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path

from check.verdict import FAILURES, Verdict

from . import rtl_coverage
from .case import CaseSpec, run_case, warm
from .store import Case, Store

__all__ = ["CampaignArgs", "CampaignResult", "run_campaign", "case_in_pool", "case_in_subprocess", "died", "process_pool"]


@dataclass(frozen=True)
class CampaignArgs:
    targets: tuple[str, ...] = ("gemmini", "qkv", "amx")
    backends: tuple[str, ...] = ()          # () = every available backend per target
    cases: int | None = None                # cases per target (None: until minutes run out)
    minutes: float | None = None
    seed: int = 0
    generators: tuple[str, ...] = ()       # () = fuzz.opsets.CAMPAIGN_GENERATORS per target
    max_nodes: int = 5
    timeout: float = 120.0
    proofs: str = "prove"
    rtl_coverage: bool = False              # collect Verilator line/toggle coverage of the rtl backend's runs
    host: bool = True                       # partition a graph the target cannot run whole (False: --no-host)

    def identity(self) -> dict:
        """What makes two runs the same campaign (the resume key): everything but the wall time
        (``rtl_coverage`` only when on, so campaigns without it keep the key they had before it existed)."""
        d = asdict(self)
        if not d["rtl_coverage"]:
            del d["rtl_coverage"]
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}

    def spec(self, target: str, i: int, coverage_folder: str | None = None) -> CaseSpec:
        be = tuple(b for b in self.backends if _offers(target, b)) if self.backends else ()
        from .opsets import CAMPAIGN_GENERATORS, GENERATOR_WITHHOLD

        gens = self.generators or CAMPAIGN_GENERATORS.get(target, ("nnsmith", "gen"))
        gen = gens[i % len(gens)]
        return CaseSpec(target, self.seed + i, gen, be, self.max_nodes, self.proofs, coverage_folder, self.host,
                        GENERATOR_WITHHOLD.get((target, gen), ()))


def _offers(target: str, backend: str) -> bool:
    from check.backends import backends_for
    from check.oracles import GRAPH_ORACLES

    return backend in backends_for(target) or backend in GRAPH_ORACLES


@dataclass
class CampaignResult:
    campaign: int
    resumed: bool
    counts: dict[str, int] = field(default_factory=dict)
    new_cases: int = 0
    seconds: float = 0.0
    rtl_coverage: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)  # design -> kind -> (covered, total)
    rtl_builds: dict[str, float] = field(default_factory=dict)    # target -> seconds of an RTL model built for the run


def _signal_name(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def process_pool(workers: int) -> object:
    """A pebble ``ProcessPool`` of ``workers`` processes started by multiprocessing's fork server
    (a clean process that has imported nothing of the compiler; module docstring)."""
    import multiprocessing

    from pebble import ProcessPool

    return ProcessPool(max_workers=workers, context=multiprocessing.get_context("forkserver"))


def case_in_pool(spec: CaseSpec, timeout: float, pool: object | None = None) -> Case:
    """Run ``spec`` in a pebble process (``pool``, or a fresh one-worker pool) with ``timeout``;
    a timeout or a dead worker becomes the case's outcome."""
    from concurrent.futures import TimeoutError as FutTimeout

    from pebble import ProcessExpired

    own = pool is None
    pool = pool or process_pool(1)
    try:
        fut = pool.schedule(run_case, args=(spec,), timeout=timeout)  # type: ignore[attr-defined]
        return _collect(spec, fut, timeout, FutTimeout, ProcessExpired)
    finally:
        if own:
            pool.close()  # type: ignore[attr-defined]
            pool.join()  # type: ignore[attr-defined]


def died(spec: CaseSpec, outcome: str, symptom: str, reason: str, seconds: float) -> Case:
    """The row of a case whose worker could not report it: ``timeout`` (killed) or ``crash``
    (the process died); its bucket is :func:`check.verdict.signature`'s like every other. Its graph
    is generated again here from the seed (the generators are deterministic in it), so the row
    keeps it and the bucket gets a reproducer like any other."""
    from semantics.hlo_printer import print_hlo

    from .case import generate_graph

    try:
        text: str | None = print_hlo(generate_graph(spec))
    except Exception:  # noqa: BLE001 - a generator that gives nothing now leaves the row without a graph
        text = None
    return Case(spec.target, spec.seed, spec.generator, Verdict(outcome, None, symptom, reason, {"total": seconds}),
                text)


def _collect(spec: CaseSpec, fut: Future, timeout: float, FutTimeout: type, ProcessExpired: type) -> Case:
    t0 = time.perf_counter()
    try:
        return fut.result()
    except FutTimeout:
        return died(spec, "timeout", "timeout", f"the case ran past {timeout:g} s and was killed", timeout)
    except ProcessExpired as e:
        why = _signal_name(e.exitcode)
        return died(spec, "crash", why, f"the worker process {why}", time.perf_counter() - t0)
    except Exception as e:  # noqa: BLE001 - anything else from the pool is a crash of the case
        return died(spec, "crash", type(e).__name__, str(e)[:2000], time.perf_counter() - t0)


def _todo(args: CampaignArgs, done: set[tuple[str, int]], coverage_folder: str | None = None) -> Iterator[CaseSpec]:
    """Pending cases, round-robin over the targets, in seed order."""
    i = 0
    while args.cases is None or i < args.cases:
        for t in args.targets:
            if (t, args.seed + i) not in done:
                yield args.spec(t, i, coverage_folder)
        i += 1


def run_campaign(args: CampaignArgs, db: str | Path, workers: int = 1, scheduler: str | None = None,
                 progress: bool = True, on_case: Callable[[Case], None] | None = None) -> CampaignResult:
    """Run (or resume) the campaign ``args`` on the store ``db`` (module docstring)."""
    if args.cases is None and args.minutes is None:
        raise ValueError("a campaign needs --cases or --minutes")
    store = Store(db)
    cid, resumed = store.open_campaign(args.identity(), args.seed)
    res = CampaignResult(cid, resumed)
    done = store.done(cid)
    deadline = time.monotonic() + args.minutes * 60 if args.minutes is not None else None
    total = len(args.targets) * args.cases if args.cases is not None else None
    bar = _bar(progress, total, len(done))
    t0 = time.monotonic()
    fails = 0

    def record(c: Case) -> None:
        nonlocal fails
        if store.add_case(cid, c):
            res.new_cases += 1
            fails += c.verdict.outcome in FAILURES
            if c.bucket:
                store.add_bucket(c.bucket, cid, c.target, c.seed)
        if on_case:
            on_case(c)
        if bar is not None:
            mins = max(time.monotonic() - t0, 1e-9) / 60
            bar.update(1)
            bar.set_postfix(failures=fails, per_min=f"{res.new_cases / mins:.1f}")

    cov = str(rtl_coverage.folder(db, cid)) if args.rtl_coverage else None
    if not scheduler:       # builds here, not inside a worker's case
        res.rtl_builds = warm(args.targets, args.backends, args.rtl_coverage)
    todo = _todo(args, done, cov)
    try:
        if scheduler:
            _run_dask(args, todo, scheduler, deadline, record)
        elif workers <= 0:
            for spec in todo:
                if deadline is not None and time.monotonic() > deadline:
                    break
                record(run_case(spec))
        else:
            _run_pool(args, todo, workers, deadline, record)
    finally:
        if bar is not None:
            bar.close()
        if cov is not None and workers <= 0 and not scheduler:
            from rtl_harness import coverage

            coverage.stop()
    if cov is not None:
        res.rtl_coverage = rtl_coverage.record(store, cid, Path(cov))
    finished = args.cases is not None and len(store.done(cid)) >= total  # type: ignore[operator]
    if finished or args.minutes is not None:
        store.finish_campaign(cid)
    res.counts = store.counts(cid)
    res.seconds = time.monotonic() - t0
    store.close()
    return res


def _bar(on: bool, total: int | None, initial: int):  # noqa: ANN202
    if not on:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="case", file=sys.stderr, dynamic_ncols=True)


def _run_pool(args: CampaignArgs, todo: Iterator[CaseSpec], workers: int, deadline: float | None,
              record: Callable[[Case], None]) -> None:
    from concurrent.futures import TimeoutError as FutTimeout

    from pebble import ProcessExpired

    with process_pool(workers) as pool:  # type: ignore[attr-defined]
        running: dict[Future, CaseSpec] = {}
        exhausted = stopped = False
        while True:
            while not exhausted and len(running) < 2 * workers and (deadline is None or time.monotonic() < deadline):
                spec = next(todo, None)
                if spec is None:
                    exhausted = True
                    break
                running[pool.schedule(run_case, args=(spec,), timeout=args.timeout)] = spec
            if not running:
                break
            left = None if deadline is None or stopped else max(0.0, deadline - time.monotonic())
            finished, _ = wait(list(running), timeout=left, return_when=FIRST_COMPLETED)
            for f in sorted(finished, key=lambda f: (running[f].seed, running[f].target)):
                record(_collect(running.pop(f), f, args.timeout, FutTimeout, ProcessExpired))
            if deadline is not None and time.monotonic() >= deadline and not stopped:
                exhausted = stopped = True
                # cases queued but not started when the time is up are not run: no row, so a
                # resumed campaign runs them (the ones already running finish and are recorded)
                for f in [f for f in running if not f.running() and not f.done()]:
                    if f.cancel():
                        del running[f]


def case_in_subprocess(spec: CaseSpec, timeout: float) -> Case:
    """Run ``spec`` in a fresh ``python -m fuzz.campaign`` process killed after ``timeout`` (what a
    Dask task does: its worker is a daemonic process, which may not start a multiprocessing pool)."""
    import os
    import subprocess

    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
    t0 = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-m", "fuzz.campaign"], input=json.dumps(asdict(spec)), text=True,
                           capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return died(spec, "timeout", "timeout", f"the case ran past {timeout:g} s and was killed", timeout)
    if r.returncode != 0:
        why = _signal_name(r.returncode)
        return died(spec, "crash", why, f"the worker process {why}: {r.stderr[-500:]}", time.perf_counter() - t0)
    return Case.from_json(json.loads(r.stdout.splitlines()[-1]))


def _dask_task(spec: CaseSpec, timeout: float) -> dict:
    return case_in_subprocess(spec, timeout).to_json()


def _run_dask(args: CampaignArgs, todo: Iterator[CaseSpec], scheduler: str, deadline: float | None,
              record: Callable[[Case], None]) -> None:
    from distributed import Client, as_completed

    with Client(scheduler) as client:
        nworkers = max(1, len(client.scheduler_info().get("workers", {})))
        pending = as_completed()
        inflight = 0

        def submit() -> bool:
            nonlocal inflight
            if deadline is not None and time.monotonic() >= deadline:
                return False
            spec = next(todo, None)
            if spec is None:
                return False
            pending.add(client.submit(_dask_task, spec, args.timeout, pure=False, key=f"case-{spec.target}-{spec.seed}"))
            inflight += 1
            return True

        for _ in range(2 * nworkers):
            if not submit():
                break
        for fut in pending:
            inflight -= 1
            record(Case.from_json(fut.result()))
            submit()


def report_lines(db: str | Path, campaign: int) -> list[str]:
    """A short summary of one campaign: counts per target and outcome, buckets."""
    store = Store(db)
    lines = [f"{t}: " + ", ".join(f"{n} {o}" for o, n in c.items()) for t, c in store.outcome_counts(campaign).items()]
    for design, kinds in store.rtl_coverage(campaign).items():
        lines.append(f"RTL coverage {design}: " + ", ".join(f"{k} {c}/{t} ({c / max(t, 1):.1%})"
                                                         for k, (c, t) in kinds.items()))
    for b in store.buckets(store.bucket_signatures(campaign)):
        lines.append(f"bucket {b['signature']} (seed {b['seed']})" + (f": {b['replay']}" if b["replay"] else ""))
    store.close()
    return lines


if __name__ == "__main__":   # one case: CaseSpec JSON on stdin, the Case JSON as the last line of stdout
    d = json.loads(sys.stdin.read())
    d["backends"] = tuple(d["backends"])
    print(json.dumps(run_case(CaseSpec(**d)).to_json()))
