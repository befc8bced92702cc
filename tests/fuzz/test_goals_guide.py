"""Coverage goals (fuzz/goals.py: α classes from the descriptions), the coverage guide (fuzz/guide.py:
rarity scores, readiness, a deterministic draw), the warm-up cases, the canary that catches a broken
comparison, and --stop-at-failure."""

from __future__ import annotations

import numpy as np
import pytest

from check.run import corrupted
from compilers.targets import load_target
from fuzz.campaign import CampaignArgs, run_campaign, warm_ups
from fuzz.goals import goal_lists, progress
from fuzz.guide import BATCH, ready, scores
from fuzz.store import Store

from .conftest import need


def test_alpha_classes_follow_the_description() -> None:
    g = load_target("gemmini")
    mv = g.instructions["mvout_acc"]
    env = {"rows": 16, "cols": 16, "stride": 16, "scale": 0x3F800000, "relu": 1}
    assert mv.alpha_class("stride", env) == "dense" and mv.alpha_class("scale", env) == "1.0"
    assert mv.alpha_class("stride", env | {"stride": 64}) == "strided"
    assert mv.alpha_class("scale", env | {"scale": 0x3F000000}) == "other"
    assert [mv.alpha_class("rows", env | {"rows": r}) for r in (1, 7, 16)] == ["1", "1<v<16", "16"]
    assert mv.alpha_class("relu", env) == "1"
    ins, classes, never = goal_lists("gemmini")
    assert "store_os_spad" in ins and "matmul_os.a_rows:1<v<16" in classes
    # the compiler searches scale 1.0 only: the other class is no goal, but listed apart
    assert "mvout_acc.scale:other" in never and "mvout_acc.scale:other" not in classes
    assert "mvout_acc.scale:1.0" in classes


def test_rarity_scores_favour_generators_that_reach_rare_items() -> None:
    common = {"instructions": {"mvin_spad": 3}, "alpha_class": ["mvin_spad.rows:16"]}
    rare = {"instructions": {"mvin_spad": 1, "matmul_os": 1}, "alpha_class": ["mvin_spad.rows:16"]}
    s = scores([("a", common), ("a", common), ("b", rare), ("c", {})])
    assert s["b"] > s["a"] > s["c"] == 0


def test_a_case_waits_for_the_rows_it_is_guided_by() -> None:
    assert ready(0, 0) and ready(2 * BATCH - 1, 0)
    assert not ready(2 * BATCH, BATCH - 1) and ready(2 * BATCH, BATCH)
    assert not ready(3 * BATCH, 2 * BATCH - 1) and ready(3 * BATCH + 5, 2 * BATCH)


def test_guided_campaigns_are_deterministic(tmp_path) -> None:
    """Two runs of one guided campaign (past two batches, so the guide draws) give the same
    generators for the same seeds; the goals read back from the database."""
    a = CampaignArgs(targets=("qkv",), cases=2 * BATCH + 6, seed=3, backends=("sim",))
    gens = []
    for k in range(2):
        res = run_campaign(a, tmp_path / f"g{k}.sqlite", workers=0, progress=False)
        gens.append([(c.seed, c.generator) for c in Store(tmp_path / f"g{k}.sqlite").cases(res.campaign)])
    assert gens[0] == gens[1] and len(gens[0]) == 2 * BATCH + 6
    p = progress(tmp_path / "g0.sqlite", 1)["qkv"]
    assert p.hit_instructions.get("gemm") and "qkv goals: instructions" in p.line()


def test_warm_ups_cover_each_generator_with_graphs_of_their_own() -> None:
    from fuzz.campaign import WARM_SEED, WARM_UPS

    args = CampaignArgs(targets=("gemmini", "qkv"))
    ups = warm_ups(args)
    kinds = [(u.target, u.generator) for u in ups]
    assert ("gemmini", "layers_os") in kinds and ("qkv", "blocks") in kinds
    assert all(kinds.count(k) == WARM_UPS for k in set(kinds))
    assert len({(u.target, u.generator, u.seed) for u in ups}) == len(ups)
    assert all(u.seed >= WARM_SEED > args.seed + 10_000 for u in ups)     # no campaign case's graph
    first = ups[:len(set(kinds))]       # one one-layer case of every generator comes first
    assert all(u.max_nodes == 2 for u in first) and len({(u.target, u.generator) for u in first}) == len(first)
    os_up = next(u for u in ups if u.generator == "layers_os")
    assert "matmul_ws_acc" in os_up.withhold      # warm-ups compile as their generator's cases do


@pytest.mark.parametrize("dtype", ["int8", "int32", "float32", "bool"])
def test_the_canary_changes_one_element(dtype) -> None:
    x = (np.arange(12) % 3 == 0) if dtype == "bool" else np.arange(12).astype(dtype)
    bad = corrupted([x], 5)
    assert bad is not None and int(np.sum(bad[0] != x)) == 1 and bad[0].flat[5] != x.flat[5]
    assert corrupted([np.zeros((0,), np.int8)], 1) is None


def test_a_broken_comparison_is_caught_by_the_canary(tmp_path, monkeypatch) -> None:
    """Plant the bug: the comparison ignores the outputs (always agrees). The campaign's cases then
    fail at the canary, and --stop-at-failure ends the campaign at the first of them."""
    need("nnsmith")
    import check.run as run
    from check.policy import Judgement

    monkeypatch.setattr(run, "judge", lambda ref, got, inputs, policy: Judgement(True, expected=ref))
    a = CampaignArgs(targets=("qkv",), cases=6, seed=0, backends=("sim",), generators=("blocks",))
    res = run_campaign(a, tmp_path / "c.sqlite", workers=0, progress=False, stop_at_failure=True)
    rows = Store(tmp_path / "c.sqlite").cases(res.campaign)
    assert len(rows) == 1 and rows[0].outcome == "mismatch" and rows[0].verdict.stage == "canary.sim"


def test_the_nan_canary_gives_another_payload() -> None:
    from check.run import other_nan

    x = np.array([1.0, np.nan, 2.0], np.float32)
    odd = other_nan([x])
    assert odd is not None and np.isnan(odd[0][1]) and odd[0].view(np.uint32)[1] != x.view(np.uint32)[1]
    assert other_nan([np.array([1.0, 2.0], np.float32)]) is None and other_nan([np.arange(3)]) is None


def test_a_wrong_nan_rule_is_caught_by_the_canary(tmp_path, monkeypatch) -> None:
    """Plant the bug: every backend judged with the first backend's policy (NaN bits checked where
    the AMX C backend is not held to them, or not checked where sim is). A graph whose outputs hold
    NaN (the edges input set) then fails at the NaN canary."""
    import check.run as run
    from check.policy import Policy

    real = Policy.of
    monkeypatch.setattr(run.Policy, "of", classmethod(lambda cls, program, backend: real(program, type("B", (), {"nan_bits": False}))))
    from check.evaluate import evaluate_graph
    from semantics.hlo_parser import parse_hlo

    g = parse_hlo("HloModule m\nENTRY e {\n  a = f32[16,16] parameter(0)\n  b = f32[16,16] parameter(1)\n"
                  "  ROOT c = f32[16,16] add(a, b)\n}\n")
    v = evaluate_graph("amx", g, ("sim",), 0, "cached")
    assert v.outcome == "mismatch" and v.stage == "canary.sim", (v.outcome, v.stage, v.reason)
