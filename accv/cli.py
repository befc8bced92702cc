"""The ``accv`` command line.

Exit codes (also in README.md):
    0  success
    1  a check failed (a mismatch, a refuted rule, an evaluation error)
    2  bad input: unreadable file, HLO syntax error, malformed graph, wrong inputs, bad usage
    3  the input is valid but the target cannot run it (compiler issues)
    4  accv prove: a proof is unknown (timeout); 5: only bounded under --require proved (prove_cmd.py)
    6  accv check / compile --check: the program agreed with the reference on every input set, but
       no set's outputs carried information (all NaN/inf, or every output constant): degenerate
Errors a user can cause print one line on stderr (``accv: <place>: <reason>``), never a traceback.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from semantics.errors import AccvError, InputError

from . import __version__

__all__ = ["main"]


def _checksum(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


def _read_graph(path: str):  # noqa: ANN202 (Graph)
    from semantics.hlo_parser import parse_file

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    return parse_file(p)


def cmd_parse(args: argparse.Namespace) -> int:
    from semantics.hlo_printer import print_hlo

    g = _read_graph(args.file)
    sys.stdout.write(print_hlo(g))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from semantics.inputs import random_inputs
    from semantics.interp import evaluate
    from semantics.types import TensorType

    from semantics.npyio import load_input

    g = _read_graph(args.file)
    if args.inputs:
        paths = [s for s in args.inputs.split(",") if s]
        ptypes = g.param_types
        if len(paths) != len(ptypes):
            raise InputError(f"{args.file}: graph '{g.name}' takes {len(ptypes)} inputs, --inputs gave {len(paths)}")
        inputs = []
        for i, (p, t) in enumerate(zip(paths, ptypes, strict=True)):
            if not isinstance(t, TensorType):
                raise InputError(f"parameter {i} has tuple type {t}")
            inputs.append(load_input(p, t, i))
        source = "inputs from " + ", ".join(paths)
    else:
        inputs = random_inputs(g, args.seed)
        source = f"random inputs, seed {args.seed}"
    outs = evaluate(g, inputs, mode="xla-default" if args.xla_default else "strict")
    print(f"{args.file}: {len(g.entry.instructions)} instructions, {source}")
    _write_outputs(args, "run", args.file, outs, [t.short() for t in g.result_types], inputs)
    return 0


def _write_outputs(args: argparse.Namespace, kind: str, source_file: str, outs: list[np.ndarray],
                   types: list[str], inputs: list[np.ndarray]) -> None:
    """Save outputs (and generated inputs) as .npy under --out (default build/<kind>/<file stem>)
    and print each output's type and checksum."""
    from semantics.npyio import save_output

    out_dir = Path(args.out) if args.out else Path("build") / kind / Path(source_file).stem
    out_dir.mkdir(parents=True, exist_ok=True)
    for i, (o, t) in enumerate(zip(outs, types, strict=True)):
        path = out_dir / f"output{i}.npy"
        save_output(path, o)
        print(f"  output {i}: {t:<16} sha256:{_checksum(o)}  -> {path}")
    if not args.inputs:
        for i, a in enumerate(inputs):
            save_output(out_dir / f"input{i}.npy", a)


def cmd_isa_show(args: argparse.Namespace) -> int:
    from compilers.targets import load_target

    sys.stdout.write(load_target(args.target).describe())
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    from compilers.program import read_asm
    from compilers.simulator import simulate
    from compilers.targets import load_target
    from semantics.inputs import random_array

    from semantics.npyio import load_input

    acc = load_target(args.target)
    prog = read_asm(args.program)
    first = {pl.index: pl for pl in sorted(prog.inputs, key=lambda p: (p.index, p.addr))}
    placements = [first[k] for k in sorted(first)]      # one per input (an input may be placed twice)
    if args.inputs:
        paths = [s for s in args.inputs.split(",") if s]
        if len(paths) != len(placements):
            raise InputError(f"{args.program}: the program takes {len(placements)} inputs, --inputs gave {len(paths)}")
        inputs = [load_input(p, pl.type.without_layout(), pl.index) for p, pl in zip(paths, placements, strict=True)]
        source = "inputs from " + ", ".join(paths)
    else:
        rng = np.random.default_rng(args.seed)
        inputs = [random_array(rng, pl.type.without_layout()) for pl in placements]
        source = f"random inputs, seed {args.seed}"
    res = simulate(acc, prog, inputs)
    print(f"{args.program}: {res.executed} instructions on {acc.name}, {source}; "
          f"estimated {res.cycles} cycles, {res.hbm_bytes} HBM bytes")
    types = [pl.type.without_layout().short() for pl in sorted(prog.outputs, key=lambda p: p.index)]
    _write_outputs(args, "sim", args.program, res.outputs, types, inputs)
    return 0


