"""The import layering: pyproject's ``[tool.importlinter]`` contracts (the layers from the CLI down
to the semantics, no cycles between the modules of a package) hold, as ``lint-imports`` checks
them; and benchmarks and scripts import the library, never ``tests/``."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_import_contracts_hold() -> None:
    if not LINT_IMPORTS.is_file():
        pytest.skip(f"import-linter is not installed ({LINT_IMPORTS} is missing; pip install -e '.[test]')")
    # this checkout's packages, not an installed copy: lint-imports puts its working directory first too
    path = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    r = subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.fail(f"lint-imports found broken import contracts (pyproject.toml):\n{r.stdout}{r.stderr}",
                    pytrace=False)


def _imported_modules(path: Path) -> set[str]:
    mods: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods.add(node.module)
    return mods


@pytest.mark.parametrize("folder", ["bench", "scripts"])
def test_benchmarks_and_scripts_do_not_import_tests(folder: str) -> None:
    files = sorted((REPO / folder).rglob("*.py"))
    assert files, f"no Python files under {folder}/"
    bad = {str(p.relative_to(REPO)): sorted(m for m in _imported_modules(p) if m == "tests" or m.startswith("tests."))
           for p in files}
    assert not {k: v for k, v in bad.items() if v}, "import the library (e.g. fuzz/), not tests/"


#: the modules that read or write the campaign database's tables
_STORE_MODULES = {"fuzz/store.py", "fuzz/aggregates.py", "fuzz/schema.py"}
_TABLE_SQL = re.compile(r"\b(FROM|INTO|UPDATE|TABLE(?: IF NOT EXISTS)?|JOIN)\s+(campaigns|cases|buckets|rtl_coverage)\b")


def test_the_campaign_database_is_read_through_the_store() -> None:
    """SQL on the campaign database's tables appears only in fuzz/store.py, fuzz/aggregates.py and
    fuzz/schema.py: the rest of the library (the campaign, triage, reports, the CLI) calls Store methods."""
    packages = ("accv", "check", "compilers", "fuzz", "reports", "rtl_harness", "rewrite_rules", "semantics", "verif")
    hits = sorted(str(p.relative_to(REPO)) for pkg in packages for p in (REPO / pkg).rglob("*.py")
                  if str(p.relative_to(REPO)) not in _STORE_MODULES and _TABLE_SQL.search(p.read_text()))
    assert not hits, f"SQL on the campaign tables outside the store: {hits}"
