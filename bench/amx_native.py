"""AMX programs on an AMX host: a bundle made here, run there, judged here by the one comparison rule.

    python bench/amx_native.py --bundle build/amx_native [--small]       # here: compile, emit C, images
    python3 build/amx_native/run.py OUT                                   # there: python3 + gcc only
    python bench/amx_native.py --judge OUT [--bundle build/amx_native]    # here: the verdicts, results JSON

The bundle holds, for each program, its emitted C with a ``main`` (compilers/targets/amx/emit_c.py,
as the ``native`` backend builds it; ``c/NAME.c.gz``) and, per input set, the HBM image it starts
from (``img/NAME_K.in.gz``); ``runs.json`` names the programs (how to make each again, the sha256
of its assembly, its output placements, the digest of the simulator's final image outside the
outputs), the gcc flags (the native backend's ``MODES["native"]``; the emulated build at ``-O0``:
gcc -O2 takes minutes on a large unit's straight-line intrinsics and the emulation's results do not
depend on the optimization level), ``run.py`` (bench/amx_native_run.py: builds and runs, judges
nothing) and the emulation header. The programs:

- the tiled layers of :data:`LAYERS` (int8 with every tail, bf16 with its blocked-sum contract),
  through the middle end, two input sets each (random values; edge values: NaN, inf, -0.0,
  subnormals, integer bounds);
- with ``--programs`` (the default; ``--small`` keeps two): the AMX program set
  (fuzz/amx_programs.py: the paper kernels K1-K5, K1 / K2 with B in VNNI layout, the random AMX
  graphs that compile), three input sets each (random, edge values, raw random input bytes), and
  Figs. 43 / 46's programs fed the corpus kernels' row-major B, which must differ from the
  reference while equalling the simulator.

``--judge OUT`` makes every program again (its assembly must be the bundled one's), reads each
run's final image and holds its outputs to the program's contract under the backend's policy
(:func:`check.policy.judge`: the same rule ``accv check`` and a campaign apply; NaN bits are not
observed on AMX), the whole image to the simulator's (:func:`check.policy.compare_images`), and the
native image to the emulated one. It prints a table and writes ``bench/results/amx_native.json`` (``--json``),
which bench/docs_tables.py renders in docs/amx.md.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNNER = ROOT / "bench" / "amx_native_run.py"
EMULATED_FLAGS = ["-O0", "-std=gnu11", "-ffp-contract=off"]

#: (name, kind, M, K, N, bias, scale (None: raw int32), relu); small ones first
LAYERS: list[tuple[str, str, int, int, int, bool, float | None, bool]] = [
    ("i8_16x64x16_raw", "int8", 16, 64, 16, False, None, False),
    ("i8_16x64x16_bias_s16_relu", "int8", 16, 64, 16, True, 0.0625, True),
    ("i8_33x100x47_raw", "int8", 33, 100, 47, False, None, False),
    ("i8_33x100x47_bias_sat_relu", "int8", 33, 100, 47, True, 1.0, True),
    ("bf16_16x32x16", "bf16", 16, 32, 16, False, None, False),
    ("bf16_37x70x29", "bf16", 37, 70, 29, False, None, False),
    ("i8_128x256x96_bias_s0.1", "int8", 128, 256, 96, True, 0.1, False),
    ("bf16_128x256x128", "bf16", 128, 256, 128, False, None, False),
    ("i8_256x512x256_raw", "int8", 256, 512, 256, False, None, False),
    ("i8_256x512x256_bias_s16_relu", "int8", 256, 512, 256, True, 0.0625, True),
]
#: --small: these layers and programs only
SMALL = ("i8_33x100x47_bias_sat_relu", "bf16_37x70x29", "amx_k2_vnni", "fig46_rowmajor")
#: the paper figures' programs fed the corpus kernels' row-major B: (entry, program set name, corpus kernel)
ROWMAJOR = (("fig43_rowmajor", "amx_k1_vnni", "amx_k1"), ("fig46_rowmajor", "amx_k2_vnni", "amx_k2"))


def _layer(kind: str, m: int, k: int, n: int, bias: bool, scale: float | None, relu: bool):  # noqa: ANN202
    """The layer's graph (int8: B in VNNI layout, the operand TDPBSSD reads)."""
    from compilers.middle.gemm import layer_graph
    from compilers.middle.gemm_bf16 import layer_graph_bf16
    from semantics.build import tensor

    if kind == "bf16":
        return layer_graph_bf16(m, k, n)
    return layer_graph(m, k, n, bias=bias, scale=scale, relu=relu,
                       b_layout=tensor("s8", k, n, layout=(1, 0), tiles=(4, 1)))


