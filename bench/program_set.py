"""The comparison set: several hundred kernels compiled by two checkouts, program by program.

A change meant to leave the compiler's output alone (a refactoring, a speed-up) must leave every
program byte-identical and every exit-3 reason the same. This script writes the set once as HLO
files (``make``), compiles it with any checkout (``compile``: a worker process whose working
directory and import path are that checkout, so a worktree of an older commit compiles the same
files with its own code), and compares two such runs (``compare``).

The set: the 18 paper kernels, the 100 act-gemmini-fuzz kernels, K1/K2 with B in VNNI layout, the
391-node stress kernel, the random graphs of ``fuzz.opsets`` (every target's operator lists,
the seeds the random-graph test and campaign use), and the middle end's layers (:data:`LAYERS`:
quantized GEMM layers of random and real sizes with every tail, for Gemmini and for AMX with B in
VNNI layout; the convolution layers of bench/tiling_conv.py; AMX bf16 layers; QKV attention,
matmul and softmax kernels of more rows than one block).

    python bench/program_set.py make build/progset
    python bench/program_set.py compile build/progset --root . --json build/progset/head.json
    python bench/program_set.py compile build/progset --root build/ab/<sha> --json build/progset/base.json
    python bench/program_set.py compare build/progset/base.json build/progset/head.json

Each compiled program is recorded as the sha256 of its assembly text (the command words and AMX C
are functions of it; ``accv compile -o`` writes them for a diff of the paper kernels); rule
instantiations without a cached proof are proved at first use as ``accv compile`` does
(``cpu_s`` is the worker's time for a kernel, such proofs included; ``$ACCV_PROOF_CACHE`` is shared by
both sides, so both compile with the same proven rules).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "act"       # bench/_meta.ACT_CORPUS (this script runs without the package)
PAPER = ROOT / "examples" / "regression"

#: random-graph seeds per (target, operator list number): those of the random-graph test and of
#: the campaigns the docs report
RANDOM_SEEDS = {
    ("gemmini", 1): [0, 19, 21, 24, *range(300, 360)],
    ("gemmini", 2): [82, *range(280, 300)],
    ("qkv", 1): list(range(0, 120)),
    ("amx", 1): list(range(120, 160)),
    ("amx", 2): [1081, 1161, *range(1200, 1260)],
}


#: the middle end's layers: (name, target, kind, arguments); kind ``gemm`` = (M, K, N, bias, scale,
#: relu), ``conv`` = bench/tiling_conv.py's layer tuple, ``bf16`` = (M, K, N), ``rows`` = (kernel, rows)
LAYERS: tuple[tuple[str, str, str, tuple], ...] = (
    *((f"gemm_{tgt}_{m}x{k}x{n}_{t}", tgt, "gemm", (m, k, n, b, sc, r))
      for tgt in ("gemmini", "amx")
      for m, k, n, b, sc, r, t in ((1, 1, 1, False, None, False, "raw"), (5, 3, 7, True, 1.0, False, "sat"),
                                   (16, 16, 16, False, None, False, "raw"), (17, 33, 15, True, 0.0625, True, "scale"),
                                   (37, 70, 29, False, 1.0, True, "satrelu"), (64, 64, 64, False, 1.0, False, "sat"),
                                   (97, 131, 61, True, 0.1, False, "scale"), (128, 256, 96, True, 3 / 16, True, "scale"),
                                   (257, 64, 300, False, None, False, "raw"))),
    ("gemm_256x256x256_sat", "gemmini", "gemm", (256, 256, 256, False, 1.0, False)),
    ("gemm_12544x64x256_sat", "gemmini", "gemm", (12544, 64, 256, False, 1.0, False)),
    *((f"conv_{i}", "gemmini", "conv", spec) for i, spec in enumerate((
        (1, 5, 5, 3, 3, 8, 1, 0, False, "raw"), (1, 8, 8, 3, 3, 16, 1, 1, True, "scale 1/16+relu"),
        (1, 9, 9, 8, 3, 8, 2, 1, False, "sat"), (1, 16, 16, 16, 1, 32, 1, 0, True, "scale 1/16+relu"),
        (1, 17, 13, 24, 1, 40, 2, 0, False, "sat"), (2, 12, 12, 17, 3, 24, 2, 0, True, "raw"),
        (1, 28, 28, 64, 3, 64, 1, 1, True, "scale 1/16+relu")))),
    *((f"bf16_{m}x{k}x{n}", "amx", "bf16", (m, k, n)) for m, k, n in ((16, 32, 16), (37, 70, 29), (128, 256, 128))),
    *((f"rows_{kind}_{m}", "qkv", "rows", (kind, m)) for kind, m in (("attention", 65), ("attention", 200),
                                                                    ("matmul", 130), ("softmax", 129))),
)
_CONV_TAILS = {"raw": (None, False), "sat": (1.0, False), "scale 1/16+relu": (0.0625, True)}


def layer_text(kind: str, args: tuple, target: str) -> str:
    """HLO text of one :data:`LAYERS` entry."""
    from semantics.build import tensor
    from semantics.hlo_printer import print_hlo

    if kind == "gemm":
        from compilers.middle.gemm import layer_graph

        m, k, n, bias, scale, relu = args
        vnni = tensor("s8", k, n, layout=(1, 0), tiles=(4, 1)) if target == "amx" else None   # TDPBSSD's B
        return print_hlo(layer_graph(m, k, n, bias=bias, scale=scale, relu=relu, b_layout=vnni))
    if kind == "conv":
        from compilers.middle.conv import conv_graph

        n, h, w, c, kk, o, s, p, bias, tail = args
        scale, relu = _CONV_TAILS[tail]
        return print_hlo(conv_graph(n, h, w, c, kk, o, s, p, bias=bias, scale=scale, relu=relu))
    if kind == "bf16":
        from compilers.middle.gemm_bf16 import layer_graph_bf16

        return print_hlo(layer_graph_bf16(*args))
    if kind == "rows":
        what, m = args
        add = ("HloModule rows\n\nadd_bf16 {\n  x = bf16[] parameter(0)\n  y = bf16[] parameter(1)\n"
               "  ROOT s = bf16[] add(x, y)\n}\n\n")
        if what == "matmul":
            return (f"HloModule mm\nENTRY mm {{\n  a = bf16[{m},64] parameter(0)\n  b = bf16[64,64] parameter(1)\n"
                    f"  ROOT d = bf16[{m},64] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}\n")
        soft = (f"  z = bf16[] constant(0)\n  r = bf16[{m}] reduce(e, z), dimensions={{1}}, to_apply=add_bf16\n"
                f"  b = bf16[{m},64] broadcast(r), dimensions={{0}}\n")
        if what == "softmax":
            return add + (f"ENTRY softmax {{\n  x = bf16[{m},64] parameter(0)\n  e = bf16[{m},64] exponential(x)\n"
                          + soft + f"  ROOT p = bf16[{m},64] divide(e, b)\n}}\n")
        return add + (f"ENTRY attention {{\n  q = bf16[{m},64] parameter(0)\n  k = bf16[64,64] parameter(1)\n"
                      "  v = bf16[64,64] parameter(2)\n  kt = bf16[64,64] transpose(k), dimensions={1,0}\n"
                      f"  s = bf16[{m},64] dot(q, kt), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n"
                      f"  e = bf16[{m},64] exponential(s)\n" + soft + f"  p = bf16[{m},64] divide(e, b)\n"
                      f"  ROOT o = bf16[{m},64] dot(p, v), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}\n")
    raise ValueError(f"unknown layer kind {kind}")


def _make(out: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from fuzz.opsets import OPSETS
    from semantics.gen import random_graph
    from semantics.hlo_printer import print_hlo

    out.mkdir(parents=True, exist_ok=True)
    manifest: list[dict] = []

    def put(name: str, target: str, text: str) -> None:
        (out / f"{name}.hlo").write_text(text)
        manifest.append({"name": name, "target": target})

    for p in sorted(PAPER.glob("*.hlo")):
        t = "qkv" if p.stem.startswith("qkv") else "amx" if p.stem.startswith("amx") else "gemmini"
        put(p.stem, t, p.read_text())
        if p.stem in ("amx_k1", "amx_k2"):
            put(p.stem + "_vnni", "amx", p.read_text().replace("{1,0:T(16,64)}", "{0,1:T(4,1)}"))
    for p in sorted((CORPUS / "act-gemmini-fuzz").glob("*.hlo")):
        put(p.name.split(".")[0], "gemmini", p.read_text())
    sys.path.insert(0, str(ROOT / "bench"))
    from compile_time import stress_kernel

    put("stress_391", "qkv", stress_kernel())
    for (target, k), seeds in RANDOM_SEEDS.items():
        ops, dtypes = OPSETS[(target, k)].ops.split(","), OPSETS[(target, k)].dtypes.split(",")
        for s in seeds:
            g = random_graph(s, ops=ops, dtypes=dtypes, max_ops=4)
            put(f"random_{target}{k}_{s}", target, print_hlo(g))
    for name, target, kind, args in LAYERS:
        put(name, target, layer_text(kind, args, target))
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(manifest)} kernels in {out}")


# the worker: runs inside the checkout being measured (cwd and sys.path[0] = that checkout)
WORKER = r"""
import hashlib, json, os, sys, time
root, setdir = sys.argv[1], sys.argv[2]
os.chdir(root)
sys.path.insert(0, root)
from compilers.program import print_asm
from compilers.targets import load_target
from semantics.errors import AccvError
from semantics.hlo_parser import parse_file
try:                                     # the compiler's one entry (the middle end, then Act)
    from compilers.compile import compile as _compile
    from compilers.errors import Unsupported

    def compile_kernel(graph, acc):
        return _compile(graph, acc, proofs="prove")
