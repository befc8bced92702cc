"""--slow-part K/N (tests/conftest.py): which part of the slow tests a run takes."""

from __future__ import annotations

import pytest

from tests.conftest import slow_part


def test_slow_part_parses_and_rotates() -> None:
    assert slow_part("1/4") == (1, 4)
    k, n = slow_part("auto/4")
    assert n == 4 and 0 <= k < 4
    for bad in ("4/4", "x/2", "1/0", "1"):
        with pytest.raises(pytest.UsageError):
            slow_part(bad)


def test_every_slow_test_is_in_exactly_one_part(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from tests.conftest import pytest_addoption, pytest_collection_modifyitems  # noqa: F401")
    pytester.makepyfile("""
        import pytest
        @pytest.mark.slow
        @pytest.mark.parametrize("i", range(12))
        def test_s(i):
            pass
        def test_fast():
            pass
    """)
    ran = []
    for k in range(3):
        r = pytester.runpytest("-p", "no:cacheprovider", "-m", "", f"--slow-part={k}/3", "-q")
        out = r.parseoutcomes()
        ran.append(out.get("passed", 0) - 1)       # the fast test runs in every part
    assert sum(ran) == 12 and all(n > 0 for n in ran)