def cmd_rules_list(args: argparse.Namespace) -> int:
    from rewrite_rules.library import load

    for r in sorted(load().values(), key=lambda r: (r.family, r.name)):
        ranks = "all ranks" if r.ranks is None else "rank " + ",".join(map(str, r.ranks))
        print(f"{r.family:<16} {r.name:<58} [{','.join(r.dtypes)}; {ranks}]  {r.desc}")
    return 0


def _compile(args: argparse.Namespace):  # noqa: ANN202 (graph, target, Compiled, asm path)
    """Compile ``args.file`` for ``args.target``, write the assembly (and the stream / C form) and
    print the one-line summary; shared by ``compile`` and ``check``."""
    from compilers.compile import compile
    from compilers.errors import Unsupported
    from compilers.partition.program import Partitioned
    from compilers.program import print_asm
    from compilers.targets import load_target, target_package

    g = _read_graph(args.file)
    acc = load_target(args.target)
    cost = None
    if getattr(args, "cost", "description") == "rtl":
        from semantics.inputs import random_inputs

        from check.cost import rtl_cost

        cost = rtl_cost(acc, random_inputs(g, args.seed))
    try:
        res = compile(g, acc, proofs=args.proofs, cost=cost, log=lambda m: print(f"accv: {m}", file=sys.stderr),
                      host=not args.no_host)
    except Unsupported as e:
        if e.skipped:
            raise Unsupported(f"{e.reason} ({len(e.skipped)} rule instantiation(s) without a passing proof "
                              f"were not used, e.g. '{e.skipped[0]}')") from None
        raise
    prog = res.program
    out = Path(args.output) if args.output else Path("build") / "compile" / Path(args.file).stem / f"{acc.name}.asm"
    out.parent.mkdir(parents=True, exist_ok=True)
    extra = []
    if isinstance(prog, Partitioned):
        extra = _write_partitioned(args, prog, acc, out)
    else:
        out.write_text(f"# {args.file} compiled for {acc.name} by accv compile\n" + print_asm(prog))
        for suffix, text in target_package(acc.name).artifacts(prog, acc, Path(args.file).stem).items():
            path = out.with_suffix(suffix)
            path.write_text(text)
            extra.append(str(path))
    st = res.stats
    hbm_bytes = sum(acc.instructions[c.name].cost.hbm_bytes.eval(c.env) for c in prog.instructions)
    what = "RTL-measured" if cost is not None else "estimated"
    steps = (f" in {sum(s.accelerator for s in prog.steps)} accelerator step(s)" if isinstance(prog, Partitioned)
             else "")
    print(f"{args.file}: {len(prog.instructions)} instructions{steps} for {acc.name}, {what} {res.cost:g} cycles, "
          f"{hbm_bytes} HBM bytes moved, {len(prog.constants)} constant(s); compiled in {st.total * 1e3:.1f} ms "
          + (f"(+ {res.proofs.seconds:.1f} s proving {len(res.proofs.proved)} rule instantiation(s) at first use) "
             if res.proofs.proved else "")
          + f"({st.candidates} candidate(s); the selected one found after {st.best_at * 1e3:.1f} ms, generation not "
          "counted)")
    if st.times["gen"] >= 0.001:
        print(f"  of which {st.times['gen'] * 1e3:.1f} ms generated this process's rule instantiations and "
              "IR-to-ISA patterns for the kernel's types (first use; later compiles reuse them)")
    if isinstance(prog, Partitioned):
        for line in prog.split.lines():
            print(f"  {line}")
    print(f"  -> {out}" + "".join(f", {e}" for e in extra))
    if getattr(args, "stats", False):
        print(f"  e-graph: {st.enodes} e-nodes, {st.eclasses} e-classes after {st.iterations} iteration(s); "
              f"{st.isa_rules} IR-to-ISA rules, {st.ir_rules} IR-to-IR rules; {st.pii_graphs} pii graph(s) "
              f"({st.dominated} costing no less than the best, not scheduled), "
              f"{st.orders} order(s), {st.csp_failed} failed CSP(s)")
        print("  time (ms): " + ", ".join(f"{k} {v * 1e3:.1f}" for k, v in st.times.items()))
    return g, acc, res, out


