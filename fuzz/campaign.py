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
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import asdict, dataclass, field, replace
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
    guided: bool = True                     # coverage-guided generator choice (fuzz/guide.py; False: --no-guide)

    def identity(self) -> dict:
        """What makes two runs the same campaign (the resume key): everything but the wall time
        (``rtl_coverage`` only when on, so campaigns without it keep the key they had before it existed)."""
        d = asdict(self)
        if not d["rtl_coverage"]:
            del d["rtl_coverage"]
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}

    def gens(self, target: str) -> tuple[str, ...]:
        """The generators of ``target``'s cases: ``--generator`` or the target's default list."""
        from .opsets import CAMPAIGN_GENERATORS

        return self.generators or CAMPAIGN_GENERATORS.get(target, ("nnsmith", "gen"))

    def spec(self, target: str, i: int, coverage_folder: str | None = None, gen: str | None = None) -> CaseSpec:
        """Case ``i`` of ``target``; ``gen``: its generator where the guide chose it (default: the
        fixed rotation)."""
        be = tuple(b for b in self.backends if _offers(target, b)) if self.backends else ()
        from .opsets import GENERATOR_WITHHOLD

        gens = self.gens(target)
        gen = gen or gens[i % len(gens)]
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


#: what :meth:`_Feed.next` returns while the next case waits for earlier rows (fuzz/guide.py)
WAIT = object()


class _Feed:
    """Pending cases, round-robin over the targets, in seed order; with ``args.guided`` each one's
    generator is :func:`fuzz.guide.guided_generator`'s, and a case is handed out only when the
    rows it is guided by exist (:func:`fuzz.guide.ready`; meanwhile :data:`WAIT`)."""

    def __init__(self, args: CampaignArgs, done: set[tuple[str, int]], coverage_folder: str | None,
                 store: Store | None, campaign: int) -> None:
        self.args, self.done, self.cov, self.store, self.campaign = args, set(done), coverage_folder, store, campaign
        self.below = dict.fromkeys(args.targets, 0)     # per target: cases 0 .. below-1 all have rows
        self.slots = self._slots()
        self.peek: tuple[str, int] | None = None

    def _slots(self) -> Iterator[tuple[str, int]]:
        i = 0
        while self.args.cases is None or i < self.args.cases:
            for t in self.args.targets:
                if (t, self.args.seed + i) not in self.done:
                    yield t, i
            i += 1

    def mark(self, target: str, seed: int) -> None:
        self.done.add((target, seed))

    def _below(self, t: str) -> int:
        k = self.below[t]
        while (t, self.args.seed + k) in self.done:
            k += 1
        self.below[t] = k
        return k

    def next(self) -> CaseSpec | object | None:
        slot = self.peek if self.peek is not None else next(self.slots, None)
        self.peek = None
        if slot is None:
            return None
        t, i = slot
        if not self.args.guided or self.store is None:
            return self.args.spec(t, i, self.cov)
        from .guide import guided_generator, ready

        if not ready(i, self._below(t)):
            self.peek = slot
            return WAIT
        gen = guided_generator(self.store, self.campaign, t, self.args.seed, i, self.args.gens(t))
        return self.args.spec(t, i, self.cov, gen)

    def __iter__(self) -> Iterator[CaseSpec]:
        """Sequentially (one case at a time: every earlier row exists before the next case)."""
        while True:
            s = self.next()
            if s is None:
                return
            assert s is not WAIT, "a sequential run has every earlier row"
            yield s  # type: ignore[misc]


def run_campaign(args: CampaignArgs, db: str | Path, workers: int = 1, scheduler: str | None = None,
                 progress: bool = True, on_case: Callable[[Case], None] | None = None,
                 warm_up: bool | None = None, stop_at_failure: bool = False,
                 say: bool | None = None) -> CampaignResult:
    """Run (or resume) the campaign ``args`` on the store ``db`` (module docstring). The clock
    (``args.minutes``) starts after the RTL builds (:func:`fuzz.case.warm`) and the warm-up cases
    (:func:`warm_ups`; ``warm_up``: run them, default with worker processes and no scheduler).
    ``stop_at_failure``: no new case starts once a failure is recorded (a mutation run's campaign).
    ``say``: a line on stderr for each RTL model looked up or built (default: with ``progress``)."""
    if args.cases is None and args.minutes is None:
        raise ValueError("a campaign needs --cases or --minutes")
    store = Store(db)
    cid, resumed = store.open_campaign(args.identity(), args.seed)
    res = CampaignResult(cid, resumed)
    done = store.done(cid)
    total = len(args.targets) * args.cases if args.cases is not None else None
    fails = 0
    t0 = time.monotonic()
    bar = None

    def record(c: Case) -> None:
        nonlocal fails
        feed.mark(c.target, c.seed)
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
        res.rtl_builds = warm(args.targets, args.backends, args.rtl_coverage,
                              say=_say if (progress if say is None else say) else None)
    ups = warm_ups(args) if (workers > 0 and not scheduler if warm_up is None else warm_up) else []

    def start() -> float | None:
        """The campaign's clock starts once the warm-up is done (called by the executor)."""
        nonlocal bar, t0
        t0 = time.monotonic()
        bar = _bar(progress, total, len(done))
        return t0 + args.minutes * 60 if args.minutes is not None else None

    def failed() -> bool:
        return stop_at_failure and fails > 0

    feed = _Feed(args, done, cov, store, cid)
    try:
        if scheduler:
            _run_dask(args, feed, scheduler, start(), record)
        elif workers <= 0:
            _warm_up_here(ups, progress)
            deadline = start()
            for spec in feed:
                if (deadline is not None and time.monotonic() > deadline) or failed():
                    break
                record(run_case(spec))
        else:
            _run_pool(args, feed, workers, start, record, ups, progress, failed)
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


