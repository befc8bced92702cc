"""Run a bundle of AMX programs (bench/amx_native.py --bundle) on an AMX host: build, run, record.

This file is copied into the bundle as ``run.py`` and needs only Python 3 and gcc: on an AMX host
without this project's stack, ``python3 DIR/run.py OUT`` (OUT: a folder; e.g. the lent machine's
``$OUT``)

1. reads /proc/cpuinfo: with the manifest's ``cpu_flags`` (amx_tile, amx_int8, amx_bf16, avx512f,
   avx512bw, avx512_vbmi) the native half runs; without them only the emulated half runs, and it says so;
2. builds every unit (``c/NAME.c.gz``) with the native backend's gcc flags (the manifest's
   ``flags.native``) and against the bundled emulation header (``flags.emulated``: the unit's one
   ``#include <immintrin.h>`` replaced by ``emulation.h``), as compilers/targets/amx/cbuild.py does;
3. runs each build on each input set's HBM image (stdin -> stdout) and writes, per run, the final
   image (``OUT/NAME_K.MODE.gz``) and, in ``OUT/runs.json``, the seconds and any error.

It judges nothing: the outputs are judged back where the bundle was made, by the project's one
comparison rule (``python bench/amx_native.py --judge OUT``: check.policy). Exit 0 when every
build and run finished, 1 otherwise.
"""

import argparse
import concurrent.futures
import datetime
import gzip
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

INCLUDE = "#include <immintrin.h>"


def cpu(flags_needed: list) -> tuple:
    """(the CPU's model name, the needed flags it lacks or a reason)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError as e:
        return platform.processor(), [f"cannot read /proc/cpuinfo: {e}"]
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "?")
    flags = next((set(ln.split(":", 1)[1].split()) for ln in text.splitlines() if ln.startswith("flags")), set())
    return model, [f for f in flags_needed if f not in flags]


def build(d: Path, name: str, mode: str, flags: list) -> tuple:
    """(executable, '' or gcc's complaint) of c/NAME.c.gz for ``mode``."""
    (d / "bin").mkdir(exist_ok=True)
    text = gzip.decompress((d / "c" / f"{name}.c.gz").read_bytes()).decode()
    src, exe = d / "bin" / f"{name}.{mode}.c", d / "bin" / f"{name}.{mode}"
    cmd = ["gcc", *flags]
    if mode == "emulated":
        lines = text.split("\n")
        hits = [i for i, ln in enumerate(lines) if ln.strip() == INCLUDE]
        if len(hits) != 1:
            return exe, f"{len(hits)} '{INCLUDE}' lines (the emulated build replaces exactly one)"
        lines[hits[0]] = '#include "emulation.h"'
        text = "\n".join(lines)
        cmd += ["-iquote", str(d)]
    src.write_text(text)
    r = subprocess.run(cmd + ["-o", str(exe), str(src), "-lm"], capture_output=True, text=True)
    return exe, (r.stderr.strip()[-600:] or f"gcc exited {r.returncode}") if r.returncode else ""


def run_one(exe: Path, image: bytes, timeout: float) -> dict:
    """One run: its seconds and final image, or the error."""
    t0 = time.perf_counter()
    try:
        r = subprocess.run([str(exe)], input=image, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": timeout, "error": f"no answer within {timeout:g} s"}
    rec: dict = {"seconds": round(time.perf_counter() - t0, 4)}
    if r.returncode:
        err = r.stderr.decode(errors="replace").strip().splitlines()
        what = f"signal {-r.returncode}" if r.returncode < 0 else f"exit status {r.returncode}"
        rec["error"] = what + (f" ({err[-1]})" if err else "")
        return rec
    if len(r.stdout) != len(image):
        rec["error"] = f"wrote {len(r.stdout)} bytes, the image has {len(image)}"
        return rec
    rec["image"] = r.stdout
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path, help="folder for the outputs and runs.json")
    ap.add_argument("--dir", type=Path, default=Path(__file__).resolve().parent, help="the bundle (default: here)")
    ap.add_argument("--emulated-only", action="store_true", help="skip the native half even on an AMX host")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel gcc builds")
    args = ap.parse_args()
    d, out = args.dir, args.out
    out.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((d / "runs.json").read_text())
    model, missing = cpu(manifest["cpu_flags"])
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    native = not missing and not args.emulated_only
    why = ("" if native else "--emulated-only" if args.emulated_only else f"/proc/cpuinfo lacks {', '.join(missing)}")
    print(f"cpu: {model}; gcc: {gcc}")
    print("native AMX: yes, both halves run" if native else
          f"native AMX: NO ({why}): only the emulated half runs; nothing here says anything about the hardware")
    modes = ["emulated", "native"] if native else ["emulated"]
    t0 = time.perf_counter()
    jobs = [(m["name"], mode) for m in manifest["runs"] for mode in modes]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        built = dict(zip(jobs, ex.map(lambda j: build(d, j[0], j[1], manifest["flags"][j[1]]), jobs), strict=True))
    print(f"built {len(jobs)} units in {time.perf_counter() - t0:.1f} s")
    records, bad = [], 0
    for m in manifest["runs"]:
        rec: dict = {"name": m["name"], "sets": {}}
        for k in m["sets"]:
            image = gzip.decompress((d / "img" / f"{m['name']}_{k}.in.gz").read_bytes())
            runs = {}
            for mode in modes:
                exe, err = built[(m["name"], mode)]
                r = {"error": f"gcc: {err}"} if err else run_one(exe, image, args.timeout)
                data = r.pop("image", None)
                if data is not None:
                    (out / f"{m['name']}_{k}.{mode}.gz").write_bytes(gzip.compress(data, 6))
                bad += "error" in r
                runs[mode] = r
            rec["sets"][str(k)] = runs
        records.append(rec)
        errors = [f"set {k} {mode}: {r['error']}" for k, rs in rec["sets"].items() for mode, r in rs.items()
                  if "error" in r]
        print(f"{m['name']:34s} {len(m['sets'])} set(s) x {', '.join(modes)}" + (f"  ERROR {errors[0]}" if errors
                                                                                 else "  ran"))
    res = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"), "cpu": model, "gcc": gcc,
           "native": native, "why_not_native": why, "bundle_commit": manifest.get("commit", "?"), "runs": records}
    (out / "runs.json").write_text(json.dumps(res, indent=1) + "\n")
    print(f"{len(records)} programs run ({'native and emulated' if native else 'emulated only'}, "
          f"{time.perf_counter() - t0:.1f} s), {bad} error(s); judge them where the bundle was made: "
          f"python bench/amx_native.py --judge {out}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
