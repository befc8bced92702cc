"""Test configuration: the --runslow and --update-golden flags and the golden-file fixture (where
the kernels are: tests/paths.py)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]  # the regression plugin's tests (tests/regression) run pytest sessions

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", default=False, help="also run tests marked slow")
    parser.addoption("--slow-part", default=None, metavar="K/N",
                     help="also run the K-th of N parts of the slow tests (K may be 'auto': the commit count modulo N); "
                          "CI runs one part per commit (.ci/run), so every slow test runs every N commits")
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite the golden files under tests/golden/ from what the code prints now")


def slow_part(spec: str) -> tuple[int, int]:
    """(K, N) of ``--slow-part K/N``; ``auto/N``: K is HEAD's commit count modulo N."""
    k, _, n = spec.partition("/")
    if not n.isdigit() or int(n) < 1 or not (k == "auto" or (k.isdigit() and int(k) < int(n))):
        raise pytest.UsageError(f"--slow-part {spec}: expected K/N with 0 <= K < N, or auto/N")
    if k == "auto":
        import subprocess

        r = subprocess.run(["git", "rev-list", "--count", "HEAD"], cwd=REPO, capture_output=True, text=True)
        k = str(int(r.stdout.strip() or 0) % int(n))
    return int(k), int(n)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    part = config.getoption("--slow-part")
    if part:
        import zlib

        k, n = slow_part(part)
        skip = pytest.mark.skip(reason=f"slow: not in part {k} of {n} this run (--slow-part)")
        for item in items:
            if "slow" in item.keywords and zlib.crc32(item.nodeid.encode()) % n != k:
                item.add_marker(skip)
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


class Golden:
    """Compares printed artifacts with their golden files under tests/golden/ (or rewrites them
    with ``--update-golden``)."""

    def __init__(self, update: bool) -> None:
        self.update = update

    def diff(self, rel: str, text: str) -> str | None:
        """None where ``tests/golden/<rel>`` holds exactly ``text`` (or was just rewritten to it),
        else why not: a unified diff from the golden file to ``text`` and the hint."""
        path = GOLDEN / rel
        if self.update:
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.is_file() or path.read_text() != text:
                path.write_text(text)
            return None
        missing = not path.is_file()
        want = "" if missing else path.read_text()
        if want == text:
            return None
        diff = "".join(difflib.unified_diff(want.splitlines(keepends=True), text.splitlines(keepends=True),
                                            "/dev/null" if missing else f"tests/golden/{rel}", "printed now", n=2))
        what = "is missing" if missing else "differs from what is printed now"
        return f"tests/golden/{rel} {what}; run pytest --update-golden to accept\n{diff}"

    def check(self, rel: str, text: str) -> None:
        """Fail with a unified diff unless ``tests/golden/<rel>`` holds exactly ``text``."""
        if (why := self.diff(rel, text)) is not None:
            pytest.fail(why, pytrace=False)


@pytest.fixture(scope="session")
def golden(pytestconfig: pytest.Config) -> Golden:
    return Golden(pytestconfig.getoption("--update-golden"))
