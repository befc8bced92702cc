"""The one reproducer format and the one replay.

What belongs here: :func:`write_reproducer`. Whoever finds a failure writes
this folder: ``accv check`` and ``accv compile --check`` (beside the assembly), the pytest plugin
(under its reproducer folder), and a campaign (its reducer's smaller graph, beside the database):

- ``kernel.hlo``: the graph, headed by the ``// accv:`` directives (:mod:`check.header`) naming its
  target, the failing backend and the input files, so the folder dropped into a regression suite's
  kernel folder is a test that fails while the bug is there (docs/regression.md);
- ``input<k>.npy``: the failing input set; ``expected<k>.npy`` / ``actual<k>.npy``: what the run
  was held to and what it gave, where the failure is a difference; ``program.asm``: the compiled
  program, where known;
- ``replay.json``: target, backend, seed, signature, outcome and reason (and, for a reduced case,
  the operator counts before and after and the input elements set to 0);
- ``README.md``: the reason and the replay command, ``accv fuzz --replay DIR``, which exits 1
  while the failure is there and 0 once it is gone (:func:`check.evaluate.replay` reads the folder).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from compilers.partition.program import Partitioned, print_partitioned
from compilers.program import Program, print_asm
from semantics.hlo_printer import print_hlo
from semantics.ir import Graph
from semantics.npyio import save_output

from .header import format_header
from .verdict import Verdict

__all__ = ["REPLAY", "write_reproducer"]

#: the replay command of a reproducer folder
REPLAY = "accv fuzz --replay {folder}"


def write_reproducer(folder: Path, target: str, graph: Graph, verdict: Verdict, seed: int, *,
                     program: Program | Partitioned | None = None, signature: str | None = None,
                     reduced: tuple[int, int, int] | None = None, host: bool | None = None,
                     withhold: Sequence[str] = ()) -> str:
    """Write the reproducer of ``verdict`` (a failure of ``graph`` on ``target``) into ``folder``
    (replaced if it exists); ``reduced``: (operators before, after, input elements zeroed) of a
    reduced graph; ``host`` / ``withhold``: how the graph was compiled (host partitioning, default
    whether ``program`` is partitioned; instructions withheld), which the replay repeats. Returns
    the replay command."""
    folder = Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    backend, xs = verdict.backend, verdict.inputs
    signature = signature or verdict.signature(target)      # None for a verdict that is not a failure
    header = format_header(targets=[target], backends=[backend] if backend else [],
                           inputs=[f"input{k}.npy" for k in range(len(xs))] if xs is not None else [])
    (folder / "kernel.hlo").write_text(header + print_hlo(graph))
    for name, arrays in (("input", xs), ("expected", verdict.expected), ("actual", verdict.actual)):
        for k, a in enumerate(arrays or ()):
            save_output(folder / f"{name}{k}.npy", np.asarray(a))
    if program is not None:
        (folder / "program.asm").write_text(print_partitioned(program) if isinstance(program, Partitioned)
                                            else print_asm(program))
    meta: dict[str, Any] = {"target": target, "backend": backend, "seed": seed, "signature": signature,
                            "inputs": None if xs is None else len(xs), "outcome": verdict.outcome,
                            "reason": verdict.reason,
                            "host": isinstance(program, Partitioned) if host is None else host,
                            "withhold": list(withhold)}
    if reduced is not None:
        meta.update(operators_before=reduced[0], operators_after=reduced[1], inputs_zeroed=reduced[2])
    (folder / "replay.json").write_text(json.dumps(meta, indent=1) + "\n")
    cmd = REPLAY.format(folder=folder)
    what = (f"\n\nReduced from {reduced[0]} to {reduced[1]} operators ({reduced[2]} input elements set to 0)."
            if reduced is not None else "")
    files = ", ".join(f for f in ("kernel.hlo", "input<k>.npy", "expected<k>.npy", "actual<k>.npy", "program.asm")
                      if any(folder.glob(f.replace("<k>", "*"))))
    (folder / "README.md").write_text(
        f"# {signature or f'{target}: {verdict.outcome}'}\n\n{verdict.reason}{what}\n\nFiles: {files}. Replay (exits 1 while the failure is there, 0 once "
        f"it is gone):\n\n    {cmd}\n")
    return cmd