def _tail(kind: str, bias: bool, scale: float | None, relu: bool) -> str:
    if kind == "bf16":
        return "f32"
    t = "raw s32" if scale is None else "sat" if scale == 1.0 else f"scale {scale:g}"
    return ("bias, " if bias else "") + t + (", relu" if relu else "")


def entries(small: bool = False, programs: bool = True) -> list[dict]:
    """What the bundle holds: name, kind (``int8`` / ``bf16`` layers, ``program``), and how to make it."""
    from fuzz.amx_programs import names as set_names

    out: list[dict] = []
    for name, kind, m, k, n, bias, scale, relu in LAYERS:
        out.append({"name": name, "kind": kind, "shape": [m, k, n], "tail": _tail(kind, bias, scale, relu),
                    "layer": [kind, m, k, n, bias, scale, relu], "sets": 2, "expect_reference": True})
    if programs:
        out += [{"name": n, "kind": "program", "sets": 3, "expect_reference": True} for n in set_names()]
        out += [{"name": e, "kind": "program", "sets": 3, "program": p, "corpus": c, "expect_reference": False}
                for e, p, c in ROWMAJOR]
    return [e for e in out if not small or e["name"] in SMALL]


def make(entry: dict):  # noqa: ANN201 - (graph, program)
    """The graph and the compiled program of a bundle entry (:func:`entries`); raises Unsupported."""
    from compilers.compile import compile
    from fuzz.amx_programs import graph

    if "layer" in entry:
        g = _layer(*entry["layer"])
        res = compile(g, "amx")
        if not res.stats.middle:
            raise SystemExit(f"{entry['name']}: the middle end did not take the layer")
        return g, res.program
    if "program" in entry:       # the figure's program with its inputs typed as the corpus kernel's
        corpus = graph(entry["corpus"])
        p = compile(graph(entry["program"]), "amx").program
        return corpus, replace(p, inputs=tuple(replace(x, type=t) for x, t in
                                               zip(p.inputs, corpus.param_types, strict=True)))
    g = graph(entry["name"])
    return g, compile(g, "amx").program


def _image(entry: dict, g, prog, k: int, size: int) -> np.ndarray:  # noqa: ANN001
    """Input set ``k``'s HBM image: random values, edge values, or (set 2 of a program) raw random bytes."""
    from compilers.program import hbm_image
    from semantics.inputs import random_inputs
    from semantics.layout import byte_size

    img = hbm_image(prog, random_inputs(g, k % 2, edges=bool(k % 2)), size)
    if k == 2:
        rng = np.random.default_rng(len(entry["name"]))
        for pl in prog.inputs:
            n = byte_size(pl.type)
            img[pl.addr:pl.addr + n] = rng.integers(0, 256, n, dtype=np.uint8)
    return img


def _asm_sha(prog) -> str:  # noqa: ANN001
    from compilers.program import print_asm

    return hashlib.sha256(print_asm(prog).encode()).hexdigest()[:16]


