"""The prover infrastructure: generality reported per result (symbolic vs bounded N), the proof
cache (content-hash keys, invalidation by a rule's source, ACCV_PROOF_CACHE), the compiler's
proof gate (:class:`verif.gate.ProofGate`), the parallel runner's summary, and the ``accv prove`` / ``accv rules list``
commands.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest

from accv.cli import main
from rewrite_rules.dsl import Rule, dot, op, rule
from rewrite_rules.library import load
from verif.cache import ProofCache, default_cache_dir
from verif.gate import ProofGate, ProofStore, UnprovenRule
from verif.prover import PROVER_VERSION, ProofResult, prove
from verif.run import run_tasks, summarize, table, tasks_for

SYMBOLIC_RULE = "slice(x, 0, shape(x)) => x"
BOUNDED_RULE = "dot(v, w) vector => reshape(dot(reshape(v), reshape(w)))"   # cheap: one size per instance

#: a private registry: never part of the library
PRIVATE: dict[str, Rule] = {}


@rule("private: add(x, y) => add(y, x)", family="private_ok", dtypes=("s8", "f32"), registry=PRIVATE)
def _p_add_comm(c):
    """Addition commutes (floats too)."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("add", x, y), op("add", y, x), []


@rule("private: subtract(x, y) => subtract(y, x)", family="private_bad", dtypes=("s8",), ranks=(1,),
      expect="invalid", registry=PRIVATE)
