"""The campaign runner survives what cases do: kill -9 and resume, a hung case, a dying worker; the
same seed gives the same rows; Dask runs the same campaign; the comparison fails on wrong outputs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import fuzz.campaign as campaign
from check.verdict import Verdict
from fuzz.campaign import CampaignArgs, run_campaign
from fuzz.case import CaseSpec
from fuzz.store import Case, Store

from .conftest import need

ROOT = Path(__file__).resolve().parents[2]


def _fake(spec: CaseSpec) -> Case:
    if spec.seed == 1:
        time.sleep(30)                      # hangs past the timeout
    if spec.seed == 2:
        os._exit(7)                         # the worker exits
    if spec.seed == 3:
        os.kill(os.getpid(), signal.SIGSEGV)
    return Case(spec.target, spec.seed, spec.generator, Verdict("pass"), "HloModule x")


def test_hung_and_crashing_cases_are_recorded(db, monkeypatch):
    need("pebble")
    monkeypatch.setattr(campaign, "run_case", _fake)
    res = run_campaign(CampaignArgs(targets=("gemmini",), cases=5, timeout=2), db, workers=2, progress=False)
    rows = {c.seed: c for c in Store(db).cases(res.campaign)}
    assert sorted(rows) == [0, 1, 2, 3, 4]
    assert rows[1].outcome == "timeout"
    assert rows[2].outcome == "crash" and "code 7" in rows[2].verdict.symptom
    assert rows[3].outcome == "crash" and "SIGSEGV" in rows[3].verdict.symptom
    assert rows[1].bucket == "gemmini | timeout | - | timeout"
    assert rows[0].outcome == rows[4].outcome == "pass"
    # the coordinator regenerates a dead case's graph from its seed; its bucket gets a reproducer
    from fuzz.case import generate_graph
    from fuzz.triage import triage
    from semantics.hlo_printer import print_hlo

    args = CampaignArgs(targets=("gemmini",), cases=5, timeout=2)
    for seed in (1, 2, 3):
        assert rows[seed].graph == print_hlo(generate_graph(args.spec("gemmini", seed - args.seed)))
    buckets = {b["signature"]: b for b in triage(db, res.campaign, in_process=True)}
    folder = Path(buckets["gemmini | timeout | - | timeout"]["reproducer"])
    assert (folder / "kernel.hlo").read_text().endswith(rows[1].graph)


_DRIVER = textwrap.dedent("""
    import sys, time
    import fuzz.campaign as c
    from check.verdict import Verdict
    from fuzz.store import Case
    def slow(spec):
        time.sleep(0.15)
        return Case(spec.target, spec.seed, spec.generator, Verdict("pass"), "HloModule x")
    c.run_case = slow
    c.run_campaign(c.CampaignArgs(targets=("gemmini", "amx"), cases=20), sys.argv[1], workers=0, progress=False)
""")


def test_resume_after_sigkill(db, tmp_path):
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.Popen([sys.executable, str(script), str(db)], env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.3)
        if db.exists():
            n = Store(db).db.execute("SELECT COUNT(*) FROM cases").fetchone()[0]
            if n >= 8:
                break
    p.send_signal(signal.SIGKILL)
    p.wait()
    mid = Store(db).db.execute("SELECT COUNT(*) FROM cases").fetchone()[0]
    assert 8 <= mid < 40
    subprocess.run([sys.executable, str(script), str(db)], env=env, check=True, timeout=120)
    s = Store(db)
    assert s.db.execute("SELECT COUNT(*) FROM campaigns").fetchone()[0] == 1       # resumed, not restarted
    rows = s.db.execute("SELECT target, seed FROM cases").fetchall()
    assert sorted(rows) == sorted((t, i) for t in ("gemmini", "amx") for i in range(20))


def test_same_seed_same_rows(tmp_path):
    need("nnsmith")
    a = CampaignArgs(targets=("gemmini", "amx"), cases=3, seed=40, backends=("sim",))
    rows = []
    for k in range(2):
        res = run_campaign(a, tmp_path / f"r{k}.sqlite", workers=0, progress=False)
        rows.append([(c.target, c.seed, c.generator, c.graph, c.outcome, c.verdict.symptom, c.verdict.reason,
                      c.verdict.coverage.get("instructions")) for c in Store(tmp_path / f"r{k}.sqlite").cases(res.campaign)])
    assert rows[0] == rows[1] and len(rows[0]) == 6


def test_dask_local_cluster(db):
    need("distributed", "pebble")
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        res = run_campaign(CampaignArgs(targets=("amx",), cases=3, generators=("gen",), backends=("sim",)), db,
                           scheduler=cluster.scheduler_address, progress=False)
    rows = Store(db).cases(res.campaign)
    assert [c.seed for c in rows] == [0, 1, 2] and all(c.outcome in ("pass", "unsupported", "degenerate") for c in rows)


@pytest.mark.parametrize("where", ["first", "middle", "last", "nan"])
def test_wrong_outputs_fail_the_comparison(where, monkeypatch):
    """One element changed anywhere (the last included), or a NaN where a number belongs, is a mismatch."""
    from check.evaluate import evaluate_graph
    from compilers.simulator import SimBackend
    from semantics.hlo_parser import parse_hlo

    g = parse_hlo(textwrap.dedent("""
        HloModule m
        ENTRY main {
          p0 = f32[16,16] parameter(0)
          p1 = f32[16,16] parameter(1)
          ROOT d = f32[16,16] add(p0, p1)
        }"""))
    real = SimBackend.run

    def wrong(self, program, inputs):  # noqa: ANN001, ANN202
        r = real(self, program, inputs)
        o = np.array(r.outputs[0], copy=True).reshape(-1)
        i = {"first": 0, "middle": o.size // 2, "last": o.size - 1, "nan": o.size - 1}[where]
        o[i] = np.nan if where == "nan" else np.nextafter(o[i], np.float32(np.inf))
        r.outputs[0] = o.reshape(r.outputs[0].shape)
        return r

    assert evaluate_graph("amx", g, ("sim",), 0).outcome == "pass"
    monkeypatch.setattr(SimBackend, "run", wrong)
    v = evaluate_graph("amx", g, ("sim",), 0)
    assert v.outcome == "mismatch" and v.symptom == "sim differs on output of add"
