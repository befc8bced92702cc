"""Act's own Gemmini fuzz corpus with host partitioning: what compiles, what checks, and how much of
the matrix work lands on the array.

    python bench/act_corpus_host.py [--target gemmini] [--backends sim,rtl] [--sets 3] [--jobs 2]
                                    [--json bench/results/act_corpus_host.json]

Each of the 100 kernels of ``tests/corpus/act/act-gemmini-fuzz`` (NNSmith graphs the Act authors
generated to fuzz their Gemmini backend: s8 matmuls among wraparound adds, clamps, reductions) is
compiled with :func:`compilers.compile.compile` (``host=True``): whole where the target runs it,
else partitioned (:mod:`compilers.partition`). Each program is checked with
:func:`check.check_program` on every backend named, ``--sets`` input sets each, against the
reference interpreter on the kernel. A row records how it compiled (``whole``, ``partitioned`` or
the exit 3 reason), each backend's verdict, the MACs on the array and in the kernel, the
operators on each side, the bytes handed over and the compile time.

Prints the table's totals and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._meta import ACT_CORPUS, RESULTS, run_meta  # noqa: E402

CORPUS = ACT_CORPUS / "act-gemmini-fuzz"


def _kernel(work: tuple[str, str, tuple[str, ...], int]) -> dict:
    path, target, backends, sets = work
    from check.run import check_program
    from compilers.compile import compile
    from compilers.errors import Unsupported
    from compilers.partition.program import Partitioned, whole_split
    from semantics.hlo_parser import parse_file

    g = parse_file(path)
    row: dict = {"kernel": Path(path).name}
    t0 = time.perf_counter()
    try:
        res = compile(g, target, host=True)
    except Unsupported as e:
        return {**row, "status": "unsupported", "reason": e.reason, "compile_s": time.perf_counter() - t0}
    row["compile_s"] = time.perf_counter() - t0
    p = res.program
    split = p.split if isinstance(p, Partitioned) else whole_split(g)
    row.update(status="partitioned" if isinstance(p, Partitioned) else "whole", instructions=len(p.instructions),
               placement=split.as_dict())
    for b in backends:
        v = check_program(g, res.acc, p, sets, 0, backend=b)
        row[b] = v.outcome if v.ok or not v.reason else f"{v.outcome}: {v.reason[:200]}"
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="gemmini")
    ap.add_argument("--backends", default="sim,rtl")
    ap.add_argument("--sets", type=int, default=3, help="input sets per backend")
    ap.add_argument("--jobs", type=int, default=1, help="kernels run in this many worker processes")
    ap.add_argument("--json", default=str(RESULTS / "act_corpus_host.json"))
    a = ap.parse_args(argv)
    backends = tuple(b for b in a.backends.split(",") if b)
    if "rtl" in backends:
        from rtl_harness.runner import build

        build(a.target)                 # the Verilated model, once, before any kernel's clock
    files = sorted(CORPUS.glob("*.hlo"))
    work = [(str(f), a.target, backends, a.sets) for f in files]
    rows: list[dict] = []
    t0 = time.perf_counter()

    def report(r: dict) -> None:
        rows.append(r)
        checks = " ".join(f"{b}={str(r.get(b, '-')).split(':')[0]}" for b in backends)
        pl = r.get("placement")
        share = f"{pl['macs_acc']}/{pl['macs_total']} MACs" if pl else r.get("reason", "")[:80]
        print(f"[{len(rows)}/{len(work)}] {r['kernel']:18s} {r['status']:11s} {checks} {share} "
              f"{r['compile_s']:.1f}s", flush=True)

    if a.jobs > 1:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(a.jobs) as pool:
            for r in pool.imap(_kernel, work):
                report(r)
    else:
        for w in work:
            report(_kernel(w))
    compiled = [r for r in rows if r["status"] != "unsupported"]
    checked = {b: sum(r.get(b) in ("pass", "degenerate") for r in compiled) for b in backends}
    passed = {b: sum(r.get(b) == "pass" for r in compiled) for b in backends}
    with_dots = [r for r in compiled if r["placement"]["macs_total"]]
    macs_acc = sum(r["placement"]["macs_acc"] for r in compiled)
    macs = sum(r["placement"]["macs_total"] for r in compiled)
    full = sum(r["placement"]["macs_acc"] == r["placement"]["macs_total"] for r in with_dots)
    ops_acc = sum(r["placement"]["ops_acc"] for r in compiled)
    ops = sum(r["placement"]["ops_total"] for r in compiled)
    print(f"\n{len(compiled)} of {len(rows)} kernels compile for {a.target} "
          f"({sum(r['status'] == 'whole' for r in rows)} whole, {sum(r['status'] == 'partitioned' for r in rows)} "
          "partitioned)")
    for b in backends:
        print(f"  {b}: {checked[b]} agree with the reference ({passed[b]} pass, {checked[b] - passed[b]} degenerate)")
    print(f"  MACs on the array: {macs_acc:,} of {macs:,} ({100 * macs_acc / max(macs, 1):.1f}%); "
          f"{full} of {len(with_dots)} kernels with a dot have all theirs there")
    print(f"  operators on the array: {ops_acc} of {ops} ({100 * ops_acc / max(ops, 1):.1f}%); "
          f"{time.perf_counter() - t0:.0f} s")
    cmd = "python bench/act_corpus_host.py " + " ".join(sys.argv[1:] if argv is None else argv)
    out = {**run_meta(), "command": cmd.strip(), "target": a.target, "kernels": len(rows), "compiled": len(compiled),
           "checked": checked, "passed": passed, "macs_acc": macs_acc, "macs_total": macs,
           "kernels_with_dots": len(with_dots), "all_macs_on_array": full, "ops_acc": ops_acc, "ops_total": ops,
           "rows": rows}
    Path(a.json).parent.mkdir(parents=True, exist_ok=True)
    Path(a.json).write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
