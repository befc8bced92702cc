"""Compile-time benchmark of the Act compiler (issue 5; seed 000 §9.4, Fig. 21).

For every kernel: the compile time (all of ``compilers.compile.compile``, through the enumeration's stop;
best of ``--trials``, and the mean of the trials after the first, the steady state), the time to
the program the compile selected (``Stats.best_at``: Fig. 14a's ``final.time``, which is what Act
reports -- "The compilation time reported is final.time in Fig. 14 (a) [...] averaged over 20
trials", on an Intel i7-13700H with a generated backend, seed 000 §9.4; the enumeration then goes
on until its stop, which Act's figure leaves out), the per-module breakdown M1-M6 and CP-SAT, the
outcome (instructions, or the one-line reason the target cannot run it) and whether the program
checks on the simulator. Sets: the paper kernels for their target (qkv_attention -> qkv, gemmini_* and
composite_* -> gemmini, amx_* -> amx), the 100 act-gemmini-fuzz kernels on gemmini, and a generated
391-node stress kernel (a chain of 39 QKV attention blocks); ``vnni``: K1 and K2 with B in VNNI
layout, whose programs are the paper's (Figs. 43, 46). Backend generation (the target's rule
set, once per process) is timed separately. Trials run round robin over the kernels (each kernel's
best is drawn from the whole run), and a fixed Python workload is timed before, between the rounds
and after, as the machine's speed at the time (a shared machine's drift shows in the means).
Prints a table and writes JSON.

    python bench/compile_time.py [--set paper|vnni|fuzz|stress|all] [--trials 3] [--json bench/results/compile_time_<set>.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from check.run import check_program  # noqa: E402
from compilers.compile import compile, rules_for  # noqa: E402
from compilers.errors import Unsupported  # noqa: E402
from compilers.targets import load_target  # noqa: E402
from semantics.errors import AccvError  # noqa: E402
from semantics.hlo_parser import parse_file, parse_hlo  # noqa: E402

from bench._meta import PAPER, ACT_CORPUS as CORPUS  # noqa: E402


def target_of(name: str) -> str:
    if name.startswith("qkv"):
        return "qkv"
    if name.startswith("amx"):
        return "amx"
    return "gemmini"


def stress_kernel(blocks: int = 39) -> str:
    """A QKV-attention chain: each block softmax(Q K^T) V feeds the next block's Q (10 HLO
    instructions per block incl. its parameters and constant, plus Q: 39 blocks = 391 nodes)."""
    lines = ["HloModule stress", "", "add_bf16 {", "  a = bf16[] parameter(0)", "  b = bf16[] parameter(1)",
             "  ROOT s = bf16[] add(a, b)", "}", "", "ENTRY main {", "  q0 = bf16[64,64] parameter(0)"]
    prev = "q0"
    for i in range(blocks):
        lines += [f"  k{i} = bf16[64,64] parameter({2 * i + 1})", f"  v{i} = bf16[64,64] parameter({2 * i + 2})",
                  f"  kt{i} = bf16[64,64] transpose(k{i}), dimensions={{1,0}}",
                  f"  s{i} = bf16[64,64] dot({prev}, kt{i}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}",
                  f"  e{i} = bf16[64,64] exponential(s{i})", f"  z{i} = bf16[] constant(0)",
                  f"  r{i} = bf16[64] reduce(e{i}, z{i}), dimensions={{1}}, to_apply=add_bf16",
                  f"  b{i} = bf16[64,64] broadcast(r{i}), dimensions={{0}}",
                  f"  p{i} = bf16[64,64] divide(e{i}, b{i})",
                  f"  o{i} = bf16[64,64] dot(p{i}, v{i}), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}"]
        prev = f"o{i}"
    lines[-1] = lines[-1].replace(f"  o{blocks - 1} =", f"  ROOT o{blocks - 1} =")
    return "\n".join(lines + ["}"]) + "\n"


def vnni_kernel(name: str):  # noqa: ANN201
    """The corpus K1 / K2 with B declared in TDPBUSD's VNNI layout ({0,1:T(4,1)}: 4 consecutive k of
    one column per dword) instead of the corpus's row-major {1,0:T(16,64)}: the kernels whose
    programs are the paper's Figs. 43 and 46 (16 and 9 instructions; see docs/compiler.md)."""
    text = (PAPER / f"{name}.hlo").read_text()
    return parse_hlo(text.replace("{1,0:T(16,64)}", "{0,1:T(4,1)}"), f"{name}_vnni")


