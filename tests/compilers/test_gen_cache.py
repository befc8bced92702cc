"""The generation cache (compilers/gen_cache.py): a cached g_θ(α) graph or lowered pattern equals
the one parsed and lowered in the process, a hit parses nothing, a changed source is a new key,
an unreadable entry is recomputed and rewritten, ``off`` and an unwritable folder only cost
time, and ``accv compile`` writes the same program with the cache off, cold and warm."""

from __future__ import annotations

import itertools
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import semantics.hlo_parser
from compilers import gen_cache, isa
from compilers.act.egraph import terms
from compilers.targets import load_target
from semantics.dtypes import DTYPES
from tests.paths import PAPER

ROOT = Path(__file__).resolve().parents[2]


def _clear() -> None:
    """Forget the process's own copies (the disk cache is what is tested)."""
    isa._instantiate.cache_clear()
    isa._source.cache_clear()
    terms._lower_semantics.cache_clear()


def _sample(target: str, per: int = 3) -> list[tuple[isa.InstrDef, dict[str, int]]]:
    """The first ``per`` α of each instruction whose semantics instantiate (found with the cache
    off: loading a description instantiates some α too, to validate it)."""
    saved = os.environ.get("ACCV_GEN_CACHE")
    os.environ["ACCV_GEN_CACHE"] = "off"
    try:
        acc = load_target(target)
        out = []
        for ins in acc.instructions.values():
            n = 0
            for combo in itertools.product(*(ins.domain(a) for a in ins.alpha)):
                alpha = dict(zip(ins.alpha, combo, strict=True))
                try:
                    ins.graph(alpha)
                except Exception:  # noqa: BLE001 - an α the semantics rejects is not sampled
                    continue
                out.append((ins, alpha))
                n += 1
                if n == per:
                    break
    finally:
        if saved is None:
            del os.environ["ACCV_GEN_CACHE"]
        else:
            os.environ["ACCV_GEN_CACHE"] = saved
        _clear()
    return out


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    d = tmp_path / "gen"
    monkeypatch.setenv("ACCV_GEN_CACHE", str(d))
    _clear()
    yield d
    _clear()


def _no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*a, **k):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("parsed although the entry is cached")
    monkeypatch.setattr(semantics.hlo_parser, "parse_hlo", fail)


def test_dtypes_unpickle_to_the_process_objects() -> None:
    for d in DTYPES.values():
        assert pickle.loads(pickle.dumps(d)) is d