def bundle(out: Path, small: bool = False, programs: bool = True) -> dict:
    """Write the bundle into ``out`` (module doc); returns the manifest."""
    from bench._meta import run_meta
    from compilers.errors import Unsupported
    from compilers.targets import load_target
    from compilers.targets.amx.cbuild import HEADER, MODES
    from compilers.targets.amx.emit_c import REQUIRED_FLAGS, emit_c

    acc = load_target("amx")
    if out.exists():
        shutil.rmtree(out)
    for sub in ("c", "img"):
        (out / sub).mkdir(parents=True)
    runs = []
    for e in entries(small, programs):
        t0 = time.perf_counter()
        try:
            g, prog = make(e)
        except Unsupported:
            continue                    # a random graph of the set that does not compile
        c = emit_c(prog, acc, name=e["name"].replace(".", "_"), with_main=True)
        (out / "c" / f"{e['name']}.c.gz").write_bytes(gzip.compress(c.encode(), 6))
        for k in range(e["sets"]):
            img = _image(e, g, prog, k, acc.hbm_size)
            (out / "img" / f"{e['name']}_{k}.in.gz").write_bytes(gzip.compress(img.tobytes(), 6))
        runs.append({**e, "instructions": len(prog.instructions), "asm_sha256": _asm_sha(prog),
                     "sets": list(range(e["sets"]))})
        print(f"  {e['name']}: {len(prog.instructions)} instructions, {e['sets']} input sets "
              f"({time.perf_counter() - t0:.1f} s)", flush=True)
    meta = run_meta()
    manifest = {"hbm_size": acc.hbm_size, "cpu_flags": list(REQUIRED_FLAGS),
                "flags": {"native": list(MODES["native"]), "emulated": EMULATED_FLAGS},
                "commit": meta["commit"], "made_on": meta["machine"], "date": meta["date"],
                "command": f"python bench/amx_native.py --bundle {out}{' --small' if small else ''}", "runs": runs}
    (out / "runs.json").write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.copy(RUNNER, out / "run.py")
    shutil.copy(HEADER, out / "emulation.h")
    return manifest


def judge_runs(bundle_dir: Path, results: Path) -> dict:
    """The verdicts of a run.py results folder against its bundle (module doc)."""
    from check.policy import Policy, compare_images, judge
    from compilers.contract import EXACT
    from compilers.program import read_outputs
    from compilers.simulator import simulate_image
    from compilers.targets import load_target
    from compilers.targets.amx.backends import EmulatedBackend, NativeBackend
    from semantics.interp import evaluate
    from semantics.layout import unbflat

    acc = load_target("amx")
    manifest = json.loads((bundle_dir / "runs.json").read_text())
    ran = json.loads((results / "runs.json").read_text())
    by_name = {r["name"]: r for r in ran["runs"]}
    kinds = {"emulated": EmulatedBackend, "native": NativeBackend}
    records = []
    for m in manifest["runs"]:
        g, prog = make(m)
        if _asm_sha(prog) != m["asm_sha256"]:
            raise SystemExit(f"{m['name']}: this checkout compiles another program than the bundle's (bundle of "
                             f"commit {manifest['commit']}); judge with the commit the bundle was made at")
        rec = {k: m[k] for k in ("name", "kind", "instructions")}
        rec.update(shape=m.get("shape"), tail=m.get("tail"), expect_reference=m["expect_reference"], sets=[])
        got_runs = by_name.get(m["name"], {"sets": {}})["sets"]
        ok = True
        for k in m["sets"]:
            img = np.frombuffer(gzip.decompress((bundle_dir / "img" / f"{m['name']}_{k}.in.gz").read_bytes()), np.uint8)
            xs = [unbflat(img[pl.addr:pl.addr + _size(pl)].copy(), pl.type)
                  for pl in sorted(prog.inputs, key=lambda p: p.index)]
            with np.errstate(all="ignore"):
                ref = evaluate(g, xs)
            sim = simulate_image(acc, prog, img.copy())
            s: dict = {"set": k}
            finals = {}
            for mode, r in got_runs.get(str(k), {}).items():
                if "error" in r:
                    s[mode] = {"error": r["error"]}
                    ok = False
                    continue
                final = np.frombuffer(gzip.decompress((results / f"{m['name']}_{k}.{mode}.gz").read_bytes()), np.uint8)
                finals[mode] = final
                policy = Policy.of(prog, kinds[mode])
                j = judge(ref, read_outputs(prog, final), xs, policy)
                image = compare_images(prog, final, sim, policy)
                s[mode] = {"ok": j.ok, "why": j.why, "note": j.note.removeprefix("; "), "seconds": r["seconds"],
                           "image_eq_simulator": image is None, "image": image or ""}
                ok &= image is None and j.ok == m["expect_reference"]
            if not finals:
                ok = False
            if "native" in finals and "emulated" in finals:
                s["native_eq_emulated"] = compare_images(prog, finals["native"], finals["emulated"],
                                                         Policy(EXACT, nan_bits=False)) is None
                ok &= s["native_eq_emulated"]
            rec["sets"].append(s)
        rec["ok"] = ok
        records.append(rec)
    return {k: ran[k] for k in ("date", "cpu", "gcc", "native", "why_not_native", "bundle_commit")} | {
        "command": manifest["command"] + "; python3 run.py OUT; python bench/amx_native.py --judge OUT",
        "runs": records}


