"""Run a bundle of tiled AMX GEMM layers (bench/amx_native.py --bundle) natively and/or emulated.

This file is copied into the bundle as ``run.py`` and needs only Python 3, NumPy and gcc: on an AMX
host without this project's stack, ``python3 DIR/run.py [--json results.json]``

1. reads /proc/cpuinfo: with amx_tile, amx_int8, amx_bf16, avx512f and avx512bw the native half
   runs; without them only the emulated half runs, and the output says so;
2. builds every layer's C unit (``c/NAME.c.gz``) with the native backend's gcc flags (the manifest's
   ``flags.native``) and with the emulation header (``flags.emulated``, the unit's
   ``#include <immintrin.h>`` replaced by the bundled ``emulation.h``), as
   compilers/targets/amx/cbuild.py does;
3. runs each build on each input set's HBM image (stdin -> stdout) and compares the outputs:
   the host's emulated build with the bundle's emulated outputs (written where the bundle was
   made) bit for bit; the native build with both emulated outputs (in f32 outputs a NaN matches
   any NaN: which NaN the hardware returns is not modelled); with the reference: int8 layers bit
   for bit, bf16 layers with the blocked-sum model bit for bit (a NaN matches any NaN) and with
   the reference within the declared bound (``NAME_K.tol``: per element |got - ref| <= tol where
   both are finite, any value where ``NAME_K.any`` is set, equal zeros of either sign, NaN where
   the reference has NaN: semantics.compare.compare's rule with compilers/targets/amx/bf16_sum.py's
   bound, computed where the bundle was made);
4. prints a table and writes the results JSON (``--json``; bench/docs_tables.py renders
   bench/results/amx_native.json). Exit 0 when every comparison holds, 1 otherwise.
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

import numpy as np

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
    """(executable, '' or gcc's complaint) of c/NAME.c for ``mode``."""
    (d / "bin").mkdir(exist_ok=True)
    text = load(d / "c" / f"{name}.c.gz").decode()
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


def load(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes())


def run(exe: Path, image: bytes, timeout: float) -> tuple:
    """(final image or None, seconds, '' or why it failed)."""
    t0 = time.perf_counter()
    try:
        r = subprocess.run([str(exe)], input=image, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, timeout, f"no answer within {timeout:g} s"
    dt = time.perf_counter() - t0
    if r.returncode:
        err = r.stderr.decode(errors="replace").strip().splitlines()
        what = f"signal {-r.returncode}" if r.returncode < 0 else f"exit status {r.returncode}"
        return None, dt, what + (f" ({err[-1]})" if err else "")
    if len(r.stdout) != len(image):
        return None, dt, f"wrote {len(r.stdout)} bytes, the image has {len(image)}"
    return r.stdout, dt, ""


def outputs(image: bytes, m: dict) -> np.ndarray:
    """The run's output bytes (the layer has one output placement)."""
    a, n = m["output"]["addr"], m["output"]["bytes"]
    return np.frombuffer(image[a:a + n], np.uint8)


def _nan32(v: np.ndarray) -> np.ndarray:
    return ((v & 0x7F800000) == 0x7F800000) & ((v & 0x7FFFFF) != 0)


def same(got: np.ndarray, want: np.ndarray, dtype: str, nan_any: bool) -> tuple:
    """(equal, differing elements): byte equality; in f32 outputs with ``nan_any`` a NaN matches any NaN."""
    if dtype == "f32":
        g, w = got.view(np.uint32), want.view(np.uint32)
        diff = g != w
        if nan_any:
            diff &= ~(_nan32(g) & _nan32(w))
    else:
        diff = got != want
    return not diff.any(), int(diff.sum())


def within(got: np.ndarray, ref: np.ndarray, tol: np.ndarray, anything: np.ndarray) -> tuple:
    """(every element within the bound, elements outside, largest ulp distance among finite ones):
    semantics.compare.compare's rule for a Bound(ulps=0, abs_tol=tol, anything=anything)."""
    g, r = got.view(np.float32), ref.view(np.float32)
    gb, rb = got.view(np.int32).astype(np.int64), ref.view(np.int32).astype(np.int64)
    with np.errstate(all="ignore"):
        g64, r64 = g.astype(np.float64), r.astype(np.float64)
        fin = np.isfinite(g64) & np.isfinite(r64)
        ok = gb == rb
        ok |= np.isnan(g64) & np.isnan(r64)
        ok |= fin & (np.abs(g64 - r64) <= tol)
        ok |= (g64 == 0) & (r64 == 0)
        ok |= anything
        key = lambda b: np.where(b < 0, -(b & 0x7FFFFFFF), b)  # noqa: E731
        dist = np.abs(key(gb) - key(rb))
    return bool(ok.all()), int((~ok).sum()), int(dist[fin].max()) if fin.any() else 0


def check_run(d: Path, m: dict, exes: dict, timeout: float) -> dict:
    """Every set of layer ``m`` on every build; the comparisons of the module doc."""
    dt, name = m["dtype"], m["name"]
    rec: dict = {"name": name, "kind": m["kind"], "shape": m["shape"], "tail": m["tail"],
                 "instructions": m["instructions"], "sets": []}
    for k in m["sets"]:
        img = load(d / "img" / f"{name}_{k}.in.gz")
        emu_b = np.frombuffer(load(d / "img" / f"{name}_{k}.emu.gz"), np.uint8)
        ref = np.frombuffer(load(d / "img" / f"{name}_{k}.ref.gz"), np.uint8)
        s: dict = {"set": k}
        got = {}
        for mode, exe in exes.items():
            final, secs, why = run(exe, img, timeout)
            s[f"{mode}_s"] = round(secs, 4)
            if final is None:
                s[f"{mode}_error"] = why
                continue
            got[mode] = outputs(final, m)
        if "emulated" in got:
            s["emulated_eq_bundle"] = same(got["emulated"], emu_b, dt, False)[0]
        if "native" in got:
            s["native_eq_emulation"] = same(got["native"], emu_b, dt, True)[0]
            if "emulated" in got:
                s["native_eq_host_emulation"] = same(got["native"], got["emulated"], dt, True)[0]
        for mode, out in got.items():
            if m["kind"] == "int8":
                s[f"{mode}_eq_reference"] = same(out, ref, dt, False)[0]
            else:
                model = np.frombuffer(load(d / "img" / f"{name}_{k}.model.gz"), np.uint8)
                tol = np.frombuffer(load(d / "img" / f"{name}_{k}.tol.gz"), np.float64)
                anything = np.frombuffer(load(d / "img" / f"{name}_{k}.any.gz"), np.uint8).astype(bool)
                s[f"{mode}_eq_model"] = same(out, model, dt, True)[0]
                ok, bad, ulp = within(out, ref, tol, anything)
                s[f"{mode}_within_bound"], s[f"{mode}_outside"], s[f"{mode}_max_ulp"] = ok, bad, ulp
                s[f"{mode}_eq_reference"] = same(out, ref, dt, False)[0]
        rec["sets"].append(s)
    return rec


_REQUIRED = ("emulated_eq_bundle", "native_eq_emulation", "native_eq_host_emulation", "emulated_eq_model",
             "native_eq_model", "emulated_within_bound", "native_within_bound")


def ok_run(rec: dict) -> bool:
    for s in rec["sets"]:
        if any(key.endswith("_error") for key in s):
            return False
        if any(s.get(key) is False for key in _REQUIRED):
            return False
        if rec["kind"] == "int8" and any(s.get(f"{mode}_eq_reference") is False for mode in ("emulated", "native")):
            return False
    return True


def _verdict(rec: dict, mode: str) -> str:
    sets = rec["sets"]
    if any(f"{mode}_error" in s for s in sets):
        return "ERROR: " + next(s[f"{mode}_error"] for s in sets if f"{mode}_error" in s)
    if not any(f"{mode}_s" in s for s in sets):
        return "-"
    if rec["kind"] == "int8":
        return "= reference" if all(s.get(f"{mode}_eq_reference") for s in sets) else "!= REFERENCE"
    model = all(s.get(f"{mode}_eq_model") for s in sets)
    bound = all(s.get(f"{mode}_within_bound") for s in sets)
    ulp = max(s.get(f"{mode}_max_ulp", 0) for s in sets)
    return (("= model" if model else "!= MODEL") + ", " + (f"ref within bound ({ulp} ulp)" if bound
                                                            else "ref OUTSIDE BOUND"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", type=Path, default=Path(__file__).resolve().parent)
    ap.add_argument("--json", type=Path, help="write the results JSON here (default DIR/results.json)")
    ap.add_argument("--emulated-only", action="store_true", help="skip the native half even on an AMX host")
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel gcc builds")
    args = ap.parse_args()
    d = args.dir
    manifest = json.loads((d / "runs.json").read_text())
    model, missing = cpu(manifest["cpu_flags"])
    gcc = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    native = not missing and not args.emulated_only
    why = ("" if native else "--emulated-only" if args.emulated_only
           else f"/proc/cpuinfo lacks {', '.join(missing)}")
    print(f"cpu: {model}; gcc: {gcc}")
    print("native AMX: yes, both halves run" if native else
          f"native AMX: NO ({why}): only the emulated half runs; nothing here says anything about the hardware")
    modes = ["emulated", "native"] if native else ["emulated"]
    results = []
    t0 = time.perf_counter()
    jobs = [(m["name"], mode) for m in manifest["runs"] for mode in modes]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        built = dict(zip(jobs, ex.map(lambda j: build(d, j[0], j[1], manifest["flags"][j[1]]), jobs)))
    print(f"built {len(jobs)} units in {time.perf_counter() - t0:.1f} s")
    for m in manifest["runs"]:
        exes, errors = {}, {}
        for mode in modes:
            exe, err = built[(m["name"], mode)]
            if err:
                errors[mode] = err
            else:
                exes[mode] = exe
        rec = check_run(d, m, exes, args.timeout)
        for mode, err in errors.items():
            for s in rec["sets"]:
                s[f"{mode}_error"] = f"gcc: {err}"
        rec["ok"] = ok_run(rec)
        results.append(rec)
    print(f"{'layer':34s} {'instr':>6s}  {'native (vs emulation; vs reference)':44s}  emulated")
    for rec in results:
        nat = _verdict(rec, "native")
        if native and nat[:5] != "ERROR":
            eq = all(s.get("native_eq_emulation") and s.get("native_eq_host_emulation") for s in rec["sets"])
            nat = ("= emulation; " if eq else "!= EMULATION; ") + nat
        print(f"{rec['name']:34s} {rec['instructions']:6d}  {nat:44s}  {_verdict(rec, 'emulated')}"
              + ("" if rec["ok"] else "  FAIL"))
    good = sum(r["ok"] for r in results)
    print(f"summary: {good} of {len(results)} layers as expected ({'native and emulated' if native else 'emulated only'}, "
          f"{time.perf_counter() - t0:.1f} s)")
    out = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"), "cpu": model, "gcc": gcc,
           "native": native, "why_not_native": why, "bundle_commit": manifest.get("commit", "?"),
           "command": manifest.get("command", ""), "runs": results}
    path = args.json or d / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"JSON: {path}")
    return 0 if good == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
