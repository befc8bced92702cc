"""A small campaign database (two nights, synthesised with bench/report_scale.py's generator) for the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.report_scale import synthesize


@pytest.fixture(scope="session")
def campaign_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthesize(tmp_path_factory.mktemp("report") / "run.sqlite", cases=1200, campaigns=2, minutes=6)
