"""A disk cache of what a process generates from ISA descriptions, by content hash.

A process's first compile for a target parses and lowers the semantics of every (instruction,
α) that its rules and its tiling search look at (about 1,200 for amx_k5, about 1.6 ms each:
most of the "gen" time that ``accv compile`` pays on every run). This module keeps each result
(a parsed g_θ(α) graph, a lowered pattern term) as a pickle under ``build/gen/`` in the working
directory (``$ACCV_GEN_CACHE`` names another folder; ``ACCV_GEN_CACHE=off`` turns the cache off),
so that later processes load it instead (about 0.1 ms).

The key is the SHA-256 of the entry's kind, the instantiated HLO text and its source name (what
the parser was given), the source of every module of the :mod:`semantics` and :mod:`compilers`
packages (the parser, the operator table, the lowering), the Python and NumPy versions and
:data:`FORMAT`. A changed description, α value, parser or lowering therefore never meets an old
entry (an edit anywhere in those packages starts a new set). Entries are written atomically (a
temporary file, then a rename), so processes running side by side (``pytest -n``) share the
folder safely. An entry that cannot be read or is not of the expected class is computed again
and rewritten; a folder that cannot be written is only not filled. The cached objects hold no
process state: :class:`semantics.dtypes.DType` unpickles to the process's own dtype objects,
and terms and node infos drop their cached (salted) hashes.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np

__all__ = ["FORMAT", "cache_dir", "cached", "load", "source_digest", "store"]

T = TypeVar("T")

#: bumped when what an entry holds changes shape
FORMAT = 1

_DIGEST: str | None = None


def cache_dir() -> Path | None:
    """The cache folder (``$ACCV_GEN_CACHE`` or ``build/gen`` in the working directory), or None
    when ``ACCV_GEN_CACHE=off``."""
    v = os.environ.get("ACCV_GEN_CACHE")
    if v is not None and v.strip().lower() == "off":
        return None
    return Path(v) if v else Path.cwd() / "build" / "gen"


def source_digest() -> str:
    """SHA-256 over the source of the :mod:`semantics` and :mod:`compilers` packages (file names
    and contents), the Python and NumPy versions and :data:`FORMAT`; computed once per process."""
    global _DIGEST
    if _DIGEST is None:
        import compilers
        import semantics

        h = hashlib.sha256(f"{FORMAT}|{sys.version_info[:2]}|{np.__version__}|".encode())
        for pkg in (semantics, compilers):
            root = Path(pkg.__file__).parent
            for p in sorted(root.rglob("*.py")):
                h.update(f"{pkg.__name__}/{p.relative_to(root).as_posix()}".encode() + b"\0")
                h.update(p.read_bytes() + b"\0")
        _DIGEST = h.hexdigest()
    return _DIGEST


def _path(kind: str, text: str, filename: str) -> Path | None:
    d = cache_dir()
    if d is None:
        return None
    h = hashlib.sha256(source_digest().encode())
    h.update(kind.encode() + b"\0" + filename.encode() + b"\0" + text.encode())
    key = h.hexdigest()
    return d / key[:2] / f"{key[2:]}.pkl"


def load(kind: str, text: str, filename: str, cls: type[T]) -> T | None:
    """The ``cls`` object an earlier process stored for (``kind``, ``text``, ``filename``), or None."""
    path = _path(kind, text, filename)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            g = pickle.load(f)
        if isinstance(g, cls):
            return g
    except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, TypeError,
            ValueError):
        pass                    # absent or unreadable
    return None


def cached(kind: str, text: str, filename: str, compute: Callable[[], T], cls: type[T]) -> T:
    """``compute()``, or the ``cls`` object an earlier process cached for the same ``kind`` of
    result of the same semantics ``text`` (given to the parser as ``filename``)."""
    hit = load(kind, text, filename, cls)
    if hit is not None:
        return hit
    g = compute()
    store(kind, text, filename, g)
    return g


def store(kind: str, text: str, filename: str, g: object) -> None:
    """Write ``g`` as the entry of (``kind``, ``text``, ``filename``) (atomically; a folder that
    cannot be written is only not filled)."""
    path = _path(kind, text, filename)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pkl")
        try:
            with os.fdopen(fd, "wb") as f:
                pickle.dump(g, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        pass                    # a read-only or full disk: the cache is only not filled
