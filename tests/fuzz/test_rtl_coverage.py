"""RTL code coverage in a campaign: the .dat format read and summarised, and a short rtl campaign
with ``rtl_coverage`` recording a nonzero line and toggle figure in its database (the qkv design's
collection is tested in tests/rtl_harness/test_coverage.py: random graphs seldom compile to a qkv
program with instructions)."""

from __future__ import annotations

import pytest

from fuzz import rtl_coverage
from fuzz.campaign import CampaignArgs, run_campaign
from fuzz.store import Store
from rtl_harness import coverage, verilate

from .conftest import need

_DAT = ("# SystemC::Coverage-3\n"
        "C '\x01t\x02block\x01page\x02v_line/top\x01f\x02a.sv\x01l\x0210\x01h\x02TOP.top' 3\n"
        "C '\x01t\x02block\x01page\x02v_line/top\x01f\x02a.sv\x01l\x0212\x01h\x02TOP.top' 0\n"
        "C '\x01t\x02if\x01page\x02v_branch/top\x01f\x02a.sv\x01l\x0214\x01h\x02TOP.top' 1\n"
        "C '\x01t\x02toggle\x01page\x02v_toggle/top\x01f\x02a.sv\x01l\x022\x01o\x02x[0]\x01h\x02TOP.top' 0\n"
        "C '\x01t\x02toggle\x01page\x02v_toggle/top\x01f\x02a.sv\x01l\x022\x01o\x02x[1]\x01h\x02TOP.top' 7\n")


def test_dat_files_are_merged_and_counted(tmp_path):
    (tmp_path / "a.dat").write_text(_DAT)
    (tmp_path / "b.dat").write_text(_DAT.replace("' 0\n", "' 2\n", 1))     # line 12 covered in the second run
    one = coverage.read_dat(tmp_path / "a.dat")
    assert len(one) == 5 and sum(one.values()) == 11
    assert coverage.summary(one) == {"line": (2, 3), "toggle": (1, 2)}
    both = coverage.merge([tmp_path / "a.dat", tmp_path / "b.dat"])
    assert coverage.summary(both) == {"line": (3, 3), "toggle": (1, 2)}
    (tmp_path / "bad.dat").write_text("C 'x' many\n")
    with pytest.raises(coverage.CoverageError, match="bad.dat:1"):
        coverage.read_dat(tmp_path / "bad.dat")


@pytest.mark.rtl
@pytest.mark.skipif(verilate.available() is not None, reason=f"RTL toolchain: {verilate.available()}")
def test_rtl_campaign_records_coverage(db):
    """A one-case gemmini campaign in a worker process (seed 1 of the gen generator compiles to a
    program of several instructions) records a line and toggle figure for gemmini."""
    need("pebble")
    target = "gemmini"
    args = CampaignArgs(targets=(target,), backends=("rtl",), cases=1, seed=1, generators=("gen",),
                        max_nodes=3, rtl_coverage=True, timeout=900)
    res = run_campaign(args, db, workers=1, progress=False)
    assert res.counts.get("pass", 0) + res.counts.get("degenerate", 0) >= 1, res.counts
    fig = res.rtl_coverage[target]
    for kind in ("line", "toggle"):
        covered, total = fig[kind]
        assert 0 < covered < total, (kind, covered, total)
    with Store(db, read_only=True) as store:
        assert store.rtl_coverage(res.campaign) == {target: fig}
    folder = rtl_coverage.folder(db, res.campaign)
    assert (folder / f"{target}.dat").is_file()          # the merged file verilator_coverage reads
    assert coverage.summary(coverage.read_dat(folder / f"{target}.dat")) == fig
