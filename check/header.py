"""The ``// accv:`` header comments of an HLO kernel file: what a regression suite expects of it.

A kernel file may carry directives, one per ``//`` comment line anywhere in the file (the HLO
parser ignores comments, so the file stays a valid kernel):

- ``// accv: targets amx`` -- the targets the kernel runs on, instead of the suite's ``accv_targets``.
- ``// accv: backends sim emulated`` -- the backends, instead of the suite's ``accv_backends``.
- ``// accv: inputs input0.npy input1.npy`` -- an input set (one ``.npy`` per parameter, paths relative
  to the kernel file) checked before the random ones.
- ``// accv: expect unsupported on qkv amx`` -- the compiler's exit 3 (the target cannot run the
  kernel) is expected on these targets; elsewhere it is a failure, and a kernel that compiles
  where this says it should not fails too (the expectation is stale).
- ``// accv: cycles <= 400 on gemmini rtl`` -- the cycles on that target and backend (every backend
  of the target that measures cycles where the backend is left out) must not exceed the bound.
- ``// accv: host <= 5% on gemmini amx`` -- the kernel is compiled with host partitioning on these
  targets (docs/partition.md; without the directive the whole graph runs on the target or it is
  exit 3), and at most this share of its operators may run on the host.

:func:`parse_header` reads them (raising :class:`HeaderError` naming the file and line of a
directive it does not know); :func:`format_header` writes them (the reproducer writer of a
fuzzing campaign uses it, so a reproducer is a regression file as it is).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from semantics.errors import InputError, SourceLoc

__all__ = ["CycleBound", "Header", "HeaderError", "format_header", "parse_header", "read_header"]

_LINE = re.compile(r"^\s*//\s*accv:\s*(.*?)\s*$")
_CYCLES = re.compile(r"^cycles\s*<=\s*(\d+)\s+on\s+(\S+)(?:\s+(\S+))?$")
_UNSUPPORTED = re.compile(r"^expect\s+unsupported\s+on\s+(\S.*)$")
_LIST = re.compile(r"^(targets|backends|inputs)\s+(\S.*)$")
_HOST = re.compile(r"^host\s*<=\s*(\d+(?:\.\d+)?)\s*%\s+on\s+(\S.*)$")


class HeaderError(InputError):
    """An ``// accv:`` directive that is malformed or unknown."""


@dataclass(frozen=True)
class CycleBound:
    limit: int
    target: str
    backend: str | None     # None: every backend of the target that measures cycles
    line: int

    def applies(self, target: str, backend: str) -> bool:
        return self.target == target and self.backend in (None, backend)

    def __str__(self) -> str:
        return f"cycles <= {self.limit} on {self.target}" + (f" {self.backend}" if self.backend else "")


@dataclass(frozen=True)
class Header:
    """The directives of one kernel file (empty lists: none given)."""

    targets: tuple[str, ...] = ()
    backends: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    unsupported: dict[str, int] = field(default_factory=dict)   # target -> line of its directive
    cycles: tuple[CycleBound, ...] = ()
    host: dict[str, tuple[float, int]] = field(default_factory=dict)   # target -> (host share bound in %, line)

    def bounds(self, target: str, backend: str) -> list[CycleBound]:
        return [b for b in self.cycles if b.applies(target, backend)]


def parse_header(text: str, file: str = "<kernel>") -> Header:
    """The directives in ``text`` (an HLO file's contents)."""
    lists: dict[str, tuple[str, ...]] = {}
    unsupported: dict[str, int] = {}
    cycles: list[CycleBound] = []
    host: dict[str, tuple[float, int]] = {}
    for n, line in enumerate(text.splitlines(), 1):
        m = _LINE.match(line)
        if m is None:
            continue
        body = " ".join(m.group(1).split())
        if (c := _CYCLES.match(body)) is not None:
            cycles.append(CycleBound(int(c.group(1)), c.group(2), c.group(3), n))
        elif (h := _HOST.match(body)) is not None:
            host.update({t: (float(h.group(1)), n) for t in h.group(2).split()})
        elif (u := _UNSUPPORTED.match(body)) is not None:
            unsupported.update({t: n for t in u.group(1).split()})
        elif (li := _LIST.match(body)) is not None:
            if li.group(1) in lists:
                raise HeaderError(f"a second '{li.group(1)}' directive", SourceLoc(file, n, 1))
            lists[li.group(1)] = tuple(li.group(2).split())
        else:
            raise HeaderError(f"unknown directive '// accv: {body}' (known: targets T.., backends B.., inputs F.., "
                              "expect unsupported on T.., cycles <= N on TARGET [BACKEND], host <= P% on T..)",
                              SourceLoc(file, n, 1))
    return Header(lists.get("targets", ()), lists.get("backends", ()), lists.get("inputs", ()), unsupported,
                  tuple(cycles), host)


def read_header(path: str | Path) -> Header:
    """The directives of the kernel file at ``path``."""
    return parse_header(Path(path).read_text(), str(path))


def format_header(targets: Sequence[str] = (), backends: Sequence[str] = (), inputs: Sequence[str] = (),
                  unsupported: Sequence[str] = (), cycles: Sequence[tuple[int, str, str | None]] = ()) -> str:
    """The comment lines stating these directives (each ends with a newline; empty ones left out);
    ``cycles`` holds (limit, target, backend or None)."""
    out = []
    for key, vals in (("targets", targets), ("backends", backends), ("inputs", inputs)):
        if vals:
            out.append(f"// accv: {key} {' '.join(vals)}\n")
    if unsupported:
        out.append(f"// accv: expect unsupported on {' '.join(unsupported)}\n")
    for limit, target, backend in cycles:
        out.append(f"// accv: cycles <= {limit} on {target}" + (f" {backend}" if backend else "") + "\n")
    return "".join(out)
