"""A bundle of tiled AMX GEMM layers (int8 and bf16) for a native check on an AMX host.

    python bench/amx_native.py --bundle build/amx_native [--small]   # here: compile, emit C, expected bytes
    python3 build/amx_native/run.py [--json PATH]                     # there: python3 + numpy + gcc only
    python bench/amx_native.py --run build/amx_native [...]           # the same, through this script

``--bundle DIR`` compiles the layers below through the middle end (compilers/middle, the AMX
offers of compilers/targets/amx/tiles.py), emits each program's C with a ``main``
(compilers/targets/amx/emit_c.py, as the ``native`` backend does) into ``DIR/c/NAME.c.gz`` and writes,
per layer and input set (random values; edge values: NaN, inf, -0.0, subnormals, integer bounds),
gzip'd in ``DIR/img/``: the HBM image the program starts from (``NAME_K.in``), the output bytes
of the emulated build of the same C (``NAME_K.emu``, built here with the bundle's emulated flags),
the reference interpreter's output bytes (``NAME_K.ref``) and, for bf16, the blocked-sum model's
bytes (``.model``), the declared bound per element (``.tol``, f64) and the elements where any
value passes (``.any``) (compilers/targets/amx/bf16_sum.py). Before writing it checks here that
the emulated outputs equal the reference (int8) or the model and the reference within the bound
(bf16). ``runs.json`` holds the manifest (shapes, output placement, gcc flags: the native
backend's ``MODES["native"]``; the emulated build at ``-O0``, because gcc -O2 takes minutes on a
large unit's straight-line intrinsics and the emulation is portable C whose results do not depend
on the optimization level), ``run.py`` is bench/amx_native_run.py (its doc: what it compares) and
``emulation.h`` the header.

``--small`` bundles only the small layers (the default test builds one that way and runs its
``run.py`` in emulation mode).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import time
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
SMALL = 6   # the first SMALL layers: --small


def _hlo(kind: str, m: int, k: int, n: int, bias: bool, scale: float | None, relu: bool) -> str:
    from compilers.middle.gemm import layer_hlo
    from compilers.middle.gemm_bf16 import layer_hlo_bf16

    if kind == "bf16":
        return layer_hlo_bf16(m, k, n)
    text = layer_hlo(m, k, n, bias=bias, scale=scale, relu=relu)
    return text.replace(f"b = s8[{k},{n}] parameter(1)", f"b = s8[{k},{n}]{{1,0:T(4,1)}} parameter(1)")


def _tail(kind: str, bias: bool, scale: float | None, relu: bool) -> str:
    if kind == "bf16":
        return "f32"
    t = "raw s32" if scale is None else "sat" if scale == 1.0 else f"scale {scale:g}"
    return ("bias, " if bias else "") + t + (", relu" if relu else "")


def _put(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data, 6))


def _emulate(c_file: Path, image: np.ndarray, work: Path) -> np.ndarray:
    """The final image of the unit ``c_file`` built against the emulation header (EMULATED_FLAGS)."""
    from compilers.targets.amx.cbuild import HEADER, emulated_source, run_image

    exe = work / (c_file.stem + ".emu")
    if not exe.exists():
        src = work / (c_file.stem + ".emu.c")
        src.write_text(emulated_source(c_file.read_text()))
        r = subprocess.run(["gcc", *EMULATED_FLAGS, "-iquote", str(HEADER.parent), "-o", str(exe), str(src), "-lm"],
                           capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"gcc (emulated) failed on {c_file.name}: {r.stderr[-800:]}")
    return run_image(exe, image, timeout=600)


def bundle(out: Path, small: bool = False, sets: int = 2, names: tuple[str, ...] = ()) -> dict:
    """Write the bundle into ``out`` (module doc; ``names``: only those layers); returns the manifest."""
    from bench._meta import run_meta
    from compilers.act import compile_graph
    from compilers.program import hbm_image, read_outputs
    from compilers.targets import load_target
    from compilers.targets.amx.bf16_sum import blocked_sum, sum_bound
    from compilers.targets.amx.cbuild import HEADER, MODES
    from compilers.targets.amx.emit_c import REQUIRED_FLAGS, emit_c
    from semantics.compare import compare
    from semantics.hlo_parser import parse_hlo
    from semantics.inputs import random_inputs
    from semantics.interp import evaluate
    from semantics.layout import bflat, byte_size

    acc = load_target("amx")
    if out.exists():
        shutil.rmtree(out)
    for sub in ("c", "img", "work"):
        (out / sub).mkdir(parents=True)
    runs = []
    chosen = [x for x in (LAYERS[:SMALL] if small else LAYERS) if not names or x[0] in names]
    for name, kind, m, k, n, bias, scale, relu in chosen:
        t0 = time.perf_counter()
        g = parse_hlo(_hlo(kind, m, k, n, bias, scale, relu))
        res = compile_graph(g, acc)
        if not res.stats.middle:
            raise SystemExit(f"{name}: the middle end did not take the layer")
        prog = res.program
        c_file = out / "work" / f"{name}.c"
        c_file.write_text(emit_c(prog, acc, name=name.replace(".", "_"), with_main=True))
        _put(out / "c" / f"{name}.c.gz", c_file.read_bytes())
        (pl,) = prog.outputs
        nbytes = byte_size(pl.type)
        for s in range(sets):
            xs = random_inputs(g, s, edges=bool(s % 2))
            img = hbm_image(prog, xs, acc.hbm_size)
            final = _emulate(c_file, img, out / "work")
            (got,) = read_outputs(prog, final)
            got = np.asarray(got)
            (ref,) = evaluate(g, xs)
            _put(out / "img" / f"{name}_{s}.in.gz", np.ascontiguousarray(img, np.uint8).tobytes())
            _put(out / "img" / f"{name}_{s}.emu.gz", final[pl.addr:pl.addr + nbytes].tobytes())
            _put(out / "img" / f"{name}_{s}.ref.gz", np.asarray(bflat(np.asarray(ref), pl.type), np.uint8).tobytes())
            if kind == "int8":
                if not compare([ref], [got]).identical:
                    raise SystemExit(f"{name} set {s}: the emulated outputs differ from the reference")
                continue
            model = blocked_sum(*xs)
            bound = sum_bound(*xs)
            cm, cb = compare([model], [got]), compare([ref], [got], [bound])
            if not (cm.within_bound and cb.within_bound):
                raise SystemExit(f"{name} set {s}: emulated vs model: {cm.message}; vs reference: {cb.message}")
            _put(out / "img" / f"{name}_{s}.model.gz", model.tobytes())
            _put(out / "img" / f"{name}_{s}.tol.gz", np.ascontiguousarray(bound.abs_tol, np.float64).tobytes())
            _put(out / "img" / f"{name}_{s}.any.gz", np.ascontiguousarray(bound.anything, np.uint8).tobytes())
        runs.append({"name": name, "kind": kind, "shape": [m, k, n], "tail": _tail(kind, bias, scale, relu),
                     "instructions": len(prog.instructions), "dtype": pl.type.dtype.name,
                     "output": {"addr": pl.addr, "bytes": nbytes}, "sets": list(range(sets))})
        print(f"  {name}: {len(prog.instructions)} instructions, {sets} input sets ({time.perf_counter() - t0:.1f} s)",
              flush=True)
    shutil.rmtree(out / "work")
    meta = run_meta()
    manifest = {"hbm_size": acc.hbm_size, "cpu_flags": list(REQUIRED_FLAGS),
                "flags": {"native": list(MODES["native"]), "emulated": EMULATED_FLAGS},
                "commit": meta["commit"], "made_on": meta["machine"], "date": meta["date"],
                "command": "python3 build/amx_native/run.py (bundle: python bench/amx_native.py --bundle "
                           f"build/amx_native{' --small' if small else ''})", "runs": runs}
    (out / "runs.json").write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.copy(RUNNER, out / "run.py")
    shutil.copy(HEADER, out / "emulation.h")
    return manifest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--bundle", type=Path, metavar="DIR", help="write the bundle into DIR (needs the project)")
    mode.add_argument("--run", type=Path, metavar="DIR", help="run DIR/run.py (python3 + numpy + gcc)")
    ap.add_argument("--small", action="store_true", help="with --bundle: the small layers only")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="with --run: arguments for run.py (--json PATH, ...)")
    args = ap.parse_args(argv)
    if args.run:
        return subprocess.run([sys.executable, str(args.run / "run.py"), str(args.run), *args.rest]).returncode
    t0 = time.perf_counter()
    manifest = bundle(args.bundle, args.small)
    size = sum(p.stat().st_size for p in args.bundle.rglob("*") if p.is_file())
    print(f"{len(manifest['runs'])} layers in {args.bundle} ({size / 2 ** 20:.1f} MiB, {time.perf_counter() - t0:.0f} s); "
          f"on an AMX host: python3 {args.bundle}/run.py --json results.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
