"""Bundle the paper's AMX K1 / K2 programs for a native run on another host.

`tests/compilers/test_amx_native.py` runs these programs where the host has AMX, but it needs
this project's whole stack (egglog, OR-Tools, z3) to compile them. An AMX host that cannot install
it (e.g. a lent machine with no network) gets a bundle instead: the emitted C of each program,
each run's HBM image before and after on the simulator, and the reference interpreter's output
bytes, with a ``check.py`` that needs only Python 3, NumPy and gcc (``-march=sapphirerapids``).

Programs (two input sets each, the second of edge values):

- ``fig43_rowmajor`` / ``fig46_rowmajor``: Figs. 43 / 46's 16 / 9 instructions (K1 / K2 compiled
  with B in VNNI layout) fed the corpus kernels' bytes (B row-major): expected to differ from the
  reference, on the simulator and on the hardware alike;
- ``fig43_vnni`` / ``fig46_vnni``: the same programs fed VNNI-layout bytes: expected equal;
- ``corpus80`` / ``corpus73``: the corpus K1 / K2 as compiled (B re-laid out): expected equal.

With ``--campaign SEEDS`` the bundle also holds every random AMX graph of those seeds that
compiles (bench/random_campaign.py's generator and operator list 2), each expected equal to the
reference.

Usage: ``python scripts/native_amx_bundle.py DIR [--campaign 1200-1319]``, then on the AMX host
``python3 DIR/check.py`` (exit 0 when every native image equals the simulator's and every output
is as expected). In f32 outputs a NaN matches any NaN: which NaN the hardware returns for two NaN
operands is not modelled (the target's docstring), as in tests/compilers/test_amx_native.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compilers.act import Unsupported, compile_graph  # noqa: E402
from compilers.act.rewrite import IrRules  # noqa: E402
from compilers.program import Program, hbm_image, read_outputs  # noqa: E402
from compilers.simulator import simulate_image  # noqa: E402
from compilers.targets import load_target  # noqa: E402
from compilers.targets.amx.emit_c import emit_c  # noqa: E402
from fuzz.opsets import AMX_2  # noqa: E402
from semantics.compare import compare  # noqa: E402
from semantics.gen import random_graph  # noqa: E402
from semantics.hlo_parser import parse_hlo  # noqa: E402
from semantics.inputs import random_inputs  # noqa: E402
from semantics.interp import evaluate  # noqa: E402
from semantics.layout import bflat  # noqa: E402
from verif.gate import ProofGate  # noqa: E402

PAPER = ROOT.parent / "shared" / "corpus" / "paper"
ROW_MAJOR, VNNI = "{1,0:T(16,64)}", "{0,1:T(4,1)}"

CHECK = '''"""Run the bundled AMX programs natively; compare with the simulator and the reference."""
import json, subprocess, sys
from pathlib import Path
import numpy as np
D = Path(__file__).resolve().parent
cpu = Path("/proc/cpuinfo").read_text()
flags = set(next(l for l in cpu.splitlines() if l.startswith("flags")).split(":")[1].split())
missing = [f for f in ("amx_tile", "amx_int8", "avx512f") if f not in flags]
if missing:
    sys.exit(f"no native AMX here: /proc/cpuinfo lacks {missing}")
print("cpu:", next(l for l in cpu.splitlines() if l.startswith("model name")).split(":")[1].strip())
bad = 0
for key, m in json.loads((D / "runs.json").read_text()).items():
    exe = D / m["program"]
    if not exe.exists():
        r = subprocess.run(["gcc", "-O2", "-march=sapphirerapids", "-o", str(exe), str(D / (m["program"] + ".c"))],
                           capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"gcc failed on {m['program']}.c: {r.stderr[-2000:]}")
    z = np.load(D / (key + ".npz"))
    r = subprocess.run([str(exe)], input=z["img"].tobytes(), capture_output=True, timeout=60)
    if r.returncode:
        print(f"{key}: native run exited {r.returncode}"); bad += 1; continue
    nat = np.frombuffer(r.stdout, np.uint8).copy()
    sim, ref = z["sim"].copy(), z["ref"].copy()
    a, n = m["out_addr"], m["out_bytes"]
    if m.get("f32_output") and n % 4 == 0 and a % 4 == 0:   # a NaN matches any NaN (see the docstring)
        def nan(v):
            return ((v & 0x7F800000) == 0x7F800000) & ((v & 0x7FFFFF) != 0)
        nv, sv, rv = nat[a:a + n].view(np.uint32), sim[a:a + n].view(np.uint32), ref.view(np.uint32)
        sv[nan(nv) & nan(sv)] = nv[nan(nv) & nan(sv)]
        rv[nan(nv) & nan(rv)] = nv[nan(nv) & nan(rv)]
    same_image = bool(np.array_equal(nat, sim))
    equal_ref = bool(np.array_equal(nat[a:a + n], ref))
    ok = same_image and equal_ref == m["expect_reference"]
    bad += not ok
    print(f"{key:18s} {m['instructions']:3d} instructions  native image == simulator's: {same_image}  "
          f"output == reference: {equal_ref} (expected {m['expect_reference']})  {'ok' if ok else 'UNEXPECTED'}")
sys.exit(1 if bad else 0)
'''


def _add(out: Path, runs: dict, name: str, g, prog: Program, expect: bool) -> None:  # noqa: ANN001
    """One program's C and two runs (random inputs, then edge values) of it into the bundle."""
    acc = load_target("amx")
    (out / f"{name}.c").write_text(emit_c(prog, acc, name=name, with_main=True))
    for seed in (0, 1):
        xs = random_inputs(g, seed, edges=bool(seed % 2))
        img = hbm_image(prog, xs, acc.hbm_size)
        sim = simulate_image(acc, prog, img)
        ref = evaluate(g, xs)[0]
        (place,) = prog.outputs
        sim_ok = compare([ref], read_outputs(prog, sim)).ok
        if sim_ok != expect:
            raise SystemExit(f"{name} seed {seed}: the simulator's output "
                             f"{'equals' if sim_ok else 'differs from'} the reference")
        ref_bytes = np.asarray(bflat(np.asarray(ref), place.type), np.uint8)
        np.savez_compressed(out / f"{name}_{seed}.npz", img=img, sim=sim, ref=ref_bytes)
        runs[f"{name}_{seed}"] = dict(program=name, instructions=len(prog.instructions), out_addr=place.addr,
                                      out_bytes=int(ref_bytes.size), expect_reference=expect,
                                      f32_output=place.type.dtype.name == "f32")


