"""The figures in docs/ are the committed benchmark results: every table between
``<!-- table:NAME -->`` and ``<!-- /table -->`` in docs/*.md and README.md is exactly what
``bench/docs_tables.py`` renders from ``bench/results/*.json`` (as docs/semantics.md's operator
table is what ``semantics.docs`` renders from the operator table, tests/cli/test_cli.py).
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _docs_tables():  # noqa: ANN202 - the module, loaded from bench/ (not a package)
    spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "bench" / "docs_tables.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("docs_tables", mod)
    spec.loader.exec_module(mod)
    return mod


dt = _docs_tables()


def test_docs_tables_are_rendered_from_bench_results() -> None:
    stale = dt.stale_tables()
    assert not stale, (f"docs tables differ from bench/results: {stale}; "
                       "run python bench/docs_tables.py --write (after the benchmark that writes the JSON)")


def test_every_table_is_used_and_every_result_is_read() -> None:
    """Each renderer has its marker in some doc, and each results file feeds some table: a result
    nobody renders, or a table nobody shows, is a figure that can silently go stale."""
    used = set()
    for p in dt.DOCS:
        used |= set(re.findall(r"<!-- table:([a-z0-9_]+) -->", p.read_text()))
    assert used == set(dt.TABLES), f"tables without a marker: {set(dt.TABLES) - used}; unknown: {used - set(dt.TABLES)}"
    read = {p.name for p in dt.RESULTS.glob("*.json")}
    expected = {"compile_time_paper.json", "compile_time_vnni.json", "compile_time_stress.json",
                "compile_time_fuzz.json", "composite_movement.json", "amx_emulated.json",
                "fuzz_throughput.json", "prove_library.json", "prove_library_before.json", "prove_library_full.json", "xla_simplifier.json",
                "report_scale.json", "tiling_gemm.json", "tiling_conv.json", "tiling_gemm_bf16.json", "real_layers.json",
                "act_corpus_host.json"}
    optional = {"amx_native.json"}      # a native run on an AMX host (docs/amx.md); its table says when absent
    randoms = {p for p in read if p.startswith("random_")}
    assert expected <= read and randoms, f"missing results: {expected - read or 'random_*.json'}"
    assert read - optional == expected | randoms, f"results no table reads: {read - expected - randoms - optional}"


def test_a_changed_result_makes_the_table_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check sees a figure that moved: one kernel's instruction count changed in a copy of the
    results makes docs/compiler.md's table stale, and --write brings it back in line."""
    res = tmp_path / "results"
    shutil.copytree(dt.RESULTS, res)
    d = json.loads((res / "compile_time_paper.json").read_text())
    rec = next(r for r in d["kernels"] if r["outcome"] == "compiled")
    rec["instructions"] += 1
    (res / "compile_time_paper.json").write_text(json.dumps(d))
    doc = tmp_path / "compiler.md"
    shutil.copy(ROOT / "docs" / "compiler.md", doc)
    monkeypatch.setattr(dt, "RESULTS", res)
    assert dt.sync_file(doc) == ["compile_time_paper"]
    assert dt.sync_file(doc, write=True) == ["compile_time_paper"]
    assert dt.sync_file(doc) == []
    assert f"| {rec['kernel']} | {rec['target']} | {rec['instructions']} |" in doc.read_text()


def test_a_hand_edited_table_is_stale(tmp_path: Path) -> None:
    doc = tmp_path / "compiler.md"
    text = (ROOT / "docs" / "compiler.md").read_text()
    i = text.index("<!-- table:composite_movement -->")
    j = text.index("<!-- /table -->", i)
    doc.write_text(text[:j] + "| one more row |\n" + text[j:])
    assert dt.sync_file(doc) == ["composite_movement"]


def test_markers_are_checked(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text("<!-- table:no_such_table -->\n<!-- /table -->\n")
    with pytest.raises(dt.DocsTableError, match="unknown table 'no_such_table'"):
        dt.sync_file(doc)
    doc.write_text("<!-- table:composite_movement -->\n")
    with pytest.raises(dt.DocsTableError, match="has no <!-- /table -->"):
        dt.sync_file(doc)


#: the docs that state what is, without dated accounts of past work (docs/rules.md joins once
#: its own rewrite lands)
_CURRENT = ["docs/amx.md", "docs/compiler.md", "docs/middle.md", "docs/fuzzing.md", "docs/isa.md", "docs/rtl.md", "docs/rtl-qkv.md", "docs/semantics.md", "README.md"]
_HISTORY = re.compile(r"session of 20\d\d|\b(first|second|third|fourth|fifth|sixth|seventh) session\b"
                      r"|\bissue \d+ (is )?(marked )?blocked|\bat [0-9a-f]{7}\b")


@pytest.mark.parametrize("name", _CURRENT)
def test_docs_state_no_history(name: str) -> None:
    text = (ROOT / name).read_text()
    hits = [m.group(0) for m in _HISTORY.finditer(text)]
    assert not hits, f"{name} tells history ({hits[:3]}): state what is, with the command that shows it"
