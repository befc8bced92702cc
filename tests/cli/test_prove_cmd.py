"""``accv prove`` as a user and a CI see it: rule files (the documented examples), ``--rule``,
verdicts and exit codes, JSON and JUnit output, refutations printed as replayable HLO pairs."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from accv.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "proofs"
    monkeypatch.setenv("ACCV_PROOF_CACHE", str(d))
    return d


@pytest.mark.parametrize("name", ["my_rules.txt", "my_rules.py"])
def test_documented_example_files_prove(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    js = tmp_path / "out.json"
    assert main(["prove", str(EXAMPLES / name), "--jobs", "2", "--quiet", "--json", str(js)]) == 0
    data = json.loads(js.read_text())
    assert data["exit_code"] == 0 and data["rules"]
    assert all(r["verdict"] in ("proved", "bounded") for r in data["rules"])
    assert {r["family"] for r in data["rules"]} == {"my_rules"}


def test_rule_file_parse_error_is_file_line_col_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "r.txt"
    f.write_text("# mine\nadd(x, 0) => x  for s8\nadd(x, => x\n")
    assert main(["prove", str(f)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"accv: {f}:3:4: '(' was never closed"
    f.write_text("add(x, 0) => x  for s9\n")
    assert main(["prove", str(f)]) == 2
    assert f"{f}:1:21: unknown dtype 's9'" in capsys.readouterr().err
    f.write_text("frob(x) => x\n")
    assert main(["prove", str(f)]) == 2
    assert f"{f}:1:1: unknown operator 'frob'" in capsys.readouterr().err
    py = tmp_path / "r.py"
    py.write_text("from rewrite_rules.api import rule\n\nx = = 1\n")
    assert main(["prove", str(py)]) == 2
    assert f"{py}:3:" in capsys.readouterr().err


def test_refutation_prints_a_replayable_hlo_pair(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cex = tmp_path / "cex"
    rc = main(["prove", "--rule", "compare(x, inf, GT, TOTALORDER) => compare(x, x, NE)  rank 1  if x.shape[0] >= 4",
               "--dtype", "f32", "--jobs", "1", "--cex-dir", str(cex)])
    assert rc == 1
    out = capsys.readouterr()
    assert "[REFUTED f32 r1]" in out.out
    runs = re.findall(r"accv run (\S+) --inputs (\S+) --out (\S+)", out.err)
    assert len(runs) == 2
    sums = []
    for hlo, inputs, o in runs:
        assert main(["run", hlo, "--inputs", inputs, "--out", o]) == 0
        sums.append(re.search(r"sha256:(\w+)", capsys.readouterr().out).group(1))
    assert sums[0] != sums[1]      # the two sides really differ on the printed inputs


def test_exit_codes_distinguish_verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bounded = "reduce(reverse(x, [0]), 0, [0], add) => reduce(x, 0, [0], add)  for s8  rank 1"
    assert main(["prove", "--rule", bounded, "--jobs", "1", "--quiet"]) == 0
    assert main(["prove", "--rule", bounded, "--jobs", "1", "--quiet", "--require", "proved"]) == 5
    assert "only BOUNDED" in capsys.readouterr().err
    # a left side no instance satisfies: UNKNOWN (vacuous), exit 4
    assert main(["prove", "--rule", "reverse(x, [1]) => x  for s8  rank 1", "--jobs", "1", "--quiet"]) == 4
    assert main(["prove", "--rule", "subtract(x, y) => subtract(y, x)", "--dtype", "s8", "--jobs", "1",
                 "--quiet", "--cex-dir", str(tmp_path)]) == 1
    assert main(["prove", "--rule", "add(x, y) => add(y, x)", "--dtype", "s8", "--jobs", "1", "--quiet",
                 "--require", "proved"]) == 0


def test_bf16_iota_false_from_258_is_bounded_not_proved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: bf16 cannot count past 256, so the rule is false from n = 258 on; the
    symbolic query does not finish within its rlimit (z3's deterministic resource limit, small here to
    keep the test short) and the bounded proof must say BOUNDED, not PROVED."""
    rule = "convert(iota(0, bf16), s32) => iota(0, s32)  rank 1"
    js = tmp_path / "o.json"
    assert main(["prove", "--rule", rule, "--dtype", "s32", "--jobs", "1", "--rlimit", "3000000", "--no-cache", "--json",
                 str(js)]) == 0
    out = capsys.readouterr().out
    assert "[BOUNDED n<=3 s32 r1]" in out and "rlimit 3000000 exceeded" in out
    assert json.loads(js.read_text())["rules"][0]["verdict"] == "bounded"
    assert main(["prove", "--rule", rule, "--dtype", "s32", "--jobs", "1", "--require", "proved", "--quiet"]) == 5


def test_junit_has_one_testcase_per_instantiation(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    rc = main(["prove", "--rule", "subtract(x, y) => subtract(y, x)  for s8 u8  rank 1 2",
               "--rule", "add(x, y) => add(y, x)  for s8  rank 1", "--jobs", "1", "--quiet", "--junit", str(junit),
               "--cex-dir", str(tmp_path)])
    assert rc == 1
    root = ET.parse(junit).getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == 5
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert len(failed) == 4 and all("subtract" in n for n in failed)
    assert root.get("tests") == "5" and root.get("failures") == "4"


def test_xla_spellings_parse_and_the_name_keeps_them() -> None:
    """XLA's logical operators (Python keywords as bare names) and hyphenated opcodes read in the
    text form; a hyphen elsewhere stays arithmetic and the rule's name is the line as written."""
    from rewrite_rules.dsl import Op
    from rewrite_rules.text import RuleSyntaxError, parse_rule

    r = parse_rule("logical_not(logical_not(p)) => p  for pred  rank 1")
    lhs = r.instantiate("pred", 1)[1]
    assert isinstance(lhs, Op) and lhs.opcode == "not" and lhs.args[0].opcode == "not"
    r = parse_rule("shift-right-logical(x, 0) => x  for u8  rank 1")
    assert r.name == "shift-right-logical(x, 0) => x for u8 rank 1"
    assert r.instantiate("u8", 1)[1].opcode == "shift-right-logical"
    r = parse_rule("slice(x, [a], [x.shape[0]-a]) => x  for s8  rank 1  if a == 0")   # x.shape[0]-a: minus
    assert r.instantiate("s8", 1)[1].opcode == "slice"
    with pytest.raises(RuleSyntaxError, match="<rule>:1:1: expected a tensor"):   # not an opcode: no - such(x)
        parse_rule("no-such(x) => x  for s8  rank 1")