def _write_partitioned(args: argparse.Namespace, prog, acc, out: Path) -> list[str]:  # noqa: ANN001
    """Write a partitioned program: its text (placement and every step) at ``out``, each
    accelerator step's assembly (and the target's artifacts) as ``<out>.step<K>.asm``, each host
    step's kernel as ``<out>.step<K>.hlo`` and the placement as ``<out>.placement.json``; returns
    the paths written besides ``out``."""
    import json

    from compilers.partition.program import print_partitioned
    from compilers.program import print_asm
    from compilers.targets import target_package
    from semantics.hlo_printer import print_hlo

    out.write_text(f"# {args.file} compiled for {acc.name} by accv compile\n" + print_partitioned(prog))
    written = []
    for k, s in enumerate(prog.steps):
        if s.program is not None:
            path = out.with_name(f"{out.stem}.step{k}.asm")
            path.write_text(f"# step {k} of {out.name}: reads ({', '.join(s.sub.inputs)}) gives "
                            f"({', '.join(s.sub.outputs)})\n" + print_asm(s.program))
            for suffix, text in target_package(acc.name).artifacts(s.program, acc, f"{Path(args.file).stem}_step{k}").items():
                out.with_name(f"{out.stem}.step{k}{suffix}").write_text(text)
        else:
            path = out.with_name(f"{out.stem}.step{k}.hlo")
            path.write_text(print_hlo(s.sub.graph))
        written.append(str(path))
    placement = out.with_suffix(".placement.json")
    steps = [{"step": k, "kind": s.kind, "reads": list(s.sub.inputs), "gives": list(s.sub.outputs),
              "operators": list(s.ops), "file": written[k]} for k, s in enumerate(prog.steps)]
    placement.write_text(json.dumps({"target": acc.name, "kernel": args.file, **prog.split.as_dict(), "steps": steps},
                                    indent=1) + "\n")
    return [str(placement), f"{len(written)} step file(s) {out.stem}.step*"]


def _run_check(args: argparse.Namespace, g, acc, prog, out: Path, backend_name: str) -> int:  # noqa: ANN001
    from check.backends import REGISTRY, get_backend
    from check.run import check_program

    backend = get_backend(acc, backend_name)
    v = check_program(g, acc, prog, args.check, args.seed, backend=backend, repro_dir=out.parent / "reproducer")
    where = f"the {acc.name} {REGISTRY[backend.name].title}"
    if not v.ok:
        what = "differs from" if v.outcome == "mismatch" else "crashed while held to"
        print(f"accv: {args.file}: compiled program on {where} {what} {v.contract} on {v.message}; reproducer "
              f"in {v.reproducer} (replay: accv fuzz --replay {v.reproducer})", file=sys.stderr)
        return 1
    cycles = v.cycles.get(backend.name)
    cyc = "" if cycles is None else f"; {cycles} cycles"
    runs = v.steps.get(backend.name, [])
    if runs:
        acc_c = [f"step {r.index}: {r.cycles} cycles" if r.cycles is not None else f"step {r.index}"
                 for r in runs if r.kind == "accelerator"]
        cyc += (f" on the accelerator ({', '.join(acc_c)}); host steps "
                f"{1e3 * v.timings.get(f'host.{backend.name}', 0.0) / max(v.runs, 1):.1f} ms per set")
    informative = sum(r.share > 0 for r in v.sets)
    what = "check DEGENERATE" if v.degenerate else "check"
    print(f"  {what}: {v.runs} random input set(s) on {where} equal {v.contract}{cyc}; "
          f"{informative} of {v.runs} informative")
    for i, r in enumerate(v.sets):
        print(f"    set {i} ({r.kind}, seed {r.seed}): {r.text}")
    if v.degenerate:
        print(f"accv: {args.file}: DEGENERATE check: no input set's outputs carry information (all NaN/inf or "
              "constant), so the agreement says nothing about the program's values (exit 6)", file=sys.stderr)
        return 6
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    g, acc, res, out = _compile(args)
    if args.check:
        return _run_check(args, g, acc, res.program, out, "sim")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from check.backends import unavailable
    from compilers.backend import BackendUnavailable

    if args.check < 1:
        raise InputError("--check must be at least 1")
    why = unavailable(args.target, args.backend)    # before compiling: a pair that cannot run fails at once
    if why is not None:
        raise BackendUnavailable(why)
    g, acc, res, out = _compile(args)
    return _run_check(args, g, acc, res.program, out, args.backend)


def cmd_ops(args: argparse.Namespace) -> int:
    from semantics.docs import operator_table_markdown

    sys.stdout.write(operator_table_markdown())
    return 0


def _input_args(p: argparse.ArgumentParser, per: str, default_out: str) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--inputs", help=f"comma-separated .npy files, {per}")
    src.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--out", help=f"folder for the outputs (default {default_out})")


_NO_HOST = ("compile the whole graph for the target or exit 3 (by default a graph the target cannot run whole is "
            "partitioned: its accelerator regions compiled, the rest run by the host; the placement is printed)")