class Bench:
    """One kernel's record: its first compile (which also instantiates the rules and generates
    the patterns its types need) and its best compile over the trials."""

    def __init__(self, name: str, graph, target: str) -> None:  # noqa: ANN001
        self.graph, self.acc = graph, load_target(target)
        self.rec: dict = {"kernel": name, "target": target, "nodes": len(graph.entry.instructions)}
        self.first: float | None = None
        self.times: list[float] = []    # every trial's compile time (s), the first included
        self.finals: list[float] = []   # every trial's time to the program it selected (s)
        self.best = None
        self.done = False          # unsupported or a compiler error: not compiled again

    def trial(self) -> None:
        t0 = time.perf_counter()
        try:
            res = compile(self.graph, self.acc, proofs="prove")
        except Unsupported as e:
            self.rec.update(outcome="unsupported", reason=e.reason if hasattr(e, "reason") else str(e),
                            seconds=time.perf_counter() - t0)
            self.done = True
            return
        except AccvError as e:     # a compiler bug: recorded as such, the run goes on
            self.rec.update(outcome="error", reason=f"compiler error: {e.reason}", seconds=time.perf_counter() - t0)
            self.done = True
            return
        if self.first is None:
            self.first = res.stats.total
        self.times.append(res.stats.total)
        self.finals.append(res.stats.best_at)
        if self.best is None or res.stats.total < self.best.stats.total:
            self.best = res

    def finish(self, check: int) -> dict:
        rec, best = self.rec, self.best
        if best is None:
            return rec
        st = best.stats
        rec.update(outcome="compiled", instructions=len(best.program.instructions), cost=best.cost,
                   total_ms=st.total * 1e3, first_ms=(self.first or 0.0) * 1e3,
                   mean_ms=steady_mean(self.times) * 1e3, trials_ms=[t * 1e3 for t in self.times],
                   final_best_ms=min(self.finals) * 1e3, final_mean_ms=steady_mean(self.finals) * 1e3,
                   finals_ms=[t * 1e3 for t in self.finals],
                   modules_ms={k: v * 1e3 for k, v in st.times.items()},
                   enodes=st.enodes, iterations=st.iterations, candidates=st.candidates)
        if check:
            chk = check_program(self.graph, self.acc, best.program, check)
            rec["checked"] = chk.ok
            if not chk.ok:
                rec["mismatch"] = chk.message
        return rec


def steady_mean(times: list[float]) -> float:
    """The mean of the trials after the first (the first also generates the rule instantiations
    and patterns its types need, which Act does at backend generation); the one trial if only one."""
    return statistics.mean(times[1:] if len(times) > 1 else times)