except ImportError:                      # a checkout from before compilers.compile existed
    from compilers.act import Unsupported, compile_graph
    from compilers.act.rewrite import IrRules
    try:
        from verif.gate import ProofGate
    except ImportError:                  # a checkout from before the gate moved to verif/
        from compilers.act.rewrite import ProofGate
    _rules = {}

    def compile_kernel(graph, acc):       # missing proofs are proved at first use, as accv compile does
        if acc.name not in _rules:
            _rules[acc.name] = IrRules.for_target(acc, ProofGate(prove_missing=True))
        return compile_graph(graph, acc, rules=_rules[acc.name])
for line in sys.stdin:
    name, target = line.split()
    acc = load_target(target)
    rec = {"name": name, "target": target}
    t0 = time.process_time()
    try:
        res = compile_kernel(parse_file(os.path.join(setdir, name + ".hlo")), acc)
        text = print_asm(res.program)
        rec.update(outcome="compiled", instructions=len(res.program.instructions),
                   asm=hashlib.sha256(text.encode()).hexdigest()[:16])
    except Unsupported as e:
        rec.update(outcome="unsupported", reason=str(e))
    except AccvError as e:
        rec.update(outcome="error", reason=str(e))
    rec["cpu_s"] = round(time.process_time() - t0, 3)
    print(json.dumps(rec), flush=True)
