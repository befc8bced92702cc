"""The AMX programs the emulated and native backends are checked on, compiled once into a folder.

The set: the paper's kernels amx_k1..k5 (examples/regression, as compiled), K1 / K2 with B
declared in VNNI layout (Figs. 43 / 46's 16 / 9 instructions), and the random AMX graphs of
fuzz.opsets' AMX operator lists that compile (list 1: seeds 120-159, list 2:
seeds 1200-1399, bench/random_campaign.py's generator; 1200-1319 is the campaign's range, 1320-1399
makes the set hold over 100 random programs). A graph is rebuilt from its name alone
(:func:`graph`), so a folder holds only each program's assembly (``NAME.asm``) and a manifest
(``programs.json``: name -> instruction count); writing it needs the compiler, reading it needs
only :mod:`compilers.program`.

    python -m fuzz.amx_programs DIR [NAME ...]   # compile the set (or NAMEs) into DIR
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from pathlib import Path

from compilers.program import Program, print_asm, read_asm
from semantics.errors import AccvError
from semantics.graph import Graph

__all__ = ["PAPER", "KERNELS", "RANDOM", "names", "graph", "compile_set", "load_set"]

ROOT = Path(__file__).resolve().parents[1]
PAPER = ROOT / "examples" / "regression"
ROW_MAJOR, VNNI = "{1,0:T(16,64)}", "{0,1:T(4,1)}"

#: the paper kernels: name -> (HLO file stem, B declared in VNNI layout)
KERNELS = {f"amx_k{i}": (f"amx_k{i}", False) for i in range(1, 6)} | {
    "amx_k1_vnni": ("amx_k1", True), "amx_k2_vnni": ("amx_k2", True)}
#: the random graphs: (operator list number, seeds)
RANDOM = ((1, range(120, 160)), (2, range(1200, 1400)))


class ProgramSetError(AccvError):
    """A name outside the program set, or a folder without its manifest."""


def _lists() -> dict[int, tuple[str, str]]:
    from .opsets import OPSETS

    return {k: tuple(OPSETS[("amx", k)]) for k in (1, 2)}  # type: ignore[misc]


def names() -> list[str]:
    """Every candidate name: kernels first, then ``rand{list}_{seed}``."""
    return list(KERNELS) + [f"rand{k}_{s}" for k, seeds in RANDOM for s in seeds]


def graph(name: str) -> Graph:
    """The HLO graph of program ``name`` (a kernel file, or the random graph of its seed)."""
    from semantics.gen import random_graph
    from semantics.hlo_parser import parse_hlo

    if name in KERNELS:
        stem, vnni = KERNELS[name]
        text = (PAPER / f"{stem}.hlo").read_text()
        return parse_hlo(text.replace(ROW_MAJOR, VNNI) if vnni else text, name)
    if name.startswith("rand") and "_" in name:
        lst, _, seed = name[4:].partition("_")
        ops, dtypes = _lists()[int(lst)]
        return random_graph(int(seed), ops=ops.split(","), dtypes=dtypes.split(","), max_ops=4)
    raise ProgramSetError(f"program set: no program '{name}'")


def compile_set(out: Path, which: Iterable[str] | None = None, log: bool = False) -> dict[str, int]:
    """Compile the set (or ``which``) into ``out``: ``NAME.asm`` for each program that compiles and
    ``programs.json`` (merged with the manifest already there, in :func:`names` order); returns the
    manifest, name -> instruction count."""
    from compilers.compile import compile
    from compilers.errors import Unsupported
    from compilers.targets import load_target

    acc = load_target("amx")
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / "programs.json"
    done: dict[str, int] = json.loads(manifest.read_text()) if manifest.exists() else {}
    for name in which if which is not None else names():
        try:
            prog = compile(graph(name), acc, proofs="prove").program
        except Unsupported as e:
            if log:
                print(f"{name}: exit 3 ({e})", flush=True)
            continue
        (out / f"{name}.asm").write_text(print_asm(prog))
        done[name] = len(prog.instructions)
        if log:
            print(f"{name}: {len(prog.instructions)} instructions", flush=True)
    order = {n: i for i, n in enumerate(names())}
    done = dict(sorted(done.items(), key=lambda kv: order.get(kv[0], len(order))))
    manifest.write_text(json.dumps(done, indent=1) + "\n")
    return done


def load_set(folder: Path) -> dict[str, Program]:
    """The compiled set in ``folder`` (name -> program), in manifest order."""
    manifest = folder / "programs.json"
    if not manifest.exists():
        raise ProgramSetError(f"{folder}: no programs.json (python -m fuzz.amx_programs {folder})")
    return {name: read_asm(folder / f"{name}.asm") for name in json.loads(manifest.read_text())}


if __name__ == "__main__":
    sys.exit(0 if compile_set(Path(sys.argv[1]), sys.argv[2:] or None, log=True) else 1)