def _size(pl) -> int:  # noqa: ANN001
    from semantics.layout import byte_size

    return byte_size(pl.type)


def verdict(rec: dict, mode: str) -> str:
    """One table cell: what ``mode``'s runs of ``rec`` showed."""
    sets = [s.get(mode) for s in rec["sets"]]
    if not sets or any(x is None for x in sets):
        return "-"
    if any("error" in x for x in sets):
        return "**error**: " + next(x["error"] for x in sets if "error" in x)
    if not all(x["image_eq_simulator"] for x in sets):
        return "**image differs from the simulator's**: " + next(x["image"] for x in sets if x["image"])[:60]
    agree = all(x["ok"] for x in sets)
    if not rec["expect_reference"]:
        return "differs from the reference, as expected" if not any(x["ok"] for x in sets) else "**equals the reference**"
    if not agree:
        return "**" + next(x["why"] for x in sets if not x["ok"])[:80] + "**"
    notes = sorted({x["note"] for x in sets if x["note"]})
    return "as its contract says" + (f" ({'; '.join(notes)})" if notes else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog="--bundle DIR alone writes the bundle; with --run or --judge it names it.")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--judge", type=Path, metavar="OUT", help="judge a run.py results folder (needs the project)")
    mode.add_argument("--run", type=Path, metavar="OUT", help="run --bundle's run.py here into OUT")
    ap.add_argument("--bundle", type=Path, metavar="DIR", default=None,
                    help="the bundle to write, or to run or judge (default build/amx_native)")
    ap.add_argument("--small", action="store_true", help="writing: two layers and two programs only")
    ap.add_argument("--no-programs", action="store_true", help="writing: the tiled layers only")
    ap.add_argument("--json", type=Path, help="with --judge: results JSON (default bench/results/amx_native.json)")
    args = ap.parse_args(argv)
    d = args.bundle or ROOT / "build" / "amx_native"
    if args.run:
        return subprocess.run([sys.executable, str(d / "run.py"), str(args.run), "--dir", str(d)]).returncode
    if args.judge is None:
        if args.bundle is None:
            ap.error("give --bundle DIR (write a bundle), --run OUT or --judge OUT")
        return _write_bundle(d, args.small, not args.no_programs)
    res = judge_runs(d, args.judge)
    print(f"{res['date']}, {res['cpu']}, {res['gcc']}: " + ("native and emulated" if res["native"]
                                                            else f"emulated only ({res['why_not_native']})"))
    for r in res["runs"]:
        nat = verdict(r, "native")
        if res["native"]:
            nat = ("= emulation; " if all(s.get("native_eq_emulated") for s in r["sets"]) else "!= EMULATION; ") + nat
        print(f"  {r['name']:34s} {r['instructions']:6d}  native: {nat}; emulated: {verdict(r, 'emulated')}"
              + ("" if r["ok"] else "  FAIL"))
    good = sum(r["ok"] for r in res["runs"])
    print(f"summary: {good} of {len(res['runs'])} programs as expected")
    from bench._meta import RESULTS

    path = args.json or RESULTS / "amx_native.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(res, indent=1) + "\n")
    print(f"JSON: {path}")
    return 0 if good == len(res["runs"]) else 1


def _write_bundle(d: Path, small: bool, programs: bool) -> int:
    t0 = time.perf_counter()
    manifest = bundle(d, small, programs)
    size = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    print(f"{len(manifest['runs'])} programs in {d} ({size / 2 ** 20:.1f} MiB, {time.perf_counter() - t0:.0f} s); "
          f"on an AMX host: python3 {d}/run.py OUT, then here: python bench/amx_native.py --judge OUT --bundle {d}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
