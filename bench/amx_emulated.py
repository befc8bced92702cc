"""Speed of the emulated AMX backend (compilers/targets/amx) on the AMX program set
(tests/compilers/data/amx_programs): gcc build time cold (an empty cache) and cached (the
content-hash lookup), and programs per second of a run from a cached build (emit the C, look the
build up, run the executable on an HBM image, read it back), beside the functional simulator on
the same programs and images. Prints a table and writes JSON.

    python bench/amx_emulated.py [--limit N] [--json bench/results/amx_emulated.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from compilers.targets.amx.emit_c import emit_c  # noqa: E402
from check.policy import Policy, compare_images  # noqa: E402
from compilers.targets.amx.backends import EmulatedBackend  # noqa: E402
from compilers.targets.amx.cbuild import build, gcc_version, run_image  # noqa: E402
from fuzz.amx_programs import graph, load_set  # noqa: E402
from compilers.program import hbm_image  # noqa: E402
from compilers.simulator import simulate_image  # noqa: E402
from compilers.targets import load_target  # noqa: E402
from semantics.inputs import random_inputs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, default=ROOT / "tests/compilers/data/amx_programs")
    ap.add_argument("--limit", type=int, default=0, help="only the first N programs of the set")
    ap.add_argument("--json", type=Path, default=ROOT / "bench/results/amx_emulated.json")
    args = ap.parse_args()
    acc = load_target("amx")
    progs = load_set(args.set)
    names = list(progs)[:args.limit or None]
    imgs = {n: hbm_image(progs[n], random_inputs(graph(n), 0), acc.hbm_size) for n in names}
    srcs = {n: emit_c(progs[n], acc, with_main=True) for n in names}
    cold, cached = [], []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp)
        for n in names:
            t0 = time.perf_counter()
            b = build(srcs[n], cache=cache)
            if not b.cached:      # two programs of the set may emit the same unit
                cold.append(time.perf_counter() - t0)
        for n in names:
            t0 = time.perf_counter()
            b = build(srcs[n], cache=cache)
            cached.append(time.perf_counter() - t0)
            assert b.cached
        exes = {n: build(srcs[n], cache=cache).exe for n in names}
        t0 = time.perf_counter()
        finals = {n: run_image(exes[n], imgs[n]) for n in names}
        process = time.perf_counter() - t0
    be = EmulatedBackend(acc)
    for n in names:           # the backend's own cache (build/amx) warmed, then timed end to end
        be.run_image(progs[n], imgs[n])
    t0 = time.perf_counter()
    for n in names:
        be.run_image(progs[n], imgs[n])
    end_to_end = time.perf_counter() - t0
    t0 = time.perf_counter()
    sims = {n: simulate_image(acc, progs[n], imgs[n]) for n in names}
    sim = time.perf_counter() - t0
    agree = sum(compare_images(progs[n], finals[n], sims[n], Policy.of(progs[n], EmulatedBackend)) is None
                for n in names)
    instrs = sum(len(progs[n]) for n in names)
    res = {
        "programs": len(names), "distinct_units": len(cold), "instructions": instrs, "agree_with_simulator": agree,
        "build_cold_s_mean": statistics.mean(cold), "build_cold_s_median": statistics.median(cold),
        "build_cold_s_total": sum(cold), "build_cached_ms_mean": 1000 * statistics.mean(cached),
        "run_programs_per_s_end_to_end": len(names) / end_to_end, "run_programs_per_s_process": len(names) / process,
        "simulator_programs_per_s": len(names) / sim, "gcc": gcc_version(), "python": platform.python_version(),
        "cpu": _cpu(), "date": time.strftime("%Y-%m-%d"),
    }
    rows = [("programs (instructions)", f"{len(names)} ({instrs})"),
            ("agree with the simulator (image)", f"{agree} / {len(names)}"),
            ("build, cold: mean / median / total", f"{res['build_cold_s_mean']:.2f} s / {res['build_cold_s_median']:.2f} s"
             f" / {res['build_cold_s_total']:.0f} s"),
            ("build, cached: mean", f"{res['build_cached_ms_mean']:.2f} ms"),
            ("run from a cached build (emit + lookup + run + read)", f"{res['run_programs_per_s_end_to_end']:.1f} programs/s"),
            ("run, the process alone", f"{res['run_programs_per_s_process']:.1f} programs/s"),
            ("functional simulator, same programs", f"{res['simulator_programs_per_s']:.1f} programs/s")]
    w = max(len(a) for a, _ in rows)
    for a, b in rows:
        print(f"{a:<{w}}  {b}")
    print(f"({res['gcc']}; {res['cpu']})")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0 if agree == len(names) else 1


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    raise SystemExit(main())
