"""Build the AMX emitter's C (compilers/targets/amx/emit_c.py, ``with_main=True``) and run it on an HBM image.

Two builds of the same source:

- ``emulated``: the unit's ``#include <immintrin.h>`` line is replaced by ``#include
  "emulation.h"`` (this folder: every intrinsic the emitter uses, in portable C) and the result
  is compiled with ``gcc -O2 -ffp-contract=off``: it runs on any host gcc targets;
- ``native``: the unit as emitted, ``gcc -O2 -march=sapphirerapids``: it needs AMX and AVX-512.

Builds are cached by content: the key hashes the compiled source, the header (emulated), the
flags and ``gcc --version``; the executable lives at ``build/amx/<key>`` in the working directory (``$ACCV_AMX_BUILD``
overrides the folder) and is written under a temporary name, then renamed, so concurrent builds
never see a partial file. A run feeds the HBM image on stdin and reads it back from stdout (the
unit's ``main``) in a subprocess with a timeout: a crash (SIGILL, SIGSEGV, ...), a non-zero exit
or a hang is a :class:`RunFailure` naming the signal or the exit status, never a hang or a crash
of the caller.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from semantics.errors import AccvError

__all__ = ["HEADER", "MODES", "BuildError", "Built", "RunFailure", "build", "build_dir", "emulated_source",
           "gcc_version", "run_image"]

HEADER = Path(__file__).resolve().parent / "emulation.h"
INCLUDE = "#include <immintrin.h>"
#: gcc flags per mode (the emulated build adds ``-iquote`` the header's folder)
MODES: dict[str, tuple[str, ...]] = {
    "emulated": ("-O2", "-std=gnu11", "-ffp-contract=off"),
    "native": ("-O2", "-march=sapphirerapids"),
}
#: exit statuses of the emitted ``main`` (compilers/targets/amx/emit_c.py's "main" template)
_EXITS = {2: "short HBM image on stdin", 3: "arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) was refused",
          4: "short write of the HBM image"}


class BuildError(AccvError):
    """gcc is missing or rejected a unit (the reason holds the end of its diagnostics)."""


class RunFailure(AccvError):
    """A built program that crashed, exited non-zero, timed out or wrote a short image."""

    def __init__(self, reason: str, *, signal_name: str | None = None, returncode: int | None = None,
                 stderr: str = "") -> None:
        super().__init__(reason)
        self.signal_name = signal_name
        self.returncode = returncode
        self.stderr = stderr


@dataclass(frozen=True)
class Built:
    exe: Path
    key: str
    cached: bool
    seconds: float   # gcc's wall time (0 when cached)


def build_dir() -> Path:
    env = os.environ.get("ACCV_AMX_BUILD")
    return Path(env) if env else Path.cwd() / "build" / "amx"


@functools.cache
def gcc_version(gcc: str = "gcc") -> str:
    """``gcc --version``'s first line; raises BuildError when gcc cannot run."""
    if shutil.which(gcc) is None:
        raise BuildError(f"{gcc} is not installed")
    r = subprocess.run([gcc, "--version"], capture_output=True, text=True)
    if r.returncode:
        raise BuildError(f"{gcc} --version exited {r.returncode}")
    return r.stdout.splitlines()[0] if r.stdout else ""


def emulated_source(source: str) -> str:
    """``source`` with its ``#include <immintrin.h>`` line replaced by the emulation header."""
    lines = source.split("\n")
    hits = [i for i, ln in enumerate(lines) if ln.strip() == INCLUDE]
    if len(hits) != 1:
        raise BuildError(f"the unit has {len(hits)} '{INCLUDE}' lines, the emulated build replaces exactly one")
    lines[hits[0]] = '#include "emulation.h"   /* compilers/targets/amx/emulation.h instead of <immintrin.h> */'
    return "\n".join(lines)


def build(source: str, mode: str = "emulated", cache: Path | None = None) -> Built:
    """The executable of the unit ``source`` (emitted with ``with_main=True``) for ``mode``,
    from the cache when it holds one with the same key; raises BuildError."""
    if mode not in MODES:
        raise BuildError(f"unknown build mode '{mode}' (known: {', '.join(MODES)})")
    flags = list(MODES[mode])
    text = source
    h = hashlib.sha256()
    if mode == "emulated":
        text = emulated_source(source)
        h.update(HEADER.read_bytes())
        flags += ["-iquote", str(HEADER.parent)]
    h.update(text.encode())
    h.update("\0".join([mode, *MODES[mode], gcc_version()]).encode())
    key = h.hexdigest()[:32]
    folder = cache or build_dir()
    exe = folder / f"{mode}-{key}"
    if exe.exists():
        return Built(exe, key, True, 0.0)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{exe.name}.{os.getpid()}.tmp"
    src = tmp.with_suffix(".c")
    src.write_text(text)
    t0 = time.perf_counter()
    try:
        r = subprocess.run(["gcc", *flags, "-o", str(tmp), str(src), "-lm"], capture_output=True, text=True)
        if r.returncode:
            raise BuildError(f"gcc ({mode}) exited {r.returncode}: {r.stderr.strip()[-1500:]}")
        os.replace(tmp, exe)
    finally:
        src.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    return Built(exe, key, False, time.perf_counter() - t0)


def run_image(exe: Path, image: np.ndarray, timeout: float = 60.0) -> np.ndarray:
    """Run ``exe`` on the HBM ``image`` (stdin) and return the final image (stdout); raises
    RunFailure with the signal name or exit status, or on a timeout."""
    img = np.ascontiguousarray(image, dtype=np.uint8)
    try:
        r = subprocess.run([str(exe)], input=img.tobytes(), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RunFailure(f"{exe.name}: no answer within {timeout:g} s (killed)") from None
    err = r.stderr.decode(errors="replace").strip()
    last = err.splitlines()[-1] if err else ""
    if r.returncode < 0:
        try:
            sig = signal.Signals(-r.returncode).name
        except ValueError:
            sig = f"signal {-r.returncode}"
        raise RunFailure(f"{exe.name}: killed by {sig}" + (f" ({last})" if last else ""),
                         signal_name=sig, returncode=r.returncode, stderr=err)
    if r.returncode:
        why = _EXITS.get(r.returncode, "")
        raise RunFailure(f"{exe.name}: exit status {r.returncode}" + (f" ({why})" if why else "")
                         + (f": {last}" if last else ""), returncode=r.returncode, stderr=err)
    out = np.frombuffer(r.stdout, np.uint8)
    if out.size != img.size:
        raise RunFailure(f"{exe.name}: wrote {out.size} bytes, the HBM image has {img.size}", returncode=0, stderr=err)
    return out.copy()
