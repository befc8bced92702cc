"""The ``accv`` command line.

Exit codes (also in README.md):
    0  success
    1  a check failed (a mismatch, a refuted rule, an evaluation error)
    2  bad input: unreadable file, HLO syntax error, malformed graph, wrong inputs, bad usage
    3  the input is valid but the target cannot run it (compiler issues)
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

    from .npyio import load_input, save_output

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
    outs = evaluate(g, inputs)
    out_dir = Path(args.out) if args.out else Path("build") / "run" / Path(args.file).stem
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"{args.file}: {len(g.entry.instructions)} instructions, {source}")
    for i, (o, t) in enumerate(zip(outs, g.result_types, strict=True)):
        path = out_dir / f"output{i}.npy"
        save_output(path, o)
        print(f"  output {i}: {t.short():<16} sha256:{_checksum(o)}  -> {path}")
    if not args.inputs:
        for i, a in enumerate(inputs):
            save_output(out_dir / f"input{i}.npy", a)
    return 0


def cmd_isa_show(args: argparse.Namespace) -> int:
    from compilers.targets import load_target

    sys.stdout.write(load_target(args.target).describe())
    return 0


def cmd_sim(args: argparse.Namespace) -> int:
    from compilers.program import read_asm
    from compilers.simulator import simulate
    from compilers.targets import load_target
    from semantics.inputs import random_array

    from .npyio import load_input, save_output

    acc = load_target(args.target)
    prog = read_asm(args.program)
    placements = sorted(prog.inputs, key=lambda p: p.index)
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
    out_dir = Path(args.out) if args.out else Path("build") / "sim" / Path(args.program).stem
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"{args.program}: {res.executed} instructions on {acc.name}, {source}; "
          f"estimated {res.cycles} cycles, {res.hbm_bytes} HBM bytes")
    for i, o in enumerate(res.outputs):
        path = out_dir / f"output{i}.npy"
        save_output(path, o)
        print(f"  output {i}: {o.dtype}{list(o.shape)} sha256:{_checksum(o)}  -> {path}")
    return 0


def cmd_ops(args: argparse.Namespace) -> int:
    from semantics.docs import operator_table_markdown

    sys.stdout.write(operator_table_markdown())
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="accv", description="Verification and differential testing of tensor-accelerator compilers.")
    ap.add_argument("--version", action="version", version=f"accv {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("parse", help="validate an HLO text file and print it back")
    p.add_argument("file")
    p.set_defaults(fn=cmd_parse)

    p = sub.add_parser("run", help="evaluate an HLO file with the reference interpreter")
    p.add_argument("file")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--inputs", help="comma-separated .npy files, one per parameter")
    src.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--out", help="folder for the outputs (default build/run/<kernel>)")
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("isa", help="ISA descriptions")
    isa_sub = p.add_subparsers(dest="isa_command", required=True)
    q = isa_sub.add_parser("show", help="print a target's buffers and instructions")
    q.add_argument("target")
    q.set_defaults(fn=cmd_isa_show)

    p = sub.add_parser("sim", help="run an assembly program on a target's functional simulator")
    p.add_argument("program")
    p.add_argument("--target", required=True)
    src = p.add_mutually_exclusive_group()
    src.add_argument("--inputs", help="comma-separated .npy files, one per .input placement")
    src.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    p.add_argument("--out", help="folder for the outputs (default build/sim/<program>)")
    p.set_defaults(fn=cmd_sim)

    p = sub.add_parser("ops", help="print the operator table (Markdown)")
    p.set_defaults(fn=cmd_ops)
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
