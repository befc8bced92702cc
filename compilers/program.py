"""Programs for an accelerator: concrete instructions, a constant section and the HBM placement
of inputs and outputs — enough for any backend to load inputs, run and read outputs back.

The assembly text format (one instruction per line, as in seed 000 Fig. 10b)::

    .target qkv
    .input 0 @0 bf16[64,64]            # parameter 0 is stored (bflat) at HBM byte 0
    .output 0 @24576 bf16[64,64]
    .const @32768 0a0bff...            # constant bytes (hex) at HBM byte 32768
    load_rm(n=64, addr_in=0, addr_out=0)

``#`` and ``//`` start comments. Types may carry XLA layouts (``s8[32,64]{1,0:T(16,64)}``): a
tensor's bytes in HBM are its bflat image under that layout.

A program also carries the numeric contract it was compiled under (``contract``,
:mod:`compilers.contract`): not part of the text, and not of a program's equality; a program read
from assembly has the default (the reference bit for bit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from semantics.errors import AccvError, InputError, SourceLoc
from semantics.types import TensorType

from .contract import EXACT, Contract

__all__ = ["AsmError", "Concrete", "Placement", "Program", "hbm_image", "parse_asm", "placed_inputs", "print_asm",
           "read_asm", "read_outputs"]


class AsmError(AccvError):
    """Malformed assembly text (file:line:col and the reason)."""


@dataclass(frozen=True)
class Concrete:
    """A concrete instruction θ(α, β): its name and every attribute's integer value."""

    name: str
    attrs: tuple[tuple[str, int], ...]
    loc: SourceLoc | None = None

    @property
    def env(self) -> dict[str, int]:
        return dict(self.attrs)

    def __str__(self) -> str:
        return f"{self.name}(" + ", ".join(f"{k}={v}" for k, v in self.attrs) + ")"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Concrete) and (self.name, self.attrs) == (other.name, other.attrs)

    def __hash__(self) -> int:
        return hash((self.name, self.attrs))


@dataclass(frozen=True)
class Placement:
    """Where entry parameter / output ``index`` lives in HBM (its bflat image starts at ``addr``)."""

    index: int
    addr: int
    type: TensorType


@dataclass(frozen=True)
class Program:
    target: str
    instructions: tuple[Concrete, ...]
    inputs: tuple[Placement, ...] = ()
    outputs: tuple[Placement, ...] = ()
    constants: tuple[tuple[int, bytes], ...] = ()
    #: what a checker holds the outputs to (module doc)
    contract: Contract = field(default=EXACT, compare=False)

    def __len__(self) -> int:
        return len(self.instructions)

    @property
    def output_types(self) -> tuple[TensorType, ...]:
        """The outputs' types, in index order."""
        return tuple(pl.type for pl in sorted(self.outputs, key=lambda p: p.index))


def print_asm(p: Program) -> str:
    from semantics.hlo_printer import format_type

    lines = [f".target {p.target}"]
    lines += [f".input {x.index} @{x.addr} {format_type(x.type)}" for x in p.inputs]
    lines += [f".output {x.index} @{x.addr} {format_type(x.type)}" for x in p.outputs]
    lines += [f".const @{addr} {data.hex()}" for addr, data in p.constants]
    lines += [str(i) for i in p.instructions]
    return "\n".join(lines) + "\n"


def _strip_comment(line: str) -> str:
    for mark in ("#", "//"):
        i = line.find(mark)
        if i >= 0:
            line = line[:i]
    return line


def _parse_type(text: str, loc: SourceLoc) -> TensorType:
    from semantics.hlo_parser import parse_hlo

    try:
        g = parse_hlo(f"HloModule t\nENTRY e {{\n  ROOT p = {text} parameter(0)\n}}\n")
    except AccvError as e:
        raise AsmError(f"bad tensor type '{text}': {e.reason}", loc) from None
    t = g.result_type
    if not isinstance(t, TensorType):
        raise AsmError(f"'{text}' is not a tensor type", loc)
    return t