def bundle(out: Path, campaign: Sequence[int] = ()) -> dict:
    """Write the bundle into ``out``; return its runs (also in ``out/runs.json``)."""
    acc = load_target("amx")
    rules = IrRules.for_target(acc, ProofGate(prove_missing=True))
    out.mkdir(parents=True, exist_ok=True)
    runs: dict = {}
    for kernel, fig, n_paper, n_corpus in (("amx_k1", "fig43", 16, 80), ("amx_k2", "fig46", 9, 73)):
        text = (PAPER / f"{kernel}.hlo").read_text()
        corpus, vnni = parse_hlo(text, kernel), parse_hlo(text.replace(ROW_MAJOR, VNNI), f"{kernel}_vnni")
        paper = compile_graph(vnni, acc, rules=rules).program
        compiled = compile_graph(corpus, acc, rules=rules).program
        if (len(paper.instructions), len(compiled.instructions)) != (n_paper, n_corpus):
            raise SystemExit(f"{kernel}: expected {n_paper} / {n_corpus} instructions, compiled "
                             f"{len(paper.instructions)} / {len(compiled.instructions)}")
        as_corpus = replace(paper, inputs=tuple(replace(x, type=t) for x, t in
                                                zip(paper.inputs, corpus.param_types, strict=True)))
        for name, g, prog, expect in ((f"{fig}_rowmajor", corpus, as_corpus, False),
                                      (f"{fig}_vnni", vnni, paper, True),
                                      (f"corpus{n_corpus}", corpus, compiled, True)):
            _add(out, runs, name, g, prog, expect)
    for seed in campaign:
        g = random_graph(seed, ops=AMX_2.ops.split(","), dtypes=AMX_2.dtypes.split(","), max_ops=4)
        try:
            prog = compile_graph(g, acc, rules=rules).program
        except Unsupported:
            continue
        _add(out, runs, f"rand{seed}", g, prog, True)
    (out / "runs.json").write_text(json.dumps(runs, indent=1))
    (out / "check.py").write_text(CHECK)
    return runs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder to write the bundle into")
    ap.add_argument("--campaign", default="", help="random AMX graph seeds to add, e.g. 1200-1319")
    args = ap.parse_args()
    seeds = [s for part in args.campaign.split(",") if part
             for lo, _, hi in [part.partition("-")] for s in range(int(lo), int(hi or lo) + 1)]
    runs = bundle(args.out, seeds)
    print(f"{len(runs)} runs of {len({r['program'] for r in runs.values()})} programs in {args.out}; "
          f"on an AMX host: python3 {args.out}/check.py")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