"""


def _compile(setdir: Path, root: Path, out: Path) -> None:
    manifest = json.loads((setdir / "manifest.json").read_text())
    env = dict(os.environ, PYTHONPATH=str(root.resolve()))
    env.setdefault("ACCV_PROOF_CACHE", str(ROOT / "build" / "proofs"))
    proc = subprocess.Popen([sys.executable, "-c", WORKER, str(root.resolve()), str(setdir.resolve())],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    recs = []
    for i, m in enumerate(manifest):
        proc.stdin.write(f"{m['name']} {m['target']}\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"worker died at {m['name']}")
        recs.append(json.loads(line))
        print(f"\r{i + 1}/{len(manifest)} {m['name']:<28}", end="", file=sys.stderr, flush=True)
    proc.stdin.close()
    proc.wait()
    print(file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(recs, indent=1) + "\n")
    counts: dict[str, int] = {}
    for r in recs:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    print(f"{len(recs)} kernels: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())) + f" -> {out}")


def _compare(a: Path, b: Path) -> int:
    ra = {r["name"]: r for r in json.loads(a.read_text())}
    rb = {r["name"]: r for r in json.loads(b.read_text())}
    keys = ("outcome", "asm", "reason")
    diff = [n for n in ra if n in rb and any(ra[n].get(k) != rb[n].get(k) for k in keys)]
    missing = sorted(set(ra) ^ set(rb))
    for n in diff:
        print(f"DIFFERENT {n}: {[ra[n].get(k) for k in keys]} -> {[rb[n].get(k) for k in keys]}")
    for n in missing:
        print(f"ONLY IN ONE: {n}")
    same = len(ra) - len(diff) - len([n for n in ra if n not in rb])
    compiled = sum(1 for n in ra if ra[n]["outcome"] == "compiled")
    print(f"{same} of {len(ra)} kernels identical ({compiled} compiled programs, the rest exit-3 reasons)")
    return 1 if diff or missing else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("out", type=Path)
    c = sub.add_parser("compile")
    c.add_argument("set", type=Path)
    c.add_argument("--root", type=Path, default=ROOT)
    c.add_argument("--json", type=Path, required=True)
    d = sub.add_parser("compare")
    d.add_argument("a", type=Path)
    d.add_argument("b", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "make":
        _make(args.out)
        return 0
    if args.cmd == "compile":
        _compile(args.set, args.root, args.json)
        return 0
    return _compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
