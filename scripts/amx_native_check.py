"""Run a bundle of AMX programs natively and compare with the simulator and the reference.

Two uses:

- here (the project installed): ``python scripts/amx_native_check.py --prepare DIR`` writes the
  bundle (fuzz/amx_bundle.py: the AMX program set's emitted C, HBM images before and
  after on the functional simulator, reference output bytes) and a copy of this script as
  ``DIR/check.py``;
- on a host with AMX and only Python 3 and gcc: ``python3 DIR/check.py`` builds every unit with
  ``gcc -O2 -march=sapphirerapids``, runs it on each HBM image (stdin -> stdout) and prints one
  line per program (the native final image equal to the simulator's, the outputs equal to the
  reference or, for the row-major Figs. 43 / 46 runs, different as expected) and a summary; exit
  0 when every run is as expected. ``--emulated`` builds against the bundled emulation.h instead
  (any host), ``--jobs N`` builds in parallel.

In f32 outputs a NaN matches any NaN: which NaN the hardware returns for several NaN operands and
for TDPBF16PS is not modelled (the amx target's docstring). Needs nothing but the standard library.
"""

import argparse
import concurrent.futures
import gzip
import json
import os
import platform
import signal
import subprocess
import sys
import time
from array import array
from pathlib import Path

FLAGS = ("amx_tile", "amx_int8", "amx_bf16", "avx512f", "avx512bw")


def cpu() -> tuple[str, list[str]]:
    """(the CPU's model name, the FLAGS it lacks)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError as e:
        return platform.processor(), [f"cannot read /proc/cpuinfo: {e}"]
    model = next((ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")), "?")
    flags = next((set(ln.split(":", 1)[1].split()) for ln in text.splitlines() if ln.startswith("flags")), set())
    return model, [f for f in FLAGS if f not in flags]


def build(d: Path, name: str, emulated: bool) -> str:
    """Compile c/NAME.c into bin/NAME; '' or gcc's complaint."""
    src, exe = d / "c" / f"{name}.c", d / "bin" / (name + (".emu" if emulated else ""))
    if exe.exists():
        return ""
    if emulated:
        text = src.read_text().replace("#include <immintrin.h>", '#include "emulation.h"', 1)
        src = d / "bin" / f"{name}.emu.c"
        src.write_text(text)
        cmd = ["gcc", "-O2", "-std=gnu11", "-ffp-contract=off", "-iquote", str(d)]
    else:
        cmd = ["gcc", "-O2", "-march=sapphirerapids"]
    r = subprocess.run(cmd + ["-o", str(exe), str(src), "-lm"], capture_output=True, text=True)
    return r.stderr.strip()[-800:] if r.returncode else ""


def f32_nan(v: int) -> bool:
    return (v & 0x7F800000) == 0x7F800000 and (v & 0x7FFFFF) != 0


def same(got: bytes, want: bytes, f32_ranges: list) -> bool:
    """Byte equality, except that in the (lo, hi) f32 ranges a NaN matches any NaN."""
    if got == want:
        return True
    if len(got) != len(want):
        return False
    g, w = bytearray(got), bytearray(want)
    for lo, hi in f32_ranges:
        if g[lo:hi] == w[lo:hi]:
            continue
        a, b = array("I", bytes(g[lo:hi])), array("I", bytes(w[lo:hi]))
        for i in range(len(a)):
            if a[i] != b[i] and f32_nan(a[i]) and f32_nan(b[i]):
                a[i] = b[i]
        g[lo:hi] = a.tobytes()
    return g == w


