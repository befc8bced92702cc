"""Wall time of one ``accv compile`` run, a fresh process per compile (what a user's script or a
make rule pays per kernel), with the generation cache (:mod:`compilers.gen_cache`) off and warm.

For each kernel and each run, the two modes go in alternation (the machine's drift falls on both):
``off`` (``ACCV_GEN_CACHE=off``: every g_θ(α) parsed and lowered in the process) and ``warm``
(a cache folder under build/bench filled by one unmeasured run first). Each run is
``python -m accv compile KERNEL --target T --check 1 --stats -o OUT``; the table gives the best
and median wall seconds and the median of the ``gen`` milliseconds the compile reports (the
process's generation of rule instantiations and IR-to-ISA patterns). The programs of both
modes must be byte-identical (else the script exits 1). Prints a table and writes JSON.

    python bench/cli_cold.py [--kernels amx_k5,gemmini_gemm,...] [--runs 5] [--json build/bench/cli_cold.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from bench._meta import PAPER  # noqa: E402
DEFAULT = "amx_k5,amx_k1,gemmini_gemm,composite_add_mm_add,qkv_attention"
_GEN = re.compile(r"gen ([0-9.]+)")


def target_of(name: str) -> str:
    return "qkv" if name.startswith("qkv") else "amx" if name.startswith("amx") else "gemmini"


def run(kernel: str, cache: str, out: Path) -> tuple[float, float, bytes]:
    """One compile in a fresh process: (wall seconds, gen ms, the program's bytes)."""
    env = dict(os.environ, ACCV_GEN_CACHE=cache)
    cmd = [sys.executable, "-m", "accv", "compile", str(PAPER / f"{kernel}.hlo"), "--target", target_of(kernel),
           "--check", "1", "--stats", "-o", str(out)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"cli_cold: {kernel} ({cache}) exited {p.returncode}: {p.stderr.strip()[-300:]}")
    m = _GEN.search(p.stdout)
    return wall, float(m.group(1)) if m else float("nan"), out.read_bytes()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default=DEFAULT)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", default="build/bench/cli_cold.json")
    a = ap.parse_args()
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    kernels = [k for k in a.kernels.split(",") if k]
    for k in kernels:
        if not (PAPER / f"{k}.hlo").is_file():
            ap.error(f"no paper kernel {k} under {PAPER}")
    work = ROOT / "build" / "bench" / "cli_cold"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    warm = str(work / "gen")
    rows = []
    for k in kernels:
        run(k, warm, work / "fill")                 # fills the warm cache (and the proof cache)
        res: dict[str, list[tuple[float, float]]] = {"off": [], "warm": []}
        progs: dict[str, bytes] = {}
        for i in range(a.runs):
            for mode in (("off", "warm") if i % 2 == 0 else ("warm", "off")):
                wall, gen, prog = run(k, "off" if mode == "off" else warm, work / f"out_{mode}")
                res[mode].append((wall, gen))
                if progs.setdefault(mode, prog) != prog:
                    raise SystemExit(f"cli_cold: {k} ({mode}) compiled to different programs in two runs")
            print(f"  {k}: run {i + 1}/{a.runs}", file=sys.stderr, flush=True)
        same = progs["off"] == progs["warm"]
        for mode, xs in res.items():
            walls = [w for w, _ in xs]
            rows.append({"kernel": k, "cache": mode, "best_s": min(walls), "median_s": statistics.median(walls),
                         "gen_ms_median": statistics.median(g for _, g in xs), "same_program": same})
        if not same:
            print(f"cli_cold: {k}: the programs with the cache off and warm differ", file=sys.stderr)
    print(f"{'kernel':<22} {'cache':<5} {'best s':>7} {'median s':>9} {'gen ms':>8}")
    for r in rows:
        print(f"{r['kernel']:<22} {r['cache']:<5} {r['best_s']:>7.2f} {r['median_s']:>9.2f} {r['gen_ms_median']:>8.1f}")
    out = Path(a.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"runs": a.runs, "python": sys.version.split()[0], "rows": rows}, indent=1))
    print(f"-> {out}")
    return 0 if all(r["same_program"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
