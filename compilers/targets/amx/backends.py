"""The ``emulated`` and ``native`` backends of target amx: a program's emitted C
(compilers/targets/amx/emit_c.py) built with gcc (compilers/targets/amx/cbuild.py) and run on the program's HBM
image, outputs read back from the final image.

- :class:`EmulatedBackend`: the C built against compilers/targets/amx/emulation.h; available wherever
  gcc runs.
- :class:`NativeBackend`: the C built with ``-march=sapphirerapids`` and run on the host's AMX
  unit; available where /proc/cpuinfo shows amx_tile, amx_int8, amx_bf16, avx512f, avx512bw and avx512_vbmi
  and gcc knows Sapphire Rapids.

Both implement ``run(program, inputs) -> RunResult`` (cycles ``None``: nothing is measured) and
``run_image(program, image) -> final HBM image``; ``for_target(acc)`` raises
:class:`~compilers.backend.BackendUnavailable` with the reason. A program that crashes raises
:class:`~compilers.targets.amx.cbuild.RunFailure` (the signal named). Final images are compared
with the simulator's by ``check.policy.compare_images``, under the comparison rule every check
uses (``nan_bits`` False here: a NaN matches any NaN).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ...backend import BackendUnavailable, RunResult
from ...isa import Accelerator
from ...program import Program, hbm_image, read_outputs
from .cbuild import BuildError, build, gcc_version, run_image

__all__ = ["EmulatedBackend", "NativeBackend", "emulated_available", "native_available"]


def emulated_available() -> tuple[bool, str]:
    """(True, "") where gcc runs, else (False, the reason)."""
    try:
        gcc_version()
    except BuildError as e:
        return False, f"the emulated backend needs gcc: {e.reason}"
    return True, ""


@functools.cache
def native_available(cpuinfo: str = "/proc/cpuinfo") -> tuple[bool, str]:
    """(True, "") where this host runs AMX and AVX-512 code and gcc compiles it, else the reason."""
    from .emit_c import native_amx_available

    ok, why = native_amx_available(cpuinfo)
    if not ok:
        return False, f"no native AMX: {why}"
    if shutil.which("gcc") is None:
        return False, "gcc is not installed"
    r = subprocess.run(["gcc", "-march=sapphirerapids", "-x", "c", "-c", "-o", "/dev/null", "-"],
                       input="#include <immintrin.h>\nvoid f(void){_tile_release();}\n", text=True,
                       capture_output=True)
    return (True, "") if r.returncode == 0 else (False, "gcc lacks -march=sapphirerapids")


@dataclass
class _CBackend:
    acc: Accelerator
    timeout: float = 60.0
    log: list[str] = field(default_factory=list)

    name: ClassVar[str]
    mode: ClassVar[str]
    targets: ClassVar[tuple[str, ...]] = ("amx",)
    #: which NaN the hardware returns for several NaN operands, and TDPBF16PS's NaNs, are not
    #: modelled by the reference (the amx description's docstring); the emulation follows the hardware
    nan_bits: ClassVar[bool] = False

    title: ClassVar[str]

    @staticmethod
    def available() -> tuple[bool, str]:
        raise NotImplementedError

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this host cannot run it (the registry's question), or None."""
        ok, why = cls.available()
        return None if ok else why

    @classmethod
    def for_target(cls, acc: Accelerator) -> _CBackend:
        if acc.name not in cls.targets:
            raise BackendUnavailable(f"the {cls.name} backend runs target amx only, not '{acc.name}'")
        ok, why = cls.available()
        if not ok:
            raise BackendUnavailable(f"the {cls.name} backend is unavailable: {why}")
        return cls(acc)

    def run_image(self, program: Program, image: np.ndarray) -> np.ndarray:
        """The final HBM image of ``program`` run from ``image`` (inputs and constants placed)."""
        from .emit_c import emit_c

        if program.target not in self.targets:
            raise BackendUnavailable(f"program is for target '{program.target}', not amx")
        built = build(emit_c(program, self.acc, with_main=True), self.mode)
        self.log.append(f"{self.mode} build {built.key}: " + ("cached" if built.cached else f"{built.seconds:.2f} s"))
        return run_image(built.exe, image, self.timeout)

    def run(self, program: Program, inputs: Sequence[np.ndarray]) -> RunResult:
        self.log = []
        final = self.run_image(program, hbm_image(program, inputs, self.acc.hbm_size))
        return RunResult(read_outputs(program, final), None,
                         [*self.log, f"{len(program.instructions)} instructions ({self.name})"])


@dataclass
class EmulatedBackend(_CBackend):
    """The emitted C on the emulation header (any host with gcc)."""

    name: ClassVar[str] = "emulated"
    title: ClassVar[str] = "emulated C (AMX intrinsics in portable C)"
    mode: ClassVar[str] = "emulated"

    @staticmethod
    def available() -> tuple[bool, str]:
        return emulated_available()


@dataclass
class NativeBackend(_CBackend):
    """The emitted C on the host's AMX and AVX-512 units."""

    name: ClassVar[str] = "native"
    title: ClassVar[str] = "host's AMX unit"
    mode: ClassVar[str] = "native"

    @staticmethod
    def available() -> tuple[bool, str]:
        return native_available()

