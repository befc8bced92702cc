"""Where a benchmark's kernels and JSON are, and what it records about the run (the machine, the
date, the commit).

The figures in docs/ are rendered from ``bench/results/*.json`` by ``bench/docs_tables.py``; every
benchmark that feeds a docs table writes there by default, and stamps its JSON with
:func:`run_meta` so that a table can say which machine and which commit measured it.
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
#: the Act paper's kernels, kept in the repository (the example regression suite)
PAPER = ROOT / "examples" / "regression"
#: Act's public kernel corpus as published (fuzz kernels, library kernels, paper kernels; tests/corpus/act)
ACT_CORPUS = ROOT / "tests" / "corpus" / "act"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str:
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty", "--abbrev=7"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return r.stdout.strip() or "unknown"


def run_meta() -> dict:
    """The run's date (UTC), machine (CPU model, cores, OS, Python) and commit, for a result's JSON."""
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "machine": f"{_cpu_model()}, {os.cpu_count()} cores, {platform.system()} {platform.release()}, "
                       f"Python {platform.python_version()}",
            "commit": _commit()}