def calibrate() -> float:
    """Best of 5 of a fixed pure-Python workload, in ms: how fast this machine runs right now
    (a shared machine's speed drifts by 2x over minutes; the figure says which phase a run met)."""
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        d: dict[int, int] = {}
        for i in range(200_000):
            d[i & 1023] = d.get(i & 1023, 0) + i
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", default="all", choices=["paper", "vnni", "fuzz", "stress", "all"])
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--check", type=int, default=2, help="simulator checks per compiled kernel")
    ap.add_argument("--json", help="default bench/results/compile_time_<set>.json (docs tables read it)")
    args = ap.parse_args()
    gen = {}
    for t in ("qkv", "gemmini", "amx"):
        t0 = time.perf_counter()
        # a missing rule proof is proved at its first use, as accv compile does (outside the
        # compile times: Stats.total leaves proofs out), so the outcomes do not depend on what
        # earlier runs happened to prove
        rules_for(load_target(t), "prove")
        gen[t] = time.perf_counter() - t0
    jobs = []
    if args.set in ("paper", "all"):
        jobs += [(p.stem, parse_file(p), target_of(p.stem)) for p in sorted(PAPER.glob("*.hlo"))]
    if args.set in ("fuzz", "all"):
        jobs += [(p.name.split(".")[0], parse_file(p), "gemmini")
                 for p in sorted((CORPUS / "act-gemmini-fuzz").glob("*.hlo"))]
    if args.set in ("vnni", "all"):
        jobs += [(f"{k}_vnni", vnni_kernel(k), "amx") for k in ("amx_k1", "amx_k2")]
    if args.set in ("stress", "all"):
        jobs.append(("stress_391", parse_hlo(stress_kernel(), "stress_391"), "qkv"))
    benches = [Bench(n, g, t) for n, g, t in jobs]
    calib = [calibrate()]
    # round robin: trial k of every kernel before trial k + 1 of any, so that each kernel's best
    # is drawn from the whole run, not from the minutes one kernel's trials happened to meet
    steps = [(k, b) for k in range(args.trials) for b in benches]
    try:
        from tqdm import tqdm
        it = tqdm(steps, desc="compile", file=sys.stderr)
    except ImportError:  # pragma: no cover
        it = steps
    rounds: list[float] = []        # the machine's speed at the start of each round after the first
    for k, b in it:
        if k and b is benches[0] and args.trials > 1:
            rounds.append(calibrate())
        if not b.done:
            b.trial()
    calib.append(calibrate())
    recs = [b.finish(args.check) for b in benches]
    print("backend generation (rule set, once per target): " + ", ".join(f"{t} {v:.2f} s" for t, v in gen.items()))
    print(f"machine calibration (fixed Python workload, best of 5): {calib[0]:.1f} ms before, {calib[1]:.1f} ms after"
          + (f"; between rounds {min(rounds):.1f}-{max(rounds):.1f} ms (median {statistics.median(rounds):.1f})"
             if rounds else ""))
    hdr = (f"{'kernel':<26}{'target':<9}{'nodes':>6}{'instr':>7}{'first ms':>10}{'best ms':>10}{'mean ms':>10}"
           f"{'final':>8}{'f.mean':>8}  ") + "  ".join(
        f"{k:>6}" for k in ("M1", "M2", "M3", "M4", "M5", "solver", "M6")) + "  outcome"
    print(hdr)
    for r in recs:
        if r["outcome"] == "compiled":
            m = r["modules_ms"]
            print(f"{r['kernel']:<26}{r['target']:<9}{r['nodes']:>6}{r['instructions']:>7}{r['first_ms']:>10.1f}"
                  f"{r['total_ms']:>10.1f}{r['mean_ms']:>10.1f}{r['final_best_ms']:>8.1f}{r['final_mean_ms']:>8.1f}  "
                  + "  ".join(f"{m[k]:>6.1f}" for k in ("M1", "M2", "M3", "M4", "M5", "solver", "M6"))
                  + ("  checked" if r.get("checked") else ("  MISMATCH" if "checked" in r else "")))
        else:
            print(f"{r['kernel']:<26}{r['target']:<9}{r['nodes']:>6}{'-':>7}{'-':>10}{'-':>10}{'-':>10}"
                  f"{'-':>8}{'-':>8}  {r['reason']}")
    groups = {"paper": [r for r in recs if not r["kernel"].startswith(("fuzz", "stress")) and "_vnni" not in r["kernel"]],
              "vnni": [r for r in recs if r["kernel"].endswith("_vnni")],
              "fuzz": [r for r in recs if r["kernel"].startswith("fuzz")],
              "stress": [r for r in recs if r["kernel"].startswith("stress")]}
    print()
    for name, rs in groups.items():
        ok = [r for r in rs if r["outcome"] == "compiled"]
        if not rs:
            continue
        line = f"{name}: {len(ok)}/{len(rs)} compiled"
        if ok:
            ts = [r["total_ms"] for r in ok]
            line += f", compile time (best) median {statistics.median(ts):.1f} ms, mean {statistics.mean(ts):.1f} ms, max {max(ts):.1f} ms"
            ms = [r["mean_ms"] for r in ok]
            line += (f"; (mean of trials 2..{args.trials}) median {statistics.median(ms):.1f} ms, "
                     f"mean {statistics.mean(ms):.1f} ms, max {max(ms):.1f} ms" if args.trials > 1 else "")
            fs = [r["final_best_ms"] for r in ok]
            line += (f"; time to the selected program (Act's final.time), best median {statistics.median(fs):.1f} ms, "
                     f"mean {statistics.mean(fs):.1f} ms, max {max(fs):.1f} ms")
            fm = [r["final_mean_ms"] for r in ok]
            line += (f"; its mean of trials 2..{args.trials} median {statistics.median(fm):.1f} ms, "
                     f"mean {statistics.mean(fm):.1f} ms, max {max(fm):.1f} ms" if args.trials > 1 else "")
            line += f", {sum(1 for r in ok if r.get('checked'))} checked on the simulator"
        no = [r for r in rs if r["outcome"] != "compiled"]
        if no:
            ts = [r["seconds"] for r in no if "seconds" in r]
            line += f"; {len(no)} not compiled"
            if ts:
                line += f" (answer median {statistics.median(ts):.2f} s, max {max(ts):.2f} s)"
        print(line)
        reasons: dict[str, list[str]] = {}
        for r in no:
            reasons.setdefault(r.get("reason", r["outcome"]), []).append(r["kernel"])
        for why, ks in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(ks)} x {why}: {', '.join(ks)}")
    from bench._meta import RESULTS, run_meta
    out = Path(args.json) if args.json else RESULTS / f"compile_time_{args.set}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**run_meta(), "command": f"python bench/compile_time.py --set {args.set} "
                               f"--trials {args.trials}", "set": args.set, "generation_s": gen,
                               "calibration_ms": calib, "calibration_rounds_ms": rounds,
                               "trials": args.trials, "kernels": recs},
                              indent=1) + "\n")
    print(f"\nJSON: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
