"""Compiled paper kernels on the RTL (issue 6): outputs against the reference and measured cycles.

For every paper kernel (examples/regression) and each RTL target (gemmini, qkv): compile with the Act
compiler (a kernel the target cannot run is listed with the compiler's reason), run the program on
the Verilated RTL for ``--inputs`` random input sets (odd sets use edge values) and compare with the
reference interpreter under the instructions' numeric contracts; report RTL cycles next to the
description's cycle estimate.

Composite kernels are also compared with their Gemmini library-call sequence (each call is the
compiled gemmini_gemm / gemmini_add program, which loads its inputs and stores its output), both
measured on the RTL: speedup = library cycles / composite cycles (Act, seed 000 §9.3: 1.48x
geomean, 1.77x max).

    python bench/rtl_kernels.py [--inputs 3] [--dram-latency N] [--json build/bench/rtl_kernels.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from check.backends import get_backend  # noqa: E402
from check.run import check_program  # noqa: E402
from bench.composite_movement import library_calls  # noqa: E402
from compilers.compile import compile  # noqa: E402
from compilers.errors import Unsupported  # noqa: E402
from compilers.targets import load_target  # noqa: E402
from semantics.hlo_parser import parse_file  # noqa: E402

from bench._meta import PAPER  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=3, help="random input sets per kernel (default 3)")
    ap.add_argument("--dram-latency", type=int, default=None,
                    help="Gemmini testbench DRAM read latency in cycles (default rtl_harness.gemmini.DRAM_LATENCY)")
    ap.add_argument("--json", default=str(ROOT / "build" / "bench" / "rtl_kernels.json"))
    args = ap.parse_args()
    rows: list[dict] = []
    for target in ("qkv", "gemmini"):
        acc = load_target(target)
        backend = get_backend(acc, "rtl", dram_latency=args.dram_latency)
        for p in sorted(PAPER.glob("*.hlo")):
            g = parse_file(p)
            row: dict = {"kernel": p.stem, "target": target}
            try:
                r = compile(g, acc)
            except Unsupported as e:
                row["skipped"] = e.reason
                rows.append(row)
                continue
            t = time.perf_counter()
            chk = check_program(g, acc, r.program, args.inputs, backend=backend)
            row.update(instructions=len(r.program.instructions), estimated=r.cost, rtl_cycles=chk.cycles,
                       ok=chk.ok, message=chk.message, seconds=time.perf_counter() - t)
            rows.append(row)
            print(f"{target:<8}{p.stem:<24}{row['instructions']:>6} instr {row['rtl_cycles']:>9} RTL cycles "
                  f"(estimate {r.cost:g})  {'ok' if chk.ok else 'MISMATCH ' + chk.message}", flush=True)
    ran = {(r["target"], r["kernel"]): r for r in rows if "skipped" not in r}
    comps = []
    for (target, name), r in sorted(ran.items()):
        if target != "gemmini" or not name.startswith("composite_"):
            continue
        calls = library_calls(parse_file(PAPER / f"{name}.hlo"))
        lib = [ran[("gemmini", f"gemmini_{c}")] for c in calls]
        lib_cycles = sum(x["rtl_cycles"] for x in lib)
        comps.append({"kernel": name, "calls": calls, "library_cycles": lib_cycles, "act_cycles": r["rtl_cycles"],
                      "speedup": lib_cycles / r["rtl_cycles"], "checked": r["ok"] and all(x["ok"] for x in lib)})
    print(f"\n{'composite':<24}{'calls':<16}{'library cyc':>12}{'act cyc':>10}{'speedup':>9}")
    for c in comps:
        print(f"{c['kernel']:<24}{'+'.join(c['calls']):<16}{c['library_cycles']:>12}{c['act_cycles']:>10}"
              f"{c['speedup']:>8.2f}x")
    if comps:
        geo = math.exp(sum(math.log(c["speedup"]) for c in comps) / len(comps))
        print(f"RTL cycles, composite vs library calls: geomean {geo:.2f}x, max {max(c['speedup'] for c in comps):.2f}x "
              f"over {len(comps)} composites (Act: 1.48x / 1.77x)")
    skipped = [r for r in rows if "skipped" in r]
    print(f"\n{len(ran)} (kernel, target) pairs ran on the RTL, {sum(r['ok'] for r in ran.values())} equal the reference; "
          f"{len(skipped)} do not compile for that target")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"dram_latency": args.dram_latency, "kernels": rows, "composites": comps}, indent=1))
    print(f"wrote {out}")
    return 0 if all(r["ok"] for r in ran.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
