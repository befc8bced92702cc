"""Shared helpers of the campaign tests: skip where the fuzz extra is absent."""

from __future__ import annotations

import importlib.util

import pytest


def need(*mods: str) -> None:
    for m in mods:
        if importlib.util.find_spec(m) is None:
            pytest.skip(f"{m} is not installed (the fuzz extra: pip install -e '.[fuzz]')")


@pytest.fixture
def db(tmp_path):
    return tmp_path / "run.sqlite"