def _bar(on: bool, total: int | None, initial: int, desc: str = "cases"):  # noqa: ANN202
    if not on:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="case", desc=desc, file=sys.stderr, dynamic_ncols=True)


def _say(line: str) -> None:
    print(f"accv fuzz: {line}", file=sys.stderr, flush=True)


#: the seed of the warm-up cases (far from any campaign's own seeds; their rows are not kept)
WARM_SEED = 1_000_003
#: warm-up cases per (target, generator): the first a one-layer one, the others of the campaign's size
WARM_UPS = 6


def warm_ups(args: CampaignArgs) -> list[CaseSpec]:
    """:data:`WARM_UPS` cases per (target, generator) of the campaign (seeds from
    :data:`WARM_SEED`, graphs no campaign case has), run before its clock starts and not recorded:
    the first use of a generator's operators proves their rule instantiations and generates the
    target's patterns for the sizes its layers draw (on a fresh machine, minutes that a one-minute
    campaign would otherwise spend on them: a fresh clone's demo ran 41 cases with one small
    warm-up per generator, 81 once warm), and imports the compiler in each worker. The one-layer
    cases of every generator come first."""
    first: list[CaseSpec] = []
    rest: list[CaseSpec] = []
    seen: set[tuple[str, str]] = set()
    # with RTL coverage the warm-up runs the coverage builds too (those warm() built), its tally
    # thrown away: it is not the campaign's
    cov = tempfile.mkdtemp(prefix="accv-warm-up-cov-") if args.rtl_coverage else None
    for t in args.targets:
        for i in range(len(args.generators or _generators(t))):
            s = args.spec(t, i)
            if (t, s.generator) not in seen:
                seen.add((t, s.generator))
                first.append(replace(s, seed=WARM_SEED, max_nodes=2, rtl_coverage=cov))
                rest += [replace(s, seed=WARM_SEED + j, rtl_coverage=cov) for j in range(1, WARM_UPS)]
    return first + rest


def _generators(target: str) -> tuple[str, ...]:
    from .opsets import CAMPAIGN_GENERATORS

    return CAMPAIGN_GENERATORS.get(target, ("nnsmith", "gen"))


def _warm_up_here(ups: list[CaseSpec], progress: bool) -> None:
    bar = _bar(progress, len(ups), 0, "warm-up (not timed)")
    for spec in ups:
        run_case(spec)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()


def _run_pool(args: CampaignArgs, feed: _Feed, workers: int, start: Callable[[], float | None],
              record: Callable[[Case], None], ups: list[CaseSpec] = (), progress: bool = False,  # type: ignore[assignment]
              failed: Callable[[], bool] = lambda: False) -> None:
    from concurrent.futures import TimeoutError as FutTimeout

    from pebble import ProcessExpired

    with process_pool(workers) as pool:  # type: ignore[attr-defined]
        if ups:         # every worker takes warm-up cases; their rows are not kept
            bar = _bar(progress, len(ups), 0, "warm-up (not timed)")
            for f in [pool.schedule(run_case, args=(s,), timeout=args.timeout) for s in ups]:
                try:
                    f.result()
                except Exception:  # noqa: BLE001, S110 - a warm-up that fails is the campaign's case to find
                    pass
                if bar is not None:
                    bar.update(1)
            if bar is not None:
                bar.close()
        deadline = start()
        running: dict[Future, CaseSpec] = {}
        exhausted = stopped = False
        while True:
            while not exhausted and len(running) < 2 * workers and (deadline is None or time.monotonic() < deadline):
                spec = feed.next()
                if spec is None:
                    exhausted = True
                    break
                if not isinstance(spec, CaseSpec):     # WAIT: the guide waits for a running case's row
                    break
                running[pool.schedule(run_case, args=(spec,), timeout=args.timeout)] = spec
            if not running:
                break
            left = None if deadline is None or stopped else max(0.0, deadline - time.monotonic())
            finished, _ = wait(list(running), timeout=left, return_when=FIRST_COMPLETED)
            for f in sorted(finished, key=lambda f: (running[f].seed, running[f].target)):
                record(_collect(running.pop(f), f, args.timeout, FutTimeout, ProcessExpired))
            if ((deadline is not None and time.monotonic() >= deadline) or failed()) and not stopped:
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


def _run_dask(args: CampaignArgs, feed: _Feed, scheduler: str, deadline: float | None,
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
            spec = feed.next()
            if spec is None or spec is WAIT:    # exhausted, or the guide waits for a running case's row
                return False
            pending.add(client.submit(_dask_task, spec, args.timeout, pure=False,
                                      key=f"case-{spec.target}-{spec.seed}"))  # type: ignore[attr-defined]
            inflight += 1
            return True

        while inflight < 2 * nworkers and submit():
            pass
        for fut in pending:
            inflight -= 1
            record(Case.from_json(fut.result()))
            while inflight < 2 * nworkers and submit():
                pass


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
    from .goals import summary_lines

    return lines[:len(lines)] + summary_lines(db, campaign)


if __name__ == "__main__":   # one case: CaseSpec JSON on stdin, the Case JSON as the last line of stdout
    d = json.loads(sys.stdin.read())
    d["backends"] = tuple(d["backends"])
    print(json.dumps(run_case(CaseSpec(**d)).to_json()))
