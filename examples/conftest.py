"""The example suites (docs/regression.md): examples/regression (the paper corpus kernels) and
examples/partition (layers jax users write, partitioned), each kernel with its expectations in its
``// accv:`` header, collected by the accv pytest plugin through the ``accv_kernels`` option in
pyproject.toml. Their RTL items are also marked slow, so the default test run checks the
simulator and ``pytest --runslow`` adds the Verilated RTL."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)   # before tests/conftest.py skips what is marked slow
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if "rtl" in item.keywords and "accv" in item.keywords and item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.slow)
