"""Bugs patched into different layers are found by a short campaign and reduced to reproducers of
at most 10 operators whose replay fails while the bug is in and passes once it is out."""

from __future__ import annotations

import pytest

from check.evaluate import replay
from fuzz.campaign import CampaignArgs, run_campaign
from fuzz.store import Store
from fuzz.triage import triage

from .conftest import need


def _find(db, target: str, backends: tuple[str, ...], cases: int = 6, generators=("gen",)) -> list[dict]:
    args = CampaignArgs(targets=(target,), backends=backends, cases=cases, generators=generators, max_nodes=4)
    res = run_campaign(args, db, workers=0, progress=False)
    buckets = triage(db, res.campaign, backends, budget_s=60, in_process=True)
    store = Store(db)
    mism = [b for b in buckets if "mismatch" in b["signature"]]
    store.close()
    return mism


def _check_reproducer(b: dict) -> None:
    from pathlib import Path

    from fuzz.reduce import operator_count
    from semantics.hlo_parser import parse_file

    g = parse_file(Path(b["reproducer"]) / "kernel.hlo")
    assert operator_count(g) <= 10
    assert replay(b["reproducer"]).outcome == "mismatch"


def test_stream_command_word_bit(db, monkeypatch):
    """A wrong bit in Gemmini's MVOUT command word (the row of the local address) is found on the
    stream backend and not on the simulator."""
    need("pebble")
    import compilers.targets.gemmini.stream as gs

    real = gs.encode

    def bad(program, dim=16):  # noqa: ANN001, ANN202
        return [gs.Command(c.funct, c.rs1 ^ 1, c.rs2) if c.funct == gs.MVOUT else c for c in real(program, dim)]

    monkeypatch.setattr(gs, "encode", bad)
    found = _find(db, "gemmini", ("sim", "stream"))
    assert found and all("stream" in b["signature"] for b in found)
    _check_reproducer(found[0])
    monkeypatch.setattr(gs, "encode", real)
    assert replay(found[0]["reproducer"]).outcome == "pass"


@pytest.mark.slow
def test_amx_c_stride(db, monkeypatch):
    """A wrong stride in the emitted AMX C (a tile loaded with one byte less per row) is found on the
    emulated backend."""
    need("pebble")
    import compilers.targets.amx.emit_c as ae

    real = ae.emit_c
    from compilers.targets.amx.backends import emulated_available

    if not emulated_available()[0]:
        pytest.skip(emulated_available()[1])

    def bad(program, acc=None, name="kernel", with_main=False):  # noqa: ANN001, ANN202
        import re

        return re.sub(r"_tile_loadd\((\d+), ([^,]+), (\d+)\)", lambda m: f"_tile_loadd({m[1]}, {m[2]}, {int(m[3]) + 1})",
                      real(program, acc, name, with_main))

    monkeypatch.setattr(ae, "emit_c", bad)
    found = _find(db, "amx", ("sim", "emulated"), cases=8)
    assert found
    _check_reproducer(found[0])
