"""Data movement of compiled composite kernels against the Gemmini library-call sequence (issue 5;
seed 000 §9.3: Act moves 40% less data on average, up to 55.5%).

A composite kernel chains Gemmini library kernels; each library call (one int8 saturation of a
``dot`` or an ``add`` in the HLO) loads its two inputs from DRAM and stores its output. The
library sequence is costed by compiling the library kernels themselves (gemmini_gemm.hlo,
gemmini_add.hlo) with the same compiler and summing one per call; the composite is compiled
whole. Bytes moved are the description's ``hbm_bytes`` of every instruction (DRAM <-> scratchpad
or accumulator), cycles its per-instruction estimates. Every program is checked on the simulator.

    python bench/composite_movement.py [--json bench/results/composite_movement.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from check.run import check_program  # noqa: E402
from compilers.compile import compile  # noqa: E402
from compilers.isa import Accelerator  # noqa: E402
from compilers.program import Program  # noqa: E402
from compilers.targets import load_target  # noqa: E402
from semantics.hlo_parser import parse_file  # noqa: E402
from semantics.ir import Graph  # noqa: E402

from bench._meta import PAPER  # noqa: E402


def library_calls(g: Graph) -> list[str]:
    """The library calls of a composite, in program order: one per clamp, named by the operator
    the clamp saturates (``dot`` -> gemm, ``add`` -> add)."""
    comp = g.entry
    by_name = {i.name: i for i in comp.instructions}
    calls = []
    for ins in comp.instructions:
        if ins.opcode == "clamp":
            src = by_name[ins.operands[1]].opcode
            calls.append({"dot": "gemm", "add": "add"}[src])
    return calls


def measure(acc: Accelerator, prog: Program, cost: float) -> dict:
    return {"instructions": len(prog.instructions), "cycles": cost,
            "bytes": sum(acc.instructions[c.name].cost.hbm_bytes.eval(c.env) for c in prog.instructions)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="default bench/results/composite_movement.json (docs tables read it)")
    args = ap.parse_args()
    acc = load_target("gemmini")
    lib = {}
    for name in ("gemm", "add"):
        g = parse_file(PAPER / f"gemmini_{name}.hlo")
        r = compile(g, acc)
        assert check_program(g, acc, r.program, 3).ok, name
        lib[name] = measure(acc, r.program, r.cost)
    rows = []
    for p in sorted(PAPER.glob("composite_*.hlo")):
        g = parse_file(p)
        r = compile(g, acc)
        chk = check_program(g, acc, r.program, 3)
        act = measure(acc, r.program, r.cost)
        calls = library_calls(g)
        seq = {k: sum(lib[c][k] for c in calls) for k in ("instructions", "cycles", "bytes")}
        rows.append({"kernel": p.stem, "calls": calls, "act": act, "library": seq, "checked": chk.ok,
                     "bytes_saved": 1 - act["bytes"] / seq["bytes"]})
    print(f"{'kernel':<24}{'calls':<16}{'lib instr':>10}{'act instr':>10}{'lib bytes':>10}{'act bytes':>10}"
          f"{'saved':>8}{'lib cyc':>9}{'act cyc':>9}  check")
    for r in rows:
        print(f"{r['kernel']:<24}{'+'.join(r['calls']):<16}{r['library']['instructions']:>10}"
              f"{r['act']['instructions']:>10}{r['library']['bytes']:>10}{r['act']['bytes']:>10}"
              f"{r['bytes_saved']:>8.1%}{r['library']['cycles']:>9g}{r['act']['cycles']:>9g}  "
              + ("ok" if r["checked"] else "MISMATCH"))
    saved = [r["bytes_saved"] for r in rows]
    print(f"\ndata movement saved: mean {statistics.mean(saved):.1%}, max {max(saved):.1%} "
          f"over {len(rows)} composites; {sum(r['checked'] for r in rows)}/{len(rows)} checked")
    from bench._meta import RESULTS, run_meta
    out = Path(args.json) if args.json else RESULTS / "composite_movement.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**run_meta(), "command": "python bench/composite_movement.py",
                               "library": lib, "composites": rows}, indent=1) + "\n")
    print(f"wrote {out}")
    return 0 if all(r["checked"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
