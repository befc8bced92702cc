"""Bugs patched into the compiler's layers (a false rewrite rule the proof gate is told is proved;
scratchpad writes emitted one row off their allocated address) and into the Gemmini RTL (the
scale unit rounding half up instead of half to even) are found by a short campaign -- generation,
compile, oracle, triage, reduction -- and reduced to reproducers of at most 10 operators whose
replay fails while the bug is in and passes once it is out.

Each bug is patched in for the test only (monkeypatch, or a patched copy of the Verilog built into
its own content-hashed build directory); the campaigns use fixed seeds.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from check.evaluate import replay
from fuzz.campaign import CampaignArgs, run_campaign
from fuzz.reduce import operator_count
from fuzz.triage import triage
from semantics.hlo_parser import parse_file

from .conftest import need


@pytest.fixture
def fresh_compiler():
    """Drop the compiler's memoized rule sets before and after the test (the target's context and
    the campaign's per-target rule sets), so a patched rule set is built afresh and never outlives
    the test. Returns the function that drops them (for the replay once the bug is out)."""
    from compilers.compile import forget_rules
    from compilers.targets import load_target

    def drop(target: str = "gemmini") -> None:
        load_target(target).__dict__.pop("_act_context", None)     # the description the campaign uses
        forget_rules()

    drop()
    yield drop
    drop()


def _campaign(db: Path, target: str, backends: tuple[str, ...], seed: int, cases: int,
              generators: tuple[str, ...], max_nodes: int) -> list[dict]:
    """Run a short in-process campaign and triage it; the mismatch buckets (store rows)."""
    args = CampaignArgs(targets=(target,), backends=backends, cases=cases, seed=seed, generators=generators,
                        max_nodes=max_nodes)
    res = run_campaign(args, db, workers=0, progress=False)
    buckets = triage(db, res.campaign, backends, budget_s=60, in_process=True)
    return [b for b in buckets if "| mismatch |" in b["signature"]]


def _small_failing_reproducer(b: dict) -> None:
    g = parse_file(Path(b["reproducer"]) / "kernel.hlo")
    assert operator_count(g) <= 10
    assert replay(b["reproducer"]).outcome == "mismatch"


# --- a false rewrite rule past the proof gate --------------------------------------------------------

def test_false_rule_past_the_gate(db, monkeypatch, fresh_compiler):
    """The library's int8 saturation rule ``convert_s8(clamp(-128, y, 127)) => mvout(y, 1.0, relu=0)``
    with its ReLU flag set (relu=1: negative values come out 0), the gate told it is proved: the
    compiler maps NNSmith's Sat8 onto a ReLU mvout, the simulator's outputs differ."""
    need("pebble", "nnsmith")
    from rewrite_rules import gemmini as gm
    from rewrite_rules.dsl import RULES
    from rewrite_rules.library import load
    from verif.gate import ProofGate

    name = "convert_s8(clamp(-128, y, 127)) => mvout(y, 1.0, relu=0)"
    good = load()[name]

    def relu_set(c):  # noqa: ANN001, ANN202 - the rule's build, its right side with relu=1
        y = c.tensor("y")
        return gm._sat_s8(y), gm.mvout(y, 1.0, 1), []

    bad = dataclasses.replace(good, build=relu_set)
    assert not ProofGate(prove_missing=False).passes(bad, "s32", 1)     # the real gate refuses it
    real = ProofGate.passes

    def passes(self, rule, dtype, rank):  # noqa: ANN001, ANN202 - a stale lock entry: "proved"
        return True if rule is bad else real(self, rule, dtype, rank)

    monkeypatch.setitem(RULES, name, bad)
    monkeypatch.setattr(ProofGate, "passes", passes)
    found = _campaign(db, "gemmini", ("sim", "stream"), seed=8, cases=3, generators=("nnsmith",), max_nodes=5)
    assert found and all("compare.sim" in b["signature"] for b in found)
    _small_failing_reproducer(found[0])
    monkeypatch.undo()
    fresh_compiler()
    assert RULES[name] is good
    assert replay(found[0]["reproducer"]).outcome == "pass"


# --- phase 2: an address one row off ----------------------------------------------------------------

def test_scratchpad_row_off_by_one(db, monkeypatch, fresh_compiler):
    """Module 6 emitting every scratchpad write one row below its allocated row (the readers keep
    the allocated row): the simulator reads rows nobody wrote."""
    need("pebble")
    import compilers.act.driver as drv
    from compilers.expr import Var

    real = drv.emit

    def shifted(acc, g, alloc, lay):  # noqa: ANN001, ANN202
        beta = {v: dict(b) for v, b in alloc.beta.items()}
        for v, b in beta.items():
            out = acc.instructions[g.nodes[v].instr].output
            if out.buffer == "spad" and isinstance(out.start[0], Var):
                b[out.start[0].name] += 1
        return real(acc, g, dataclasses.replace(alloc, beta=beta), lay)

    monkeypatch.setattr(drv, "emit", shifted)
    found = _campaign(db, "gemmini", ("sim",), seed=0, cases=3, generators=("gen",), max_nodes=4)
    assert found and all("compare.sim" in b["signature"] for b in found)
    _small_failing_reproducer(found[0])
    monkeypatch.undo()
    fresh_compiler()
    assert replay(found[0]["reproducer"]).outcome == "pass"


# --- the RTL's scale unit rounding half up --------------------------------------------------------

#: gemmini_f2i8's rounding to an integer: half to even (shipped) and half away from zero (the bug)
_RNE = "r  = ip + {8'd0, g & (st | ip[0])};"
_HALF_UP = "r  = ip + {8'd0, g};"


def _rtl_unavailable() -> str | None:
    from rtl_harness import verilate

    return verilate.available()


@pytest.mark.rtl
@pytest.mark.skipif(_rtl_unavailable() is not None, reason=f"RTL toolchain: {_rtl_unavailable()}")
def test_rtl_scale_rounds_half_up(db, monkeypatch, tmp_path, fresh_compiler):
    """The RTL's fp32 -> int8 rounding (gemmini_f2i8, the mvin / mvout scale unit) rounding half up
    instead of half to even, in a patched copy of the Verilog built into its own content-hashed
    build directory: a campaign of requantizing kernels on the rtl backend finds it.

    The shipped Gemmini description lets the compiler pick acc_scale 1.0 only, where an integer
    never lands on a tie, so no program it emits can tell the two roundings apart. The campaign
    therefore runs with a description that also offers acc_scale 0.5 and with NNSmith's Requant
    operator (requantization by 1/2) in the generator's list; the reproducer replays under the
    same configuration."""
    need("pebble", "nnsmith")
    import copy

    import rtl_harness.gemmini.driver as rg
    from compilers import targets
    from compilers.targets.gemmini.description import ONE, f32_bits
    from fuzz import nnsmith_gen

    shipped = targets.load_target("gemmini")
    acc = copy.copy(shipped)
    acc.__dict__.pop("_act_context", None)
    ins = dict(acc.instructions)
    ins["mvout_acc"] = dataclasses.replace(ins["mvout_acc"], search=(("scale", (ONE, f32_bits(0.5))),))
    acc.instructions = ins
    real_load = targets.load_target
    monkeypatch.setattr(targets, "load_target", lambda t: acc if t == "gemmini" else real_load(t))
    monkeypatch.setitem(nnsmith_gen.NNSMITH_OPSETS, "gemmini",
                        nnsmith_gen.NNOpSet(("Requant", "Slice", "Concat2", "Reshape", "Transpose"), ("int8", "int32")))
    fresh_compiler()

    patched = []
    for src in rg.SOURCES:
        text = src.read_text()
        if src.name == "gemmini_fp.sv":
            assert text.count(_RNE) == 1
            text = text.replace(_RNE, _HALF_UP)
        (tmp_path / src.name).write_text(text)
        patched.append(tmp_path / src.name)
    rg.library.cache_clear()
    try:
        with monkeypatch.context() as m:
            m.setattr(rg, "SOURCES", tuple(patched))
            found = _campaign(db, "gemmini", ("sim", "rtl"), seed=7, cases=3, generators=("nnsmith",), max_nodes=5)
            assert found and all("compare.rtl" in b["signature"] for b in found)
            _small_failing_reproducer(found[0])
            assert "round-nearest-even" in (Path(found[0]["reproducer"]) / "kernel.hlo").read_text()
            rg.library.cache_clear()
        assert rg.SOURCES[0].parent == rg.RTL_DIR
        assert replay(found[0]["reproducer"]).outcome == "pass"
    finally:
        rg.library.cache_clear()
