"""The functional simulator, derived from an ISA description alone (seed 000 Def. 5, 6, §3.4).

Memory state M = one numpy array per buffer (``d0`` the HBM bytes). Executing a concrete
instruction θ(α, β) checks its validity constraints e_θ(α, β), computes its data slices h_θ(β),
evaluates g_θ(α) with the reference interpreter on the sliced inputs and writes the output slice
(upslice); every other buffer is unchanged. A program's run initializes HBM with the bflat images
of the inputs and the constant section (Λ_LHS), runs the instructions in order and reads the
outputs back with unbflat.

:class:`SimBackend` is the ``sim`` backend (:mod:`compilers.backend`) over :func:`simulate`.

A violated constraint, an out-of-range slice or an unknown instruction stops the run with a
:class:`SimError` naming the instruction index, the instruction and the broken bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from semantics.errors import AccvError
from semantics.interp import evaluate
from semantics.layout import bflat, byte_size, unbflat

from .backend import RunResult
from .isa import HBM, Accelerator, InstrDef
from .program import Concrete, Program, placed_inputs
from .targets import TARGETS

__all__ = ["SimError", "Machine", "SimResult", "SimBackend", "simulate", "simulate_image"]


class SimError(AccvError):
    """A program that the accelerator cannot execute (names the instruction index and bound)."""


@dataclass
class SimResult:
    outputs: list[np.ndarray]
    cycles: int
    hbm_bytes: int
    executed: int


class Machine:
    """The memory state of one accelerator and the step function over it."""

    def __init__(self, acc: Accelerator) -> None:
        self.acc = acc
        self.state: dict[str, np.ndarray] = {
            name: np.zeros(b.shape, dtype=b.dtype.np) for name, b in acc.buffers.items()}
        self.cycles = 0
        self.hbm_bytes = 0

    def write_hbm(self, addr: int, data: np.ndarray | bytes, what: str) -> None:
        d = np.frombuffer(bytes(data), dtype=np.uint8) if isinstance(data, bytes) else data
        hbm = self.state[HBM]
        if addr < 0 or addr + d.size > hbm.size:
            raise SimError(f"{what}: bytes [{addr}, {addr + d.size}) lie outside HBM of {hbm.size} bytes")
        hbm[addr:addr + d.size] = d

    def read_hbm(self, addr: int, n: int, what: str) -> np.ndarray:
        hbm = self.state[HBM]
        if addr < 0 or addr + n > hbm.size:
            raise SimError(f"{what}: bytes [{addr}, {addr + n}) lie outside HBM of {hbm.size} bytes")
        return hbm[addr:addr + n].copy()

    def lookup(self, ins: Concrete, index: int) -> InstrDef:
        d = self.acc.instructions.get(ins.name)
        where = f"instruction {index} '{ins}'"
        if d is None:
            raise SimError(f"unknown instruction '{ins.name}' for target {self.acc.name}", ins.loc, where)
        given = {k for k, _ in ins.attrs}
        missing = [a for a in d.attrs if a not in given]
        extra = sorted(given - set(d.attrs))
        if missing:
            raise SimError(f"attribute '{missing[0]}' is missing", ins.loc, where)
        if extra:
            raise SimError(f"{d.name} has no attribute '{extra[0]}'", ins.loc, where)
        env = ins.env
        for a in d.alpha:
            if env[a] not in d.domain(a):
                raise SimError(f"{a}={env[a]} is outside its domain [{min(d.domain(a))}, {max(d.domain(a))}]",
                               ins.loc, where)
        return d

    def _slice(self, d: InstrDef, spec_i: int, env: dict[str, int], ins: Concrete, index: int,
               output: bool) -> tuple[str, tuple[slice, ...]]:
        spec = d.output if output else d.inputs[spec_i]
        buf = self.acc.buffers[spec.buffer]
        start, length = spec.bounds(env)
        what = "output" if output else f"input {spec_i}"
        for k, (s, n, size) in enumerate(zip(start, length, buf.access, strict=True)):
            if n <= 0 or s < 0 or s + n > size:
                raise SimError(f"{what} slice {spec.buffer} dimension {k}: [{s}, {s + n}) is outside [0, {size})",
                               ins.loc, f"instruction {index} '{ins}'")
        return spec.buffer, tuple(slice(s, s + n) for s, n in zip(start, length, strict=True))

    def step(self, ins: Concrete, index: int) -> None:
        d = self.lookup(ins, index)
        env = ins.env
        broken = d.check(env)
        if broken is not None:
            raise SimError(f"constraint {broken} is violated", ins.loc, f"instruction {index} '{ins}'")
        args = []
        for i in range(len(d.inputs)):
            name, sl = self._slice(d, i, env, ins, index, output=False)
            args.append(self.state[name][sl])
        out_name, out_sl = self._slice(d, 0, env, ins, index, output=True)
        alpha = {a: env[a] for a in d.alpha}
        (y,) = evaluate(d.graph(alpha), args)
        target = self.state[out_name][out_sl]
        if y.shape != target.shape:  # validated descriptions cannot get here
            raise SimError(f"semantics produced {y.shape}, output slice is {target.shape}", ins.loc,
                           f"instruction {index} '{ins}'")
        self.state[out_name][out_sl] = y
        self.cycles += d.cost.cycles.eval(alpha)
        self.hbm_bytes += d.cost.hbm_bytes.eval(alpha)


def simulate(acc: Accelerator, program: Program, inputs: Sequence[np.ndarray]) -> SimResult:
    """Run ``program`` on ``inputs`` (one array per ``.input`` placement, in index order)."""
    if program.target != acc.name:
        raise SimError(f"program is for target '{program.target}', not '{acc.name}'")
    m = Machine(acc)
    for pl, a in placed_inputs(program, inputs, SimError):
        m.write_hbm(pl.addr, bflat(a, pl.type), f"input {pl.index}")
    for addr, data in program.constants:
        m.write_hbm(addr, data, f"constant @{addr}")
    for i, ins in enumerate(program.instructions):
        m.step(ins, i)
    outs = []
    for pl in sorted(program.outputs, key=lambda p: p.index):
        raw = m.read_hbm(pl.addr, byte_size(pl.type), f"output {pl.index}")
        outs.append(unbflat(raw, pl.type))
    return SimResult(outs, m.cycles, m.hbm_bytes, len(program.instructions))


def simulate_image(acc: Accelerator, program: Program, hbm: np.ndarray) -> np.ndarray:
    """Run ``program`` from a whole HBM image (:func:`compilers.program.hbm_image`: inputs and
    constant section already placed) and return the final HBM bytes: what a native run of the
    emitted code is compared with, byte for byte."""
    if program.target != acc.name:
        raise SimError(f"program is for target '{program.target}', not '{acc.name}'")
    m = Machine(acc)
    m.state["d0"][:] = hbm
    for i, ins in enumerate(program.instructions):
        m.step(ins, i)
    return m.state["d0"].copy()


@dataclass
class SimBackend:
    """The ``sim`` backend: the description-derived functional simulator, for every target; cycles
    are the description's cost model."""

    acc: Accelerator
    name: ClassVar[str] = "sim"
    title: ClassVar[str] = "simulator"
    targets: ClassVar[tuple[str, ...]] = TARGETS
    nan_bits: ClassVar[bool] = True     # it evaluates g_theta with the reference interpreter

    @classmethod
    def unavailable(cls) -> str | None:
        return None

    @classmethod
    def for_target(cls, acc: Accelerator) -> SimBackend:
        return cls(acc)

    def run(self, program: Program, inputs: Sequence[np.ndarray]) -> RunResult:
        r = simulate(self.acc, program, inputs)
        return RunResult(r.outputs, r.cycles, [f"{r.executed} instructions, {r.hbm_bytes} HBM bytes"])
