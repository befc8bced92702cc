"""Compile time of this checkout against another git revision, interleaved (issue 5).

This shared machine's speed drifts by up to 2x over minutes, so two separate runs of
``bench/compile_time.py`` cannot tell a 10% change from the drift. Here two worker processes --
one on this checkout, one on a worktree of ``--base`` (made under build/ab/, reused) -- compile
the same kernels in alternation, trial by trial, swapping which goes first; each kernel's best CPU
time per side is compared, and its mean (the steady state, where the cyclic collector's pauses
show: each worker compiled the kernel once before its trials). Both read the same proof cache (this checkout's, or $ACCV_PROOF_CACHE),
so both compile with the same proven rules. Each side's programs are compared too: a change meant
to be exact must leave them byte-identical. Prints a table and writes JSON.

    python bench/compile_ab.py --base HEAD~3 [--kernels gemmini_gemm,amx_k1] [--trials 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "examples" / "regression"   # bench/_meta.PAPER (this script runs without the package)
DEFAULT = ("gemmini_gemm,gemmini_add,gemmini_mac,composite_add_add_add,composite_mm_plus_mm,"
           "composite_mm_mm,qkv_attention,amx_k1,amx_k3,amx_k5")

# the worker: one kernel name per line in, "<cpu seconds> <hash of the program text>" per line out
WORKER = r"""
import hashlib, os, sys, time
root = sys.argv[1]
os.chdir(root)
sys.path.insert(0, root)
try:
    from compilers.compile import compile as compile_graph
except ImportError:                      # a checkout from before compilers.compile
    from compilers.act import compile_graph
from compilers.program import print_asm
from compilers.targets import load_target
from semantics.hlo_parser import parse_file
seen = {}
for line in sys.stdin:
    name, path = line.split()
    if name not in seen:
        tgt = "amx" if name.startswith("amx") else "qkv" if name.startswith("qkv") else "gemmini"
        seen[name] = (parse_file(path), load_target(tgt))
        compile_graph(*seen[name])          # first compile: rule instantiation, pattern generation
    g, acc = seen[name]
    t = time.process_time()
    r = compile_graph(g, acc)
    dt = time.process_time() - t
    print(dt, hashlib.sha256(print_asm(r.program).encode()).hexdigest()[:16], flush=True)
"""


def worktree(rev: str) -> Path:
    """A detached worktree of ``rev`` under build/ab/ (made once per commit)."""
    sha = subprocess.run(["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT, check=True,
                         capture_output=True).stdout.decode().strip()
    path = ROOT / "build" / "ab" / sha[:12]
    if not (path / "compilers").is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        # a worktree whose folder was deleted (build/ cleaned) is still registered: forget it first
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, check=True, capture_output=True)
        subprocess.run(["git", "worktree", "add", "--detach", str(path), sha], cwd=ROOT, check=True,
                       capture_output=True)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", required=True, help="git revision to compare with (e.g. HEAD~3)")
    ap.add_argument("--kernels", default=DEFAULT, help="comma-separated paper kernels")
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--json", default=str(ROOT / "build" / "bench" / "compile_ab.json"))
    a = ap.parse_args(argv)
    names = [k for k in a.kernels.split(",") if k]
    for k in names:
        if not (PAPER / f"{k}.hlo").exists():
            print(f"compile_ab: no paper kernel {k!r} in {PAPER}", file=sys.stderr)
            return 2
    try:
        base = worktree(a.base)
    except subprocess.CalledProcessError as e:
        why = (e.stderr or b"").decode(errors="replace").strip().splitlines()
        print(f"compile_ab: no worktree of {a.base!r}: {why[-1] if why else e}", file=sys.stderr)
        return 2
    env = dict(os.environ, ACCV_PROOF_CACHE=os.environ.get("ACCV_PROOF_CACHE", str(ROOT / "build" / "proofs")))
    procs = {side: subprocess.Popen([sys.executable, "-c", WORKER, str(d)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True, env=env)
             for side, d in (("base", base), ("head", ROOT))}
    times: dict[str, dict[str, list[float]]] = {s: {k: [] for k in names} for s in procs}
    prog: dict[str, dict[str, str]] = {s: {} for s in procs}
    try:
        for t in range(a.trials):
            for k in names:
                for side in (("base", "head") if t % 2 == 0 else ("head", "base")):
                    p = procs[side]
                    p.stdin.write(f"{k} {PAPER / f'{k}.hlo'}\n")  # type: ignore[union-attr]
                    p.stdin.flush()  # type: ignore[union-attr]
                    line = p.stdout.readline()  # type: ignore[union-attr]
                    if not line:
                        print(f"compile_ab: the {side} worker stopped on {k}", file=sys.stderr)
                        return 1
                    dt, h = line.split()
                    times[side][k].append(float(dt))
                    prog[side][k] = h
            print(f"trial {t + 1}/{a.trials}", file=sys.stderr)
    finally:
        for p in procs.values():
            p.stdin.close()  # type: ignore[union-attr]
            p.wait()
    print(f"base {a.base} ({base.name}) vs this checkout; CPU ms, best and mean of {a.trials}, alternating")
    print(f"{'kernel':24s} {'base ms':>9s} {'head ms':>9s} {'ratio':>6s} {'base mean':>10s} {'head mean':>10s} "
          f"{'ratio':>6s}  program")
    rows = []
    for k in names:
        b, h = min(times["base"][k]) * 1e3, min(times["head"][k]) * 1e3
        bm, hm = statistics.mean(times["base"][k]) * 1e3, statistics.mean(times["head"][k]) * 1e3
        same = prog["base"][k] == prog["head"][k]
        rows.append({"kernel": k, "base_ms": round(b, 2), "head_ms": round(h, 2), "base_mean_ms": round(bm, 2),
                     "head_mean_ms": round(hm, 2), "same_program": same})
        print(f"{k:24s} {b:9.1f} {h:9.1f} {h / b:6.2f} {bm:10.1f} {hm:10.1f} {hm / bm:6.2f}  "
              f"{'identical' if same else 'DIFFERENT'}")
    sb, sh = sum(r["base_ms"] for r in rows), sum(r["head_ms"] for r in rows)
    sbm, shm = sum(r["base_mean_ms"] for r in rows), sum(r["head_mean_ms"] for r in rows)
    print(f"{'sum':24s} {sb:9.1f} {sh:9.1f} {sh / sb:6.2f} {sbm:10.1f} {shm:10.1f} {shm / sbm:6.2f}")
    out = Path(a.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"base": a.base, "base_commit": base.name, "trials": a.trials, "kernels": rows,
                               "sum_base_ms": round(sb, 2), "sum_head_ms": round(sh, 2),
                               "sum_base_mean_ms": round(sbm, 2), "sum_head_mean_ms": round(shm, 2)}, indent=1))
    print(f"JSON: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
