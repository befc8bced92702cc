"""bench/amx_native.py's bundle end to end on this host: a tiny bundle (one int8 layer with a tail,
one bf16 layer) built here, its run.py run as the AMX host would run it (python3 + numpy + gcc, from
a folder outside the repository, no PYTHONPATH): without AMX it says so and runs the emulated half
only; a corrupted expected byte fails it; its bound check is semantics.compare's rule."""

from __future__ import annotations

import ast
import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from semantics.compare import Bound, compare

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str, path: Path):  # noqa: ANN202 - bench/ is not a package
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(d: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ACCV_PROOF_CACHE")}
    return subprocess.run([sys.executable, "-I", str(d / "run.py"), *args], capture_output=True, text=True,
                          cwd=d.parent, env=env, timeout=600)


@pytest.fixture(scope="module")
def bundle_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from accv.backends import unavailable

    if unavailable("amx", "emulated") is not None:
        pytest.skip(unavailable("amx", "emulated"))
    d = tmp_path_factory.mktemp("amx") / "bundle"
    mod = _module("amx_native", ROOT / "bench" / "amx_native.py")
    mod.bundle(d, names=("i8_33x100x47_bias_sat_relu", "bf16_37x70x29"))
    return d


def test_run_py_needs_only_the_standard_library_and_numpy() -> None:
    tree = ast.parse((ROOT / "bench" / "amx_native_run.py").read_text())
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert mods - set(sys.stdlib_module_names) == {"numpy"}


def test_the_bundle_runs_its_emulated_half_here(bundle_dir: Path, tmp_path: Path) -> None:
    manifest = json.loads((bundle_dir / "runs.json").read_text())
    assert [r["name"] for r in manifest["runs"]] == ["i8_33x100x47_bias_sat_relu", "bf16_37x70x29"]
    assert manifest["flags"]["native"] == ["-O2", "-march=sapphirerapids"]
    r = _run(bundle_dir, "--json", str(tmp_path / "res.json"))
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads((tmp_path / "res.json").read_text())
    if not res["native"]:
        assert "only the emulated half runs" in r.stdout and res["why_not_native"]
    assert "summary: 2 of 2 layers as expected" in r.stdout
    (i8, bf) = res["runs"]
    assert all(s["emulated_eq_bundle"] and s["emulated_eq_reference"] for s in i8["sets"])
    assert all(s["emulated_eq_model"] and s["emulated_within_bound"] for s in bf["sets"])
    assert not all(s["emulated_eq_reference"] for s in bf["sets"])    # the sum's order differs from the chain


def test_a_wrong_expected_byte_fails_the_bundle(bundle_dir: Path, tmp_path: Path) -> None:
    import shutil

    d = tmp_path / "bad"
    shutil.copytree(bundle_dir, d, ignore=shutil.ignore_patterns("bin"))
    p = d / "img" / "bf16_37x70x29_0.model.gz"
    model = bytearray(gzip.decompress(p.read_bytes()))
    model[40] ^= 0x01                                  # one mantissa bit of one output
    p.write_bytes(gzip.compress(bytes(model)))
    r = _run(d, "--json", str(tmp_path / "res.json"))
    assert r.returncode == 1 and "!= MODEL" in r.stdout and "summary: 1 of 2" in r.stdout


def test_the_runners_bound_rule_is_compares() -> None:
    run = _module("amx_native_run", ROOT / "bench" / "amx_native_run.py")
    rng = np.random.default_rng(3)
    ref = (rng.standard_normal(400) * 100).astype(np.float32)
    ref[:6] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0]
    tol = np.abs(rng.standard_normal(400)) * 1e-3
    anything = rng.random(400) < 0.05
    anything[:6] = False
    for moved, special, want in ((0.5, [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0], True),
                                 (0.999, [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0], None),
                                 (1.001, [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0], None),
                                 (3.0, [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0], False),
                                 (0.5, [np.nan, np.inf, np.inf, -0.0, 0.0, 1.0], False),
                                 (0.5, [1.0, np.inf, -np.inf, -0.0, 0.0, 1.0], False)):
        got = (ref.astype(np.float64) + moved * tol * rng.choice([-1, 1], 400)).astype(np.float32)
        got[:6] = special
        mine, _, _ = run.within(got.view(np.uint8), ref.view(np.uint8), tol, anything)
        theirs = compare([ref], [got], [Bound(ulps=0, abs_tol=tol, anything=anything)])
        assert mine == theirs.within_bound
        assert want is None or mine == want