def build_parser() -> argparse.ArgumentParser:
    from check.backends import REGISTRY, backend_names

    ap = argparse.ArgumentParser(prog="accv", description="Verification and differential testing of tensor-accelerator compilers.")
    ap.add_argument("--version", action="version", version=f"accv {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("parse", help="validate an HLO text file and print it back")
    p.add_argument("file")
    p.set_defaults(fn=cmd_parse)

    p = sub.add_parser("run", help="evaluate an HLO file with the reference interpreter")
    p.add_argument("file")
    _input_args(p, "one per parameter", "build/run/<kernel>")
    p.add_argument("--xla-default", action="store_true",
                   help="XLA:CPU's default-flag numerics as jax runs them (FMA contraction, bf16 excess "
                        "precision) instead of the strict per-operation rounding (docs/semantics.md)")
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("isa", help="ISA descriptions")
    isa_sub = p.add_subparsers(dest="isa_command", required=True)
    q = isa_sub.add_parser("show", help="print a target's buffers and instructions")
    q.add_argument("target")
    q.set_defaults(fn=cmd_isa_show)

    p = sub.add_parser("sim", help="run an assembly program on a target's functional simulator")
    p.add_argument("program")
    p.add_argument("--target", required=True)
    _input_args(p, "one per .input placement", "build/sim/<program>")
    p.set_defaults(fn=cmd_sim)

    p = sub.add_parser("compile", help="compile an HLO kernel for a target with the Act compiler (and check it)")
    p.add_argument("file")
    p.add_argument("--target", required=True)
    p.add_argument("-o", "--output", help="assembly file to write (default build/compile/<kernel>/<target>.asm)")
    p.add_argument("--check", type=int, default=3, metavar="N",
                   help="compare with the reference on N random input sets on the simulator (default 3; 0: no check)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first check input set (default 0)")
    p.add_argument("--stats", action="store_true", help="print e-graph sizes and the time of each module")
    p.add_argument("--cost", choices=("description", "rtl"), default="description",
                   help="cost model choosing among candidate programs: the description's per-instruction cycle "
                        "estimates (default) or cycles measured on the Verilated RTL (gemmini, qkv)")
    p.add_argument("--proofs", choices=("prove", "cached"), default="prove",
                   help="rewrite rules fire only with a passing proof of their text: 'prove' (default) proves a "
                        "missing one at its first use and caches it under build/proofs; 'cached' uses cached "
                        "proofs only")
    p.add_argument("--no-host", action="store_true", help=_NO_HOST)
    p.set_defaults(fn=cmd_compile)

    p = sub.add_parser("check", help="compile an HLO kernel and run it on a backend (simulator, command-stream "
                                     "model or RTL) against the reference interpreter")
    p.add_argument("file")
    p.add_argument("--target", required=True)
    p.add_argument("--backend", choices=backend_names(), default="sim",
                   help="what runs the program: " + "; ".join(
                       f"{k.name}: the {k.title} ({', '.join(k.targets)})" for k in REGISTRY.values())
                   + " (default sim)")
    p.add_argument("-o", "--output", help="assembly file to write (default build/compile/<kernel>/<target>.asm)")
    p.add_argument("--check", type=int, default=3, metavar="N", help="random input sets (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the first input set (default 0)")
    p.add_argument("--stats", action="store_true", help="print e-graph sizes and the time of each module")
    p.add_argument("--cost", choices=("description", "rtl"), default="description",
                   help="cost model choosing among candidate programs: the description's per-instruction cycle "
                        "estimates (default) or cycles measured on the Verilated RTL (gemmini, qkv)")
    p.add_argument("--proofs", choices=("prove", "cached"), default="prove",
                   help="as for compile: prove missing rule proofs at first use, or use cached proofs only")
    p.add_argument("--no-host", action="store_true", help=_NO_HOST)
    p.set_defaults(fn=cmd_check)

    from .prove_cmd import add_parser as add_prove_parser

    add_prove_parser(sub)

    p = sub.add_parser("rules", help="the rewrite-rule library")
    rsub = p.add_subparsers(dest="rules_command", required=True)
    q = rsub.add_parser("list", help="print every rule")
    q.set_defaults(fn=cmd_rules_list)

    p = sub.add_parser("ops", help="print the operator table (Markdown)")
    p.set_defaults(fn=cmd_ops)
    from .fuzz_cmd import add_parser
    add_parser(sub)
    from .report_cmd import add_parser as add_report_parser
    add_report_parser(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:  # argparse exits 2 on bad usage, 0 on --help
        return int(e.code or 0)
    try:
        return int(args.fn(args))
    except AccvError as e:
        print(f"accv: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("accv: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (`accv ... | head`): stop quietly
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
