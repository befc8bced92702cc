"""`accv fuzz` as a user runs it: a tiny campaign prints where its results are and writes the
campaign's report page and Markdown summary beside the database (``--no-report`` skips them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from accv.cli import main


def test_a_campaign_writes_its_report_beside_the_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "run.sqlite"
    rc = main(["fuzz", "--target", "gemmini", "--cases", "2", "--workers", "0", "--generator", "gen",
               "--backend", "sim", "--db", str(db), "--no-reduce"])
    out = capsys.readouterr().out
    assert rc in (0, 1), out
    page, md = tmp_path / "run.html", tmp_path / "run.md"
    assert f"results: {db}" in out and f"report: {page}" in out, out
    html = page.read_text()
    assert html.startswith("<!DOCTYPE html>") and "accv campaign 1" in html
    assert "gemmini" in md.read_text()


def test_no_report_writes_no_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "run.sqlite"
    main(["fuzz", "--target", "gemmini", "--cases", "1", "--workers", "0", "--generator", "gen",
          "--backend", "sim", "--db", str(db), "--no-reduce", "--no-report"])
    assert "report:" not in capsys.readouterr().out
    assert not (tmp_path / "run.html").exists()
