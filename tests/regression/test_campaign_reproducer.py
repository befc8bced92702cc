"""A reproducer written by a real campaign is a regression file as it is: a bug patched into the
Gemmini command-stream encoder is found by a short campaign and reduced; the reproducer folder,
copied unchanged into a suite's kernel folder, fails there while the bug is in and passes once it
is out."""

from __future__ import annotations

import shutil

import pytest

from ..fuzz.conftest import need
from .test_plugin import PLUGIN, _warm  # noqa: F401 - the module-scoped warm-up fixture


@pytest.mark.slow
def test_campaign_reproducer_dropped_into_the_suite(pytester, tmp_path_factory, monkeypatch):
    need("pebble")
    import compilers.targets.gemmini.stream as gs
    from fuzz.campaign import CampaignArgs, run_campaign
    from fuzz.triage import triage

    real = gs.encode

    def bad(program, dim=16):  # noqa: ANN001, ANN202
        return [gs.Command(c.funct, c.rs1 ^ 1, c.rs2) if c.funct == gs.MVOUT else c for c in real(program, dim)]

    monkeypatch.setattr(gs, "encode", bad)
    db = tmp_path_factory.mktemp("campaign") / "run.sqlite"
    res = run_campaign(CampaignArgs(targets=("gemmini",), backends=("sim", "stream"), cases=6, generators=("gen",),
                                    max_nodes=4), db, workers=0, progress=False)
    found = [b for b in triage(db, res.campaign, ("sim", "stream"), budget_s=60, in_process=True)
             if "mismatch" in b["signature"]]
    assert found, "the campaign did not find the patched bug"
    pytester.makeini("[pytest]\naccv_kernels = kernels\naccv_targets = qkv\naccv_backends = sim\n")
    shutil.copytree(found[0]["reproducer"], pytester.path / "kernels" / "repro")
    failing = pytester.runpytest(*PLUGIN, "-v")
    failing.assert_outcomes(failed=1)
    failing.stdout.fnmatch_lines(["kernels/repro/kernel.hlo::gemmini-stream FAILED*",
                                  "*differs from the reference bit for bit on input set given: output * element *"])
    monkeypatch.setattr(gs, "encode", real)
    pytester.runpytest(*PLUGIN).assert_outcomes(passed=1)