def parse_asm(text: str, filename: str = "<asm>") -> Program:
    """Parse assembly text; raises :class:`AsmError` with file:line:col."""
    target = ""
    instrs: list[Concrete] = []
    inputs: list[Placement] = []
    outputs: list[Placement] = []
    consts: list[tuple[int, bytes]] = []
    for ln, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw).rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        col = len(line) - len(line.lstrip()) + 1
        loc = SourceLoc(filename, ln, col)
        if stripped.startswith("."):
            parts = stripped.split()
            kw = parts[0]
            try:
                if kw == ".target" and len(parts) == 2:
                    if target:
                        raise AsmError("a second '.target': a partitioned program's text is not one program "
                                       "(each accelerator step's assembly is its own file)", loc)
                    target = parts[1]
                elif kw in (".input", ".output") and len(parts) == 4 and parts[2].startswith("@"):
                    pl = Placement(int(parts[1]), int(parts[2][1:], 0), _parse_type(parts[3], loc))
                    (inputs if kw == ".input" else outputs).append(pl)
                elif kw == ".const" and len(parts) == 3 and parts[1].startswith("@"):
                    consts.append((int(parts[1][1:], 0), bytes.fromhex(parts[2])))
                else:
                    raise AsmError(f"malformed directive '{stripped}'", loc)
            except ValueError as e:
                raise AsmError(f"malformed directive '{stripped}': {e}", loc) from None
            continue
        op = stripped.find("(")
        if op <= 0 or not stripped.endswith(")"):
            raise AsmError(f"expected name(attr=value, ...), got '{stripped}'", loc)
        name = stripped[:op].strip()
        if not name.replace("_", "").replace(".", "").isalnum():
            raise AsmError(f"bad instruction name '{name}'", loc)
        body = stripped[op + 1:-1].strip()
        attrs: list[tuple[str, int]] = []
        if body:
            for item in body.split(","):
                if "=" not in item:
                    raise AsmError(f"attribute '{item.strip()}' needs a value (attr=value)", loc)
                k, v = (s.strip() for s in item.split("=", 1))
                if not k.isidentifier():
                    raise AsmError(f"bad attribute name '{k}'", loc)
                if any(k == a for a, _ in attrs):
                    raise AsmError(f"attribute '{k}' given twice", loc)
                try:
                    attrs.append((k, int(v, 0)))
                except ValueError:
                    raise AsmError(f"attribute {k}: '{v}' is not an integer", loc) from None
        instrs.append(Concrete(name, tuple(attrs), loc))
    if not target:
        raise AsmError("missing '.target NAME' directive", SourceLoc(filename, 1, 1))
    return Program(target, tuple(instrs), tuple(inputs), tuple(outputs), tuple(consts))


def read_asm(path: str | Path) -> Program:
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise AsmError(f"cannot read {path}: {e}") from None
    return parse_asm(text, str(path))


def placed_inputs(program: Program, inputs: Sequence[np.ndarray],
                  error: type[AccvError] = InputError) -> list[tuple[Placement, np.ndarray]]:
    """Each ``.input`` placement with the input it holds. ``inputs`` are one per input index, in
    index order; a program may place one input at several addresses (Act places an input read in
    two roles, e.g. as both operands of a product, once per role), each gets its bytes. Raises
    ``error`` for inputs that do not match."""
    order = sorted({pl.index for pl in program.inputs})
    if len(inputs) != len(order):
        raise error(f"program takes {len(order)} inputs, {len(inputs)} given")
    pos = {k: i for i, k in enumerate(order)}
    out = []
    for pl in sorted(program.inputs, key=lambda p: (p.index, p.addr)):
        a = np.asarray(inputs[pos[pl.index]])
        if a.dtype != pl.type.dtype.np or a.shape != pl.type.shape:
            raise error(f"input {pl.index} is {a.dtype}{list(a.shape)}, the program expects {pl.type}")
        out.append((pl, a))
    return out


def hbm_image(program: Program, inputs: Sequence[np.ndarray], size: int) -> np.ndarray:
    """The HBM bytes every backend starts a run from: each input's bflat image at its placement
    and the constant section. Raises InputError for inputs that do not match the placements and
    AsmError for a placement outside an HBM of ``size`` bytes."""
    from semantics.layout import bflat

    img = np.zeros(size, np.uint8)

    def put(addr: int, data: np.ndarray, what: str) -> None:
        if addr < 0 or addr + data.size > size:
            raise AsmError(f"{what}: bytes [{addr}, {addr + data.size}) lie outside HBM of {size} bytes")
        img[addr:addr + data.size] = data

    for pl, a in placed_inputs(program, inputs):
        put(pl.addr, np.asarray(bflat(a, pl.type), np.uint8).reshape(-1), f"input {pl.index}")
    for addr, data in program.constants:
        put(addr, np.frombuffer(bytes(data), np.uint8), f"constant @{addr}")
    return img


def read_outputs(program: Program, hbm: np.ndarray) -> list[np.ndarray]:
    """The program's outputs (unbflat of their placements) from final HBM bytes."""
    from semantics.layout import byte_size, unbflat

    outs = []
    for pl in sorted(program.outputs, key=lambda p: p.index):
        n = byte_size(pl.type)
        if pl.addr < 0 or pl.addr + n > hbm.size:
            raise AsmError(f"output {pl.index}: bytes [{pl.addr}, {pl.addr + n}) lie outside HBM of {hbm.size} bytes")
        outs.append(unbflat(hbm[pl.addr:pl.addr + n].copy(), pl.type))
    return outs
