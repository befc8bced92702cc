"""The ``stream`` backend: a Gemmini program encoded to its RoCC command stream
(:func:`.stream.encode`) and run on the command-stream model (:class:`.stream.StreamMachine`),
sized as the program's description says. The model has no timing: ``cycles`` is None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...backend import BackendUnavailable, RunResult
from ...isa import Accelerator
from ...program import Program
from . import stream
from .stream import StreamMachine

__all__ = ["StreamBackend"]


@dataclass
class StreamBackend:
    """Programs of a Gemmini description on the command-stream model."""

    acc: Accelerator
    name: ClassVar[str] = "stream"
    title: ClassVar[str] = "command-stream model"
    targets: ClassVar[tuple[str, ...]] = ("gemmini",)
    nan_bits: ClassVar[bool] = True

    @classmethod
    def unavailable(cls) -> str | None:
        return None

    @classmethod
    def for_target(cls, acc: Accelerator) -> StreamBackend:
        if acc.name not in cls.targets:
            raise BackendUnavailable(f"target '{acc.name}' has no stream backend (it models Gemmini's command stream)")
        return cls(acc)

    def machine(self) -> StreamMachine:
        """A fresh command-stream machine of the description's sizes."""
        spad, acc = self.acc.buffers["spad"], self.acc.buffers["acc"]
        return StreamMachine(dim=spad.access[1], dram_size=self.acc.hbm_size, spad_rows=spad.access[0],
                             acc_rows=acc.access[0])

    def run(self, program: Program, inputs: Sequence[np.ndarray]) -> RunResult:
        m = self.machine()
        commands = stream.encode(program, m.dim)   # looked up at run time: a test may patch it
        m.place(program, inputs)
        m.run(commands)
        return RunResult(m.outputs(program), None, [f"{len(program.instructions)} instructions, "
                                                    f"{len(commands)} RoCC commands"])
