"""bench/amx_native.py's bundle end to end on this host: a small bundle (two tiled layers, a paper
program and Fig. 46's program fed row-major B) built here, its run.py run as the AMX host would run
it (python3 + gcc, from a folder outside the repository, no PYTHONPATH; without AMX it says so and
runs the emulated half only), and the results judged here by the one comparison rule: a corrupted
output byte, or a byte written outside the outputs, fails the judgement."""

from __future__ import annotations

import ast
import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _module(name: str, path: Path):  # noqa: ANN202 - bench/ is not a package
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def native():  # noqa: ANN201
    return _module("amx_native", ROOT / "bench" / "amx_native.py")


@pytest.fixture(scope="module")
def ran(native, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess]:  # noqa: ANN001
    from check.backends import unavailable

    if unavailable("amx", "emulated") is not None:
        pytest.skip(unavailable("amx", "emulated"))
    base = tmp_path_factory.mktemp("amx")
    d, out = base / "bundle", base / "out"
    native.bundle(d, small=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ACCV_PROOF_CACHE")}
    r = subprocess.run([sys.executable, "-I", str(d / "run.py"), str(out)], capture_output=True, text=True,
                       cwd=base, env=env, timeout=600)
    return d, out, r


def test_run_py_needs_only_the_standard_library() -> None:
    tree = ast.parse((ROOT / "bench" / "amx_native_run.py").read_text())
    mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert mods <= set(sys.stdlib_module_names)


def test_the_bundle_runs_its_emulated_half_here_and_is_judged_here(native, ran, tmp_path: Path) -> None:  # noqa: ANN001
    d, out, r = ran
    assert r.returncode == 0, r.stdout + r.stderr
    manifest = json.loads((d / "runs.json").read_text())
    assert [m["name"] for m in manifest["runs"]] == ["i8_33x100x47_bias_sat_relu", "bf16_37x70x29", "amx_k2_vnni",
                                                    "fig46_rowmajor"]
    assert manifest["flags"]["native"] == ["-O2", "-march=sapphirerapids"]
    res = native.judge_runs(d, out)
    if not res["native"]:
        assert "only the emulated half runs" in r.stdout and res["why_not_native"]
    assert all(x["ok"] for x in res["runs"]), res["runs"]
    (i8, bf, k2, fig) = res["runs"]
    assert all(s["emulated"]["ok"] and s["emulated"]["image_eq_simulator"] for s in i8["sets"] + k2["sets"])
    assert all("within the declared bound of the reference" in s["emulated"]["note"] for s in bf["sets"])
    assert not any(s["emulated"]["ok"] for s in fig["sets"]) and not fig["expect_reference"]
    assert native.main(["--judge", str(out), "--bundle", str(d), "--json", str(tmp_path / "r.json")]) == 0


def test_a_wrong_byte_fails_the_judgement(native, ran, tmp_path: Path) -> None:  # noqa: ANN001
    d, out, _ = ran
    bad = tmp_path / "out"
    shutil.copytree(out, bad)
    from compilers.targets import load_target

    _, prog = native.make(native.entries(small=True)[0])
    p = bad / "i8_33x100x47_bias_sat_relu_0.emulated.gz"
    img = bytearray(gzip.decompress(p.read_bytes()))
    img[prog.outputs[0].addr + 17] ^= 0x01                    # one output byte
    p.write_bytes(gzip.compress(bytes(img)))
    q = bad / "amx_k2_vnni_1.emulated.gz"
    img = bytearray(gzip.decompress(q.read_bytes()))
    img[load_target("amx").hbm_size - 1] ^= 0x80              # a byte no program writes
    q.write_bytes(gzip.compress(bytes(img)))
    res = native.judge_runs(d, bad)
    i8, _, k2, _ = res["runs"]
    assert not i8["ok"] and "output 0 element" in i8["sets"][0]["emulated"]["why"]
    assert not k2["ok"] and "outside the outputs differ" in k2["sets"][1]["emulated"]["image"]
