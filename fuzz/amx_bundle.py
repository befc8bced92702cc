"""A bundle of the AMX program set for a native run on a host without this project's stack.

An AMX host lent without network cannot install the compiler's dependencies, so the runs are
prepared here: each program's emitted C (``c/NAME.c``, ``with_main=True``), each input set's HBM
image before the run and after it on the functional simulator (``img/NAME_K.in.gz`` /
``.sim.gz``), the reference interpreter's output bytes (``img/NAME_K.ref.gz``), a manifest
(``runs.json``), the emulation header and ``check.py`` (scripts/amx_native_check.py: Python 3's
standard library and gcc only). On the AMX host ``python3 DIR/check.py`` builds every unit with
``-march=sapphirerapids``, runs it on every image and prints one line per program and a summary
(``--emulated`` builds against the bundled header instead: the same check on any host).

Programs: the AMX program set (fuzz/amx_programs.py), three input sets each (random,
edge values, raw random input bytes; the reference only for the first two), plus Figs. 43 / 46's
programs (amx_k1_vnni / amx_k2_vnni) fed the corpus kernels' row-major B, expected to differ from
the reference (issue 5's settled finding) while equal to the simulator.
"""

from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np

from compilers.program import Program, hbm_image
from compilers.simulator import simulate_image
from compilers.targets.amx.cbuild import HEADER

__all__ = ["prepare"]

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "scripts" / "amx_native_check.py"


def _put(path: Path, data: np.ndarray) -> None:
    path.write_bytes(gzip.compress(np.ascontiguousarray(data, np.uint8).tobytes(), 6))


def prepare(out: Path, set_dir: Path | None = None, limit: int = 0) -> dict:
    """Write the bundle into ``out``; returns the manifest."""
    from semantics.compare import compare
    from semantics.inputs import random_inputs
    from semantics.interp import evaluate
    from semantics.layout import bflat, byte_size

    from compilers.targets.amx.emit_c import emit_c
    from compilers.program import read_outputs
    from compilers.targets import load_target
    from .amx_programs import graph, load_set

    acc = load_target("amx")
    progs = load_set(set_dir or ROOT / "tests" / "compilers" / "data" / "amx_programs")
    (out / "c").mkdir(parents=True, exist_ok=True)
    (out / "img").mkdir(exist_ok=True)
    names = list(progs)[:limit or None]
    cases: list[tuple[str, str, Program, bool]] = [(n, n, progs[n], True) for n in names]
    for n in ("amx_k1_vnni", "amx_k2_vnni"):
        if n in progs:
            corpus = graph(n.removesuffix("_vnni"))
            p = progs[n]
            cases.append((f"{n}_rowmajor", n.removesuffix("_vnni"),
                          replace(p, inputs=tuple(replace(x, type=t) for x, t in zip(p.inputs, corpus.param_types,
                                                                                         strict=True))), False))
    runs = []
    for key, gname, prog, expect in cases:
        g = graph(gname)
        (out / "c" / f"{key}.c").write_text(emit_c(prog, acc, name=key, with_main=True))
        outputs = [[pl.addr, byte_size(pl.type), pl.type.dtype.name == "f32"]
                   for pl in sorted(prog.outputs, key=lambda p: p.index)]
        sets = []
        rng = np.random.default_rng(len(key))
        for k in range(3):
            xs = random_inputs(g, k % 2, edges=bool(k % 2))
            img = hbm_image(prog, xs, acc.hbm_size)
            if k == 2:
                for pl in prog.inputs:
                    m = byte_size(pl.type)
                    img[pl.addr:pl.addr + m] = rng.integers(0, 256, m, dtype=np.uint8)
            sim = simulate_image(acc, prog, img)
            _put(out / "img" / f"{key}_{k}.in.gz", img)
            _put(out / "img" / f"{key}_{k}.sim.gz", sim)
            if k < 2:
                ref = evaluate(g, xs)
                if compare(ref, read_outputs(prog, sim)).ok != expect:
                    raise SystemExit(f"{key} input set {k}: the simulator's outputs "
                                     f"{'differ from' if expect else 'equal'} the reference")
                _put(out / "img" / f"{key}_{k}.ref.gz", np.concatenate(
                    [np.asarray(bflat(np.asarray(r), pl.type), np.uint8).reshape(-1)
                     for r, pl in zip(ref, sorted(prog.outputs, key=lambda p: p.index), strict=True)]
                    or [np.zeros(0, np.uint8)]))
            sets.append(k)
        runs.append(dict(name=key, instructions=len(prog.instructions), outputs=outputs, sets=sets,
                         reference_sets=[0, 1], expect_reference=expect))
    manifest = {"hbm_size": acc.hbm_size, "runs": runs}
    (out / "runs.json").write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.copy(CHECK, out / "check.py")
    shutil.copy(HEADER, out / "emulation.h")
    return manifest
