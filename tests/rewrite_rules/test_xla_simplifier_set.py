"""rewrite_rules/xla_simplifier.txt (XLA's simplifier rewrites as TensorRight restated them) and its
results table: the file parses, accounts for each of TensorRight's 118 implemented rules exactly
once, and bench/results/xla_simplifier.json is the proof of exactly that file, with each refuted
(rewrite, dtype) replayed on the interpreter and on XLA. Fast: nothing is proved here; the slow
test replays one refutation on XLA itself."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from rewrite_rules.text import parse_rules

ROOT = Path(__file__).resolve().parents[2]


def _bench(name: str) -> ModuleType:
    if str(ROOT / "bench") not in sys.path:
        sys.path.insert(0, str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, mod)
    spec.loader.exec_module(mod)
    return mod


xs = _bench("xla_simplifier")
rp = _bench("xla_simplifier_replay")
DATA = json.loads(xs.RESULTS.read_text())


def test_the_rule_file_parses_and_accounts_for_every_tensorright_rule() -> None:
    rules = parse_rules(xs.RULE_FILE.read_text(), file=str(xs.RULE_FILE))
    meta = xs.rule_meta()
    assert [r.name for r in rules] == [d["rule"] for d in meta["rules"]]
    ids = [d["source"] for d in meta["rules"] if d["source"] != "XLA"] + [d["id"] for d in meta["not_expressible"]]
    assert sorted(ids) == sorted(xs.TR_IDS) and len(ids) == xs.TR_COUNTS["implemented"] == 118
    for d in meta["rules"]:   # a constant named by a tag is a variable of its rule
        assert all(c in d["rule"].split("=>")[0] for c in d["consts"]), d


def test_a_rule_file_missing_a_tensorright_rule_is_rejected(tmp_path: Path) -> None:
    text = xs.RULE_FILE.read_text()
    line = next(ln for ln in text.splitlines() if ln.rstrip().endswith("# TR iota/rule01"))
    bad = tmp_path / "xla_simplifier.txt"
    bad.write_text(text.replace(line + "\n", ""))
    with pytest.raises(xs.RuleFileError, match="iota/rule01"):
        xs.rule_meta(bad)
    bad.write_text(text.replace("# TR iota/rule01", "# TR add/rule01"))
    with pytest.raises(xs.RuleFileError, match="repeated"):
        xs.rule_meta(bad)


def test_the_results_are_the_proof_of_this_file() -> None:
    meta = xs.rule_meta()
    want = {d["rule"]: d for d in meta["rules"]}
    assert {r["rule"] for r in DATA["rules"]} == set(want)
    assert DATA["tensorright"]["not_expressible"] == meta["not_expressible"]
    for r in DATA["rules"]:
        assert (r["source"], r["consts"]) == (want[r["rule"]]["source"], want[r["rule"]]["consts"])
        refuted = {i["dtype"] for i in r["instantiations"] if i["verdict"] == "refuted"
                   and i.get("counterexample", {}).get("rhs_hlo")}
        on_xla = [i for i in r["instantiations"] if "xla" in i]
        assert {i["dtype"] for i in on_xla} == refuted, r["rule"]
        assert all(i["xla"]["interpreter_replayed"] for i in on_xla), r["rule"]
        assert all(i["interpreter_replayed"] for i in r["instantiations"] if i["verdict"] == "refuted"
                   and i.get("counterexample", {}).get("rhs_hlo")), r["rule"]


def test_the_table_counts_all_175() -> None:
    text = xs.table(DATA)
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| TensorRight |")]
    assert len(rows) == len(DATA["rules"]) + len(DATA["tensorright"]["not_expressible"])
    tr_rows = [ln for ln in rows if not ln.startswith("| XLA |")]
    assert len(tr_rows) == 118
    assert text.startswith("TensorRight's 175 rewrites: ") and "57 not named by TensorRight's artifact" in text


def test_constants_replace_parameters_and_the_rest_are_renumbered() -> None:
    hlo = ("HloModule m\nENTRY e {\n  x = f32[2] parameter(0)\n  c = f32[2] parameter(1)\n"
           "  y = f32[2] parameter(2)\n  a = f32[2] add(x, c)\n  ROOT r = f32[2] add(a, y)\n}\n")
    g, params = rp.with_constants(hlo, {"c": np.array([-0.0, 1e-45], np.float32)})
    assert params == ["x", "y"]
    ins = {i.name: i for i in g.entry.instructions}
    assert ins["c"].opcode == "constant" and ins["y"].attrs["index"] == 1
    assert ins["c"].attrs["literal"].to_array().view(np.uint32).tolist() == [0x80000000, 1]


def test_outcome_says_where_a_rewrite_happened() -> None:
    assert rp.outcome("rhs", "lhs", "lhs").startswith("applied") and "algebraic simplifier" in rp.outcome("rhs", "lhs", "lhs")
    assert "StableHLO" in rp.outcome("rhs", "rhs", "rhs")
    assert rp.outcome("lhs", "lhs", "lhs").startswith("not applied")
    assert rp.outcome("neither", "neither", "neither").startswith("XLA gives neither")


@pytest.mark.slow
@pytest.mark.xla
def test_an_unsound_rewrite_shows_on_xla() -> None:
    """add(x, 0) => x is false for f32 (-0.0 + 0 = +0): XLA computes the right side's -0.0."""
    pytest.importorskip("jax")
    rule = next(r for r in DATA["rules"] if r["rule"].startswith("add(x, 0) => x "))
    inst = next(i for i in rule["instantiations"] if i["dtype"] == "f32" and i["verdict"] == "refuted")
    data = {"rules": [{"rule": rule["rule"], "instantiations": [json.loads(json.dumps(inst))]}]}
    assert rp.replay_all(data, {}) == 1
    x = data["rules"][0]["instantiations"][0]["xla"]
    assert x["interpreter_replayed"] and x["xla_default"] == "rhs" and x["outcome"].startswith("applied")