@pytest.mark.parametrize("target", ["qkv", "gemmini", "amx"])
def test_cached_graphs_and_terms_equal_fresh_ones(target: str, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sample = _sample(target)
    assert sample
    monkeypatch.setenv("ACCV_GEN_CACHE", "off")
    _clear()
    fresh = [(ins.graph(a), terms.lower_semantics(ins, a)) for ins, a in sample]
    monkeypatch.setenv("ACCV_GEN_CACHE", str(cache))
    _clear()
    filled = [(ins.graph(a), terms.lower_semantics(ins, a)) for ins, a in sample]   # misses: written
    assert filled == fresh
    assert len(list(cache.rglob("*.pkl"))) == 2 * len(sample)
    _clear()
    _no_parse(monkeypatch)
    hits = [(ins.graph(a), terms.lower_semantics(ins, a)) for ins, a in sample]
    assert hits == fresh
    for (g, t), (fg, ft) in zip(hits, fresh, strict=True):
        assert str(g.entry.root_instruction.type) == str(fg.entry.root_instruction.type)
        assert hash(t) == hash(ft)          # the cached hash was not carried over


def test_a_changed_source_is_a_new_key(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ins, a = _sample("qkv", 1)[0]
    terms.lower_semantics(ins, a)
    n = len(list(cache.rglob("*.pkl")))
    assert n == 2
    _clear()
    monkeypatch.setattr(gen_cache, "_DIGEST", "another source")
    calls = []
    real = semantics.hlo_parser.parse_hlo

    def counting(*args, **kw):  # noqa: ANN002, ANN003, ANN202
        calls.append(1)
        return real(*args, **kw)
    monkeypatch.setattr(semantics.hlo_parser, "parse_hlo", counting)
    terms.lower_semantics(ins, a)
    assert calls == [1]
    assert len(list(cache.rglob("*.pkl"))) == 2 * n


def test_an_unreadable_entry_is_recomputed_and_rewritten(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sample = _sample("gemmini", 1)
    fresh = [ins.graph(a) for ins, a in sample]
    files = sorted(cache.rglob("*.pkl"))
    assert len(files) == len(sample)
    for k, f in enumerate(files):           # truncated, garbage, another class
        f.write_bytes([b"", b"not a pickle", pickle.dumps({"a": 1})][k % 3])
    _clear()
    assert [ins.graph(a) for ins, a in sample] == fresh
    _clear()
    _no_parse(monkeypatch)
    assert [ins.graph(a) for ins, a in sample] == fresh      # rewritten: now hits


def test_off_and_an_unwritable_folder_only_cost_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ins, a = _sample("qkv", 1)[0]
    monkeypatch.setenv("ACCV_GEN_CACHE", "off")
    _clear()
    want = terms.lower_semantics(ins, a)
    assert gen_cache.cache_dir() is None
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    monkeypatch.setenv("ACCV_GEN_CACHE", str(blocker / "gen"))     # under a file: cannot be made
    _clear()
    assert terms.lower_semantics(ins, a) == want
    _clear()


def test_accv_compile_writes_the_same_program_with_the_cache_off_cold_and_warm(tmp_path: Path) -> None:
    outs = []
    for k, cache in enumerate(["off", str(tmp_path / "gen"), str(tmp_path / "gen")]):
        out = tmp_path / f"prog{k}"
        env = dict(os.environ, ACCV_GEN_CACHE=cache)
        p = subprocess.run([sys.executable, "-m", "accv", "compile", str(PAPER / "qkv_attention.hlo"), "--target",
                            "qkv", "--check", "1", "-o", str(out)], cwd=ROOT, env=env, capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        outs.append(out.read_bytes())
        if k == 1:
            assert list((tmp_path / "gen").rglob("*.pkl"))
    assert outs[0] == outs[1] == outs[2]


def _normalized_sample(rules, n: int = 40) -> list[tuple[str, object]]:  # noqa: ANN001
    """Gemmini patterns that normalization changes (a mvin of scale 1.0 becomes a move), named."""
    acc = load_target("gemmini")
    out = []
    for ins, alpha in _sample("gemmini", per=4):
        pat = terms.lower_semantics(ins, alpha)
        if rules.normalize(pat) != pat:
            out.append((f"gemmini|{ins.name}|{sorted(alpha.items())}", pat))
        if len(out) == n:
            break
    assert out and acc
    return out


def test_stored_normalized_patterns_are_the_ones_computed_and_rest_on_the_gate(cache: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """IrRules.normalize_stored: a fresh rule set (a later process) reads the pattern an earlier one
    stored, equal to the one it would compute, without normalizing; where its gate answers a rule
    the stored pattern's normalization asked about otherwise (a proof no longer trusted), the entry
    is not used: the pattern is normalized under this gate."""
    from compilers.act.phase1 import rewrite
    from compilers.compile import rules_for

    first = rules_for(load_target("gemmini"))
    sample = _normalized_sample(first)
    want = {name: first.normalize(pat) for name, pat in sample}
    assert all(first.normalize_stored(name, pat) == want[name] for name, pat in sample)
    assert list(cache.rglob("*.pkl"))

    later = rewrite.IrRules(first.rules, first.insts, gate=first.gate)
    real = rewrite.normalize
    monkeypatch.setattr(rewrite, "normalize", lambda *a: pytest.fail("normalized again: the entry was not read"))
    assert all(later.normalize_stored(name, pat) == want[name] for name, pat in sample)
    monkeypatch.setattr(rewrite, "normalize", real)

    # a gate that refuses every rule: no stored entry applies, and nothing is rewritten
    refusing = rewrite.IrRules(first.rules, first.insts, gate=type(first.gate)(prove_missing=False))
    monkeypatch.setattr(refusing.gate, "passes", lambda *a: False)
    monkeypatch.setattr(refusing.gate, "ok", lambda inst: False)
    assert all(refusing.normalize_stored(name, pat) == pat for name, pat in sample)
