"""``accv prove --scheduler``: proofs on a Dask cluster (a LocalCluster on 127.0.0.1, dashboard
off) give the same verdicts as local workers, for library rules and a user's ``--rule`` text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accv.cli import main

distributed = pytest.importorskip("distributed")

RULES = ["transpose(transpose(x, (1,0)), (1,0)) => x", "slice(slice(x)) => slice(x)"]
MINE = "subtract(x, negate(y)) => add(y, x)"
WRONG = "subtract(x, y) => subtract(y, x)"


@pytest.fixture(scope="module")
def cluster():  # noqa: ANN201
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as c:
        yield c


def _verdicts(path: Path) -> dict[tuple[str, str, int], str]:
    data = json.loads(path.read_text())
    return {(i["rule"], i["dtype"], i["rank"]): i["verdict"] for r in data["rules"] for i in r["instantiations"]}


def test_cluster_verdicts_match_local(cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    from rewrite_rules.library import load

    names = [n for n in load() if n in RULES]  # (library rules: every claimed dtype)
    assert len(names) == len(RULES)
    args = ["prove", *names, "--rule", MINE, "--rule", WRONG, "--dtype", "s8", "--dtype", "u8",
            "--rank", "1", "--quiet", "--no-cache"]
    out = {}
    for mode, extra in (("local", ["--jobs", "1"]), ("dask", ["--scheduler", cluster.scheduler_address])):
        monkeypatch.setenv("ACCV_PROOF_CACHE", str(tmp_path / mode))
        js = tmp_path / f"{mode}.json"
        out[mode] = (main([*args, *extra, "--json", str(js), "--cex-dir", str(tmp_path / mode)]), _verdicts(js))
    diff = {k: (out["local"][1].get(k), v) for k, v in out["dask"][1].items() if out["local"][1].get(k) != v}
    assert not diff and out["dask"][1].keys() == out["local"][1].keys()
    assert out["dask"][0] == out["local"][0]
    code, verdicts = out["dask"]
    assert code == 1   # the wrong rule is refuted on the cluster too
    assert {v for (r, _, _), v in verdicts.items() if r.startswith("subtract(x, y)")} == {"refuted"}
    assert {v for (r, _, _), v in verdicts.items() if not r.startswith("subtract(x, y)")} <= {"proved", "bounded"}


def test_unreachable_scheduler_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "--rule", MINE, "--dtype", "s8", "--no-cache", "--quiet",
                 "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert "cannot connect" in capsys.readouterr().err
