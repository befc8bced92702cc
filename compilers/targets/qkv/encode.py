"""QKV's instruction words: the 64-bit word of each concrete instruction, and back.

The word format is the one the RTL decodes (rtl_harness/qkv/hdl/qkv_top.sv documents it): the
opcode in bits [2:0], then four fields ``n`` [10:3], ``a`` [30:11], ``b`` [50:31], ``c`` [57:51];
:data:`FIELDS` says which attribute of each instruction goes into which field. A value that fits
its field but breaks the ISA's bounds is encoded (the RTL rejects it with ``err``, as the
simulator rejects the instruction).
"""

from __future__ import annotations

from ...program import Concrete
from semantics.errors import AccvError

__all__ = ["QkvEncodeError", "OPCODES", "FIELDS", "LAYOUT", "encode", "decode", "field_limit"]

OPCODES = {"load_rm": 0, "load_cm": 1, "store_rm": 2, "store_cm": 3, "mov": 4, "gemm": 5, "softmax": 6}
#: per instruction: which attribute goes into the word's fields n, a, b, c (None: unused)
FIELDS: dict[str, tuple[str | None, str | None, str | None, str | None]] = {
    "load_rm": ("n", "addr_in", "addr_out", None),
    "load_cm": ("n", "addr_in", "addr_out", None),
    "store_rm": ("n", "addr_in", "addr_out", None),
    "store_cm": ("n", "addr_in", "addr_out", None),
    "mov": ("n", "addr_in", "addr_out", None),
    "gemm": (None, "addr_1", "addr_2", "addr_out"),
    "softmax": ("n", "addr", None, None),
}
#: the word's fields: (name, least significant bit, width)
LAYOUT = (("n", 3, 8), ("a", 11, 20), ("b", 31, 20), ("c", 51, 7))


class QkvEncodeError(AccvError):
    """A concrete instruction that has no QKV instruction word (unknown name, attribute, field overflow)."""


def field_limit(name: str, attr: str) -> int:
    """The largest value attribute ``attr`` of instruction ``name`` can take in its field."""
    for a, (_, _, width) in zip(FIELDS[name], LAYOUT, strict=True):
        if a == attr:
            return (1 << width) - 1
    raise QkvEncodeError(f"{name} has no attribute '{attr}'")


def encode(ins: Concrete) -> int:
    """The 64-bit instruction word of ``ins`` (format: module doc). Values that fit their field but
    break the ISA's bounds are encoded; the RTL rejects them (err), as the simulator does."""
    if ins.name not in OPCODES:
        raise QkvEncodeError(f"'{ins.name}' is not a QKV instruction", ins.loc)
    names = FIELDS[ins.name]
    env = ins.env
    wanted = {a for a in names if a is not None}
    extra = sorted(set(env) - wanted)
    if extra:
        raise QkvEncodeError(f"{ins.name} has no attribute '{extra[0]}'", ins.loc)
    word = OPCODES[ins.name]
    for attr, (field, lsb, width) in zip(names, LAYOUT, strict=True):
        if attr is None:
            continue
        if attr not in env:
            raise QkvEncodeError(f"{ins}: attribute '{attr}' is missing", ins.loc)
        v = env[attr]
        if not 0 <= v < (1 << width):
            raise QkvEncodeError(f"{ins}: {attr}={v} does not fit the {width}-bit field {field}", ins.loc)
        word |= v << lsb
    return word


def decode(word: int) -> Concrete:
    """The concrete instruction of an instruction word (inverse of :func:`encode`)."""
    op = word & 7
    names = {v: k for k, v in OPCODES.items()}
    if op not in names:
        raise QkvEncodeError(f"opcode {op} is not a QKV instruction")
    name = names[op]
    attrs = []
    for attr, (_, lsb, width) in zip(FIELDS[name], LAYOUT, strict=True):
        if attr is not None:
            attrs.append((attr, (word >> lsb) & ((1 << width) - 1)))
    return Concrete(name, tuple(attrs))