def run(d: Path, m: dict, emulated: bool, timeout: float) -> tuple[bool, str]:
    name = m["name"]
    exe = d / "bin" / (name + (".emu" if emulated else ""))
    f32 = [(a, a + n) for a, n, is_f32 in m["outputs"] if is_f32 and a % 4 == 0 and n % 4 == 0]
    notes, ok = [], True
    for k in m["sets"]:
        img = gzip.decompress((d / "img" / f"{name}_{k}.in.gz").read_bytes())
        try:
            r = subprocess.run([str(exe)], input=img, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, f"set {k}: no answer within {timeout:g} s"
        if r.returncode < 0:
            err = r.stderr.decode(errors="replace").strip().splitlines()
            return False, f"set {k}: killed by {signal.Signals(-r.returncode).name}" + (f" ({err[-1]})" if err else "")
        if r.returncode:
            why = {3: " (arch_prctl(ARCH_REQ_XCOMP_PERM) refused)"}.get(r.returncode, "")
            return False, f"set {k}: exit status {r.returncode}{why}"
        sim = gzip.decompress((d / "img" / f"{name}_{k}.sim.gz").read_bytes())
        if not same(r.stdout, sim, f32):
            diff = next(i for i in range(min(len(sim), len(r.stdout))) if r.stdout[i] != sim[i]) \
                if len(r.stdout) == len(sim) else -1
            ok = False
            notes.append(f"set {k}: image != simulator's (first byte {diff})")
            continue
        if k in m["reference_sets"]:
            ref = gzip.decompress((d / "img" / f"{name}_{k}.ref.gz").read_bytes())
            got = b"".join(r.stdout[a:a + n] for a, n, _ in m["outputs"])
            pos, rr = 0, []
            for a, n, is_f32 in m["outputs"]:
                if is_f32 and n % 4 == 0:
                    rr.append((pos, pos + n))
                pos += n
            eq = same(got, ref, rr)
            if eq != m["expect_reference"]:
                ok = False
                notes.append(f"set {k}: outputs {'==' if eq else '!='} reference, expected the opposite")
    return ok, "; ".join(notes)


def check(d: Path, emulated: bool, jobs: int, timeout: float) -> int:
    model, missing = cpu()
    print(f"cpu: {model}; gcc: {subprocess.run(['gcc', '--version'], capture_output=True, text=True).stdout.splitlines()[0]}")
    if missing and not emulated:
        print(f"no native AMX here: /proc/cpuinfo lacks {', '.join(missing)} (--emulated runs the emulation)")
        return 2
    manifest = json.loads((d / "runs.json").read_text())
    runs = manifest["runs"]
    (d / "bin").mkdir(exist_ok=True)
    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        errors = dict(zip([m["name"] for m in runs], ex.map(lambda m: build(d, m["name"], emulated), runs)))
    built = time.perf_counter() - t0
    good = bad = 0
    t0 = time.perf_counter()
    for m in runs:
        if errors[m["name"]]:
            ok, note = False, f"gcc failed: {errors[m['name']]}"
        else:
            ok, note = run(d, m, emulated, timeout)
        good += ok
        bad += not ok
        exp = "== reference" if m["expect_reference"] else "!= reference (expected)"
        print(f"{m['name']:22s} {m['instructions']:4d} instructions  {len(m['sets'])} sets  "
              f"{'ok' if ok else 'FAIL'}  image == simulator, outputs {exp}" + (f"  [{note}]" if note else ""))
    print(f"summary: {good} of {len(runs)} programs as expected, {bad} not "
          f"({'emulated' if emulated else 'native'}; builds {built:.1f} s, runs {time.perf_counter() - t0:.1f} s)")
    return 0 if bad == 0 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?", type=Path, default=Path(__file__).resolve().parent)
    ap.add_argument("--prepare", action="store_true", help="write the bundle into DIR (needs the project)")
    ap.add_argument("--limit", type=int, default=0, help="with --prepare: only the first N programs of the set")
    ap.add_argument("--emulated", action="store_true", help="build against the bundled emulation.h")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args()
    if args.prepare:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from fuzz.amx_bundle import prepare

        runs = prepare(args.dir, limit=args.limit)["runs"]
        print(f"{len(runs)} programs in {args.dir}; on an AMX host: python3 {args.dir}/check.py")
        return 0
    return check(args.dir, args.emulated, args.jobs, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