def _p_sub_comm(c):
    """Wrong on purpose: subtraction does not commute."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("subtract", x, y), op("subtract", y, x), []


@rule("private: dot(a, b) => add(dot(a, b), dot(a, a))", family="private_bad", dtypes=("s32",), ranks=(1,),
      expect="invalid", registry=PRIVATE)
def _p_dot_bad(c):
    """Wrong on purpose (refuted by the bounded prover): adds a * a to an inner product."""
    a, b = c.tensor("a"), c.tensor("b")
    return dot(a, b, (0,), (0,)), op("add", dot(a, b, (0,), (0,)), dot(a, a, (0,), (0,))), []


@pytest.fixture
def lib() -> dict[str, Rule]:
    return load()


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "proofs"
    monkeypatch.setenv("ACCV_PROOF_CACHE", str(d))
    return d


# -- generality --------------------------------------------------------------------------------------

def test_symbolic_generality_reported(lib: dict[str, Rule]) -> None:
    res = prove(lib[SYMBOLIC_RULE], "s32", 2, timeout_s=20.0)
    assert (res.status, res.generality) == ("proved", "symbolic")
    assert res.line().startswith("[PROVED s32 r2]") and res.to_json()["generality"] == "symbolic"
    assert res.verdict == "proved" and res.to_json()["verdict"] == "proved"


def test_bounded_generality_reported_for_dot_and_reduce(lib: dict[str, Rule]) -> None:
    res = prove(lib[BOUNDED_RULE], "f32", 1, timeout_s=20.0, bound=3)
    assert (res.status, res.generality) == ("proved", "bounded 3")
    assert res.verdict == "bounded" and res.line().startswith("[BOUNDED n<=3 f32 r1]")
    assert "dot has no symbolic-shape encoding" in res.detail
    red = prove(lib["reduce(x, v, {0}) with x.shape[0] = 0 => broadcast(v)"], "s8", 1, timeout_s=20.0, bound=2)
    assert (red.status, red.generality) == ("proved", "bounded 2")
    assert "reduce has no symbolic-shape encoding" in red.detail


def test_refutation_comes_with_a_replayed_counterexample() -> None:
    res = prove(PRIVATE["private: subtract(x, y) => subtract(y, x)"], "s8", 1, timeout_s=20.0)
    assert res.status == "refuted"
    cex = res.counterexample
    assert cex is not None and (cex.lhs_out != cex.rhs_out).any()
    bad = prove(PRIVATE["private: dot(a, b) => add(dot(a, b), dot(a, a))"], "s32", 1, timeout_s=20.0)
    assert bad.status == "refuted" and bad.generality == "bounded"
    assert bad.counterexample is not None


def test_summary_generality_is_the_weakest() -> None:
    rules = {"r": PRIVATE["private: add(x, y) => add(y, x)"]}
    rs = [ProofResult("r", "s8", 1, "proved", "symbolic", 0.1), ProofResult("r", "s8", 2, "proved", "bounded 3", 0.2)]
    (s,) = summarize(rules, rs)
    assert (s.status, s.generality) == ("proved", "bounded 3")
    (s,) = summarize(rules, rs[:1])
    assert s.generality == "symbolic"
    (s,) = summarize(rules, rs + [ProofResult("r", "f32", 1, "unknown", "", 20.0)])
    assert (s.status, s.generality) == ("unknown", "")
    t = table(summarize(rules, rs)).splitlines()
    assert t[0].split() == ["family", "rules", "proved", "bounded", "refuted", "unknown", "error"]
    assert t[1].split() == ["private_ok", "1", "0", "1", "0", "0", "0"]


# -- the cache ---------------------------------------------------------------------------------------

def test_cache_env_var_and_roundtrip(cache_dir: Path, lib: dict[str, Rule]) -> None:
    assert default_cache_dir() == cache_dir
    r = lib[SYMBOLIC_RULE]
    c = ProofCache()
    assert c.dir == cache_dir and c.get(r, "s8", 1, 3) is None
    res = prove(r, "s8", 1, timeout_s=20.0)
    c.put(r, res, 3)
    again = ProofCache()   # a fresh instance reads the file
    rec = again.get(r, "s8", 1, 3)
    assert rec is not None and rec["status"] == "proved" and rec["generality"] == "symbolic"
    assert rec["key"].startswith(r.content_hash())
    assert again.get(r, "s8", 1, 2) is None and again.get(r, "s8", 2, 3) is None   # bound and rank are keyed
    # unknowns are not cached (retried next time)
    c.put(r, ProofResult(r.name, "u8", 1, "unknown", "", 1.0), 3)
    assert ProofCache().get(r, "u8", 1, 3) is None


def test_cache_ignores_torn_lines(tmp_path: Path, lib: dict[str, Rule]) -> None:
    r = lib[SYMBOLIC_RULE]
    c = ProofCache(tmp_path)
    c.put(r, prove(r, "s8", 1, timeout_s=20.0), 3)
    with c.path.open("a") as f:
        f.write('{"key": "trunc')
    assert ProofCache(tmp_path).get(r, "s8", 1, 3) is not None


def _rule_module(path: Path, body: str, modname: str) -> Rule:
    path.write_text(textwrap.dedent(f'''
        from rewrite_rules.dsl import op, rule
        REG = {{}}

        @rule("neg(neg(x)) => x", family="tmp", dtypes=("s8",), ranks=(1,), registry=REG)
        def _r(c):
            """Double negation."""
            x = c.tensor("x")
            {body}
            return op("negate", op("negate", x)), x, []
    '''))
    spec = importlib.util.spec_from_file_location(modname, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return mod.REG["neg(neg(x)) => x"]


def _gate(cache: ProofCache) -> ProofGate:
    """A gate that trusts ``cache`` and proves nothing."""
    return ProofGate(store=ProofStore(cache))


def test_changing_a_rules_source_invalidates_its_proofs(tmp_path: Path) -> None:
    v1 = _rule_module(tmp_path / "tmp_rule_v1.py", "pass", "tmp_rule_v1")
    v2 = _rule_module(tmp_path / "tmp_rule_v2.py", "pass  # edited", "tmp_rule_v2")
    assert v1.name == v2.name and v1.content_hash() != v2.content_hash()
    cache = ProofCache(tmp_path / "c")
    cache.put(v1, prove(v1, "s8", 1, timeout_s=20.0), 3)
    assert _gate(cache).proven([v1], rank_bound=1) == [v1]
    assert cache.get(v2, "s8", 1, 3) is None
    with pytest.raises(UnprovenRule, match="neg\\(neg\\(x\\)\\) => x"):
        _gate(cache).proven([v2], rank_bound=1)


def test_the_gate_passes_only_proved_rules(tmp_path: Path, lib: dict[str, Rule]) -> None:
    ok, bad = PRIVATE["private: add(x, y) => add(y, x)"], PRIVATE["private: subtract(x, y) => subtract(y, x)"]
    cache = ProofCache(tmp_path)
    with pytest.raises(UnprovenRule, match="no passing proof"):
        _gate(cache).proven([ok], rank_bound=2)
    results = run_tasks(PRIVATE, tasks_for([ok, bad], 2), timeout=20.0, bound=3, jobs=1, cache=cache)
    assert {(r.rule, r.status) for r in results} == {(ok.name, "proved"), (bad.name, "refuted")}
    assert _gate(cache).proven([ok], rank_bound=2) == [ok]
    with pytest.raises(UnprovenRule, match="subtract"):
        _gate(cache).proven([ok, bad], rank_bound=2)     # refuted is not proved
    assert _gate(cache).proven([ok, bad], rank_bound=2, strict=False) == [ok]
    # a rank that was never proved is missing too
    with pytest.raises(UnprovenRule, match="rank 3"):
        _gate(cache).proven([ok], rank_bound=3)


# -- the runner (the refuted case, which the CLI cannot show without a wrong rule in the library) -----

def test_run_tasks_and_summarize_report_a_refuted_rule(tmp_path: Path) -> None:
    cache = ProofCache(tmp_path)
    tasks = tasks_for(PRIVATE.values(), 1)
    seen: list[ProofResult] = []
    results = run_tasks(PRIVATE, tasks, timeout=20.0, bound=2, jobs=1, cache=cache, progress=seen.append)
    assert len(results) == len(tasks) == len(seen)
    by = {s.rule: s for s in summarize(PRIVATE, results)}
    assert by["private: add(x, y) => add(y, x)"].status == "proved"
    assert by["private: subtract(x, y) => subtract(y, x)"].status == "refuted"
    assert by["private: dot(a, b) => add(dot(a, b), dot(a, a))"].status == "refuted"
    # what cmd_prove turns into exit status 1
    assert [s.rule for s in by.values() if s.status in ("refuted", "error")] == [
        "private: dot(a, b) => add(dot(a, b), dot(a, a))", "private: subtract(x, y) => subtract(y, x)"]
    # a second run is answered from the cache, refutations included
    again = run_tasks(PRIVATE, tasks, timeout=20.0, bound=2, jobs=1, cache=ProofCache(tmp_path))
    assert sorted((r.rule, r.dtype, r.status) for r in again) == sorted((r.rule, r.dtype, r.status) for r in results)


# -- the CLI -------------------------------------------------------------------------------------------

def test_cli_prove_writes_json(cache_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                               lib: dict[str, Rule]) -> None:
    out = tmp_path / "p.json"
    assert main(["prove", SYMBOLIC_RULE, BOUNDED_RULE, "--jobs", "1", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "2 rules" in text and f"wrote {out}" in text
    lines = [ln for ln in text.splitlines() if ln.startswith("[")]
    assert len(lines) == len(lib[SYMBOLIC_RULE].dtypes) * 3 + len(lib[BOUNDED_RULE].dtypes)
    assert sum(ln.startswith("[PROVED") for ln in lines) == len(lib[SYMBOLIC_RULE].dtypes) * 3
    assert sum(ln.startswith("[BOUNDED n<=3") for ln in lines) == len(lib[BOUNDED_RULE].dtypes)
    data = json.loads(out.read_text())
    assert data["size_bound"] == 3 and data["rank_bound"] == 3
    rules = {r["rule"]: r for r in data["rules"]}
    assert set(rules) == {SYMBOLIC_RULE, BOUNDED_RULE}
    assert rules[SYMBOLIC_RULE]["generality"] == "symbolic"
    assert rules[BOUNDED_RULE]["generality"] == "bounded 3"
    assert (rules[SYMBOLIC_RULE]["verdict"], rules[BOUNDED_RULE]["verdict"]) == ("proved", "bounded")
    for r in rules.values():
        assert r["status"] == "proved" and r["seconds"] >= 0
        for inst in r["instantiations"]:
            assert {"dtype", "rank", "status", "generality", "seconds"} <= set(inst)
    assert data["timing"]["instantiations"] == sum(len(r["instantiations"]) for r in rules.values())
    assert (cache_dir / f"proofs-v{PROVER_VERSION}.jsonl").is_file()
    # a second run is answered from the cache
    assert main(["prove", BOUNDED_RULE, "--jobs", "1", "--quiet"]) == 0
    assert "1 rules" in capsys.readouterr().out


def test_cli_rules_list_prints_every_rule(capsys: pytest.CaptureFixture[str], lib: dict[str, Rule]) -> None:
    assert main(["rules", "list"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) == len(lib)
    for name in lib:
        assert name in out


def test_cli_unknown_rule_is_exit_2_one_line(cache_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prove", "no such rule => nothing"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert len(cap.err.strip().splitlines()) == 1
    assert "no rule, family or file named 'no such rule => nothing'" in cap.err
    assert not cache_dir.exists()


def test_a_query_asked_again_in_a_fresh_context_keeps_its_answer() -> None:
    """check_fresh (check's one retry of a query that ran out of rlimit) translates the assertions
    into a new z3 context: unsat stays unsat, sat stays sat, and its own rlimit still stops it."""
    import z3

    from verif.limits import Limits, check, check_fresh, solver

    x, y = z3.BitVecs("x y", 32)
    s = solver(Limits())
    s.add(x * y != y * x)
    assert check_fresh(s, Limits()) == z3.unsat
    s = solver(Limits())
    s.add(x * y == 6, x > 1, y > 1)
    assert check_fresh(s, Limits()) == z3.sat
    hard = solver(Limits())
    a, b, c = z3.BitVecs("a b c", 64)
    hard.add(a * b * c == 0x1234567890ABCDEF, a > 1, b > 1, c > 1)
    assert check_fresh(hard, Limits(rlimit=1000)) == z3.unknown
    tight = solver(Limits(rlimit=1000))
    tight.add(a * b * c == 0x1234567890ABCDEF, a > 1, b > 1, c > 1)
    assert check(tight) == z3.unknown          # out of rlimit in both contexts: still unknown
