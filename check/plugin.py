"""The pytest plugin that runs a folder of HLO kernels as a regression suite (docs/regression.md).

Registered through accv's ``pytest11`` entry point (installing accv is enough). It collects every
``*.hlo`` file under the folders of the ``accv_kernels`` ini option as one test item per
(kernel, target, backend), the targets and backends from ``accv_targets`` / ``accv_backends`` (or
the file's own ``// accv: targets`` / ``backends`` directives, :mod:`check.header`);
a target has items only for the backends registered for it (:func:`check.backends.backends_for`:
no amx item on rtl).

An item compiles the kernel for its target (:func:`compilers.compile.compile`, once per (kernel,
target) in a session, whatever the number of backends) and checks the program on its backend
(:func:`check.run.check_program`, the check ``accv check`` and a campaign run: the file's given
input set, then ``accv_check`` sets of the input-set plan):

- a backend that cannot run here skips the item with the reason;
- a difference (or a backend that raises on the program) fails it with the first differing
  element (output, index, expected and actual value and bits) and the reproducer folder it wrote
  (:mod:`check.reproducer`'s format, replayed by ``accv fuzz --replay``; under
  ``accv_reproducers``, default the session's basetemp);
- the compiler's exit 3 (the target cannot run the kernel) passes only where the file says
  ``// accv: expect unsupported on TARGET``, which in turn fails where the kernel compiles;
- a ``// accv: cycles <= N on TARGET [BACKEND]`` bound fails the item when the run took more.

Items carry the markers ``accv`` and their backend's name (``-m "not rtl"`` leaves the RTL out).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from semantics.errors import AccvError

from .header import Header, HeaderError, read_header

if TYPE_CHECKING:
    from compilers.isa import Accelerator
    from compilers.partition.program import Partitioned
    from compilers.program import Program
    from semantics.ir import Graph

__all__ = ["KernelCheckFailed", "KernelFile", "KernelItem"]

_INI = {
    "accv_kernels": ("paths", [], "folders whose *.hlo kernels are test items (relative to the ini file)"),
    "accv_targets": ("args", ["gemmini", "qkv", "amx"], "targets each kernel is compiled for (default: all)"),
    "accv_backends": ("args", ["sim"], "backends each compiled kernel is checked on (default: sim)"),
    "accv_check": ("string", "3", "random input sets per item, after the file's given inputs (default 3)"),
    "accv_seed": ("string", "0", "seed of the first random input set (default 0)"),
    "accv_proofs": ("string", "prove", "'prove' (default): prove a missing rule instantiation at first use; "
                                       "'cached': only cached proofs"),
    "accv_reproducers": ("string", "", "folder for the reproducers of failing items (default: under the "
                                       "pytest basetemp)"),
}


class KernelCheckFailed(Exception):
    """An item's check failed; ``str()`` is the whole readable report (no traceback is shown)."""


@dataclass
class _Session:
    """What the items of one pytest session share: the compiled programs and the rule sets."""

    kernels: list[Path]
    targets: list[str]
    backends: list[str]
    check: int
    seed: int
    proofs: str
    reproducers: Path | None
    compiled: dict[tuple[Path, str], Any] = field(default_factory=dict)


_KEY = pytest.StashKey[_Session]()


def pytest_addoption(parser: pytest.Parser) -> None:
    for name, (kind, default, help_) in _INI.items():
        parser.addini(name, help_, type=kind, default=default)  # type: ignore[arg-type]


def _int_ini(config: pytest.Config, name: str) -> int:
    value = str(config.getini(name)).strip()
    if not re.fullmatch(r"\d+", value):
        raise pytest.UsageError(f"{name} = '{value}': a whole number is needed")
    return int(value)


def pytest_configure(config: pytest.Config) -> None:
    from compilers.targets import TARGETS

    from .backends import backend_names

    kernels = [Path(p).resolve() for p in config.getini("accv_kernels")]
    missing = [k for k in kernels if not k.is_dir()]
    if missing:
        raise pytest.UsageError(f"accv_kernels: no folder {missing[0]}")
    targets, backends = list(config.getini("accv_targets")), list(config.getini("accv_backends"))
    for what, given, known in (("target", targets, tuple(TARGETS)), ("backend", backends, backend_names())):
        bad = [x for x in given if x not in known]
        if bad:
            raise pytest.UsageError(f"accv_{what}s: unknown {what} '{bad[0]}' (known: {', '.join(known)})")
    proofs = str(config.getini("accv_proofs")).strip()
    if proofs not in ("prove", "cached"):
        raise pytest.UsageError(f"accv_proofs = '{proofs}': 'prove' or 'cached'")
    repro = str(config.getini("accv_reproducers")).strip()
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    config.stash[_KEY] = _Session(kernels, targets, backends, _int_ini(config, "accv_check"),
                                  _int_ini(config, "accv_seed"), proofs, (base / repro).resolve() if repro else None)
    declared = {str(m).split(":")[0].split("(")[0].strip() for m in config.getini("markers")}
    config.addinivalue_line("markers", "accv: an HLO kernel checked by the accv regression plugin")
    for b in backend_names():
        if b not in declared:
            config.addinivalue_line("markers", f"{b}: an accv kernel check on the {b} backend")
    # With no paths on the command line, pytest collects its testpaths (or the current folder): add
    # the kernel folders they do not contain, so `pytest` alone runs the suite.
    if kernels and config.args_source != pytest.Config.ArgsSource.ARGS:
        roots = [Path(a).resolve() for a in config.args]
        config.args.extend(str(k) for k in kernels if not any(k.is_relative_to(r) for r in roots))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> KernelFile | None:
    state = parent.config.stash.get(_KEY, None)
    if file_path.suffix != ".hlo" or state is None:
        return None
    path = file_path.resolve()
    if not any(path.is_relative_to(k) for k in state.kernels):
        return None
    return KernelFile.from_parent(parent, path=file_path)


class KernelFile(pytest.File):
    """One ``*.hlo`` kernel: an item per (target, backend)."""

    def collect(self):  # noqa: ANN201 - Iterable[KernelItem]
        from compilers.targets import TARGETS

        from .backends import backend_names, backends_for

        state = self.config.stash[_KEY]
        try:
            header = read_header(self.path)
        except (HeaderError, OSError) as e:
            raise self.CollectError(f"{self.path}: {e}" if isinstance(e, OSError) else str(e)) from None
        for what, given, known in (("target", header.targets, tuple(TARGETS)),
                                   ("backend", header.backends, backend_names())):
            bad = [x for x in given if x not in known]
            if bad:
                raise self.CollectError(f"{self.path}: unknown {what} '{bad[0]}' in its '// accv: {what}s' directive "
                                        f"(known: {', '.join(known)})")
        for target in header.targets or state.targets:
            for backend in header.backends or state.backends:
                if backend not in backends_for(target):   # no such pair (amx has no rtl): no item
                    continue
                item = KernelItem.from_parent(self, name=f"{target}-{backend}", target=target, backend=backend,
                                              header=header)
                item.add_marker(pytest.mark.accv)
                item.add_marker(getattr(pytest.mark, backend))
                yield item


@dataclass
class _Compiled:
    graph: Graph
    acc: Accelerator
    program: Program | Partitioned | None
    unsupported: str | None = None


def _compile(state: _Session, path: Path, target: str, host: bool = False) -> _Compiled:
    """``path`` compiled for ``target`` (the program, or the reason the target cannot run it; with
    ``host``, partitioned where the target cannot run it whole); raises :class:`AccvError` for a
    kernel that does not parse; memoized for the session."""
    key = (path, target, host)
    hit = state.compiled.get(key)
    if isinstance(hit, BaseException):
        raise hit
    if hit is not None:
        return hit
    try:
        state.compiled[key] = _compile_now(state, path, target, host)
    except Exception as e:  # noqa: BLE001 - remembered, so every backend's item reports the same error
        state.compiled[key] = e
        raise
    return state.compiled[key]


def _compile_now(state: _Session, path: Path, target: str, host: bool) -> _Compiled:
    from compilers.compile import compile
    from compilers.errors import Unsupported
    from compilers.targets import load_target
    from semantics.hlo_parser import parse_file

    graph = parse_file(path)
    acc = load_target(target)
    try:
        return _Compiled(graph, acc, compile(graph, acc, proofs=state.proofs, host=host).program)
    except Unsupported as e:
        return _Compiled(graph, acc, None, e.reason)


class KernelItem(pytest.Item):
    """One kernel on one (target, backend)."""

    def __init__(self, *, target: str, backend: str, header: Header, **kw: Any) -> None:
        super().__init__(**kw)
        self.target, self.backend, self.header = target, backend, header

    def _where(self) -> str:
        return f"{self.nodeid.split('::')[0]} on {self.target} {self.backend}"

    def runtest(self) -> None:
        from .backends import get_backend, unavailable
        from .run import check_program

        state = self.config.stash[_KEY]
        why = unavailable(self.target, self.backend)
        if why is not None:
            raise pytest.skip.Exception(why, _use_item_location=True)
        bound = self.header.host.get(self.target)
        c = _compile(state, self.path.resolve(), self.target, host=bound is not None)
        expected = self.header.unsupported.get(self.target)
        if c.program is None:
            if expected is not None:
                return
            raise KernelCheckFailed(
                f"{self._where()}: the compiler cannot run it on {self.target} (exit 3): {c.unsupported}\n"
                f"If that is expected, say so in the file: // accv: expect unsupported on {self.target}")
        if expected is not None:
            raise KernelCheckFailed(
                f"{self._where()}: line {expected} expects the target to be unable to run it, but it compiled to "
                f"{len(c.program.instructions)} instructions; remove '{self.target}' from that line")
        split = getattr(c.program, "split", None)
        if bound is not None and split is not None and 100 * split.host_share > bound[0] + 1e-9:
            raise KernelCheckFailed(
                f"{self._where()}: {100 * split.host_share:.1f}% of its operators run on the host "
                f"({split.ops_total - split.ops_acc} of {split.ops_total}), over the bound on line {bound[1]} "
                f"(host <= {bound[0]:g}%); on the host: "
                + "; ".join(f"{h.name} ({h.opcode}): {h.why}" for h in split.host[:4]))
        given = [self._inputs(c.graph)] if self.header.inputs else []
        repro = self._repro_dir(state)
        chk = check_program(c.graph, c.acc, c.program, state.check, state.seed,
                            backend=get_backend(c.acc, self.backend), inputs=given, repro_dir=repro)
        self.user_properties.append(("outcome", chk.outcome))      # the verdict, as accv check and a campaign say it
        cycles = chk.cycles.get(self.backend)
        if cycles is not None:
            self.user_properties.append(("cycles", cycles))
        if not chk.ok:
            what = (f"the compiled program differs from {chk.contract} on" if chk.outcome == "mismatch"
                    else f"the {self.backend} backend failed on the compiled program ({chk.outcome}):")
            raise KernelCheckFailed(
                f"{self._where()}: {what} {chk.message}\n"
                f"reproducer: {chk.reproducer} (kernel.hlo, inputs, expected/actual .npy, program.asm; its README.md "
                "has the replay command)")
        for b in self.header.bounds(self.target, self.backend):
            if cycles is None:
                if b.backend is not None:
                    raise KernelCheckFailed(f"{self._where()}: line {b.line} bounds the cycles ({b}), but the "
                                            f"{self.backend} backend measures none")
            elif cycles > b.limit:
                raise KernelCheckFailed(f"{self._where()}: {cycles} cycles, over the bound on line {b.line} "
                                        f"({b}) by {cycles - b.limit}")

    def _inputs(self, graph: Graph) -> list:
        from semantics.types import TensorType

        from semantics.npyio import load_input

        types = graph.param_types
        files = self.header.inputs
        if len(files) != len(types):
            raise KernelCheckFailed(f"{self._where()}: the '// accv: inputs' directive names {len(files)} file(s), "
                                    f"the kernel takes {len(types)} parameter(s)")
        out = []
        for k, (f, t) in enumerate(zip(files, types, strict=True)):
            if not isinstance(t, TensorType):
                raise KernelCheckFailed(f"{self._where()}: parameter {k} has tuple type {t}; no input file can give it")
            out.append(load_input(self.path.parent / f, t, k))
        return out

    def _repro_dir(self, state: _Session) -> Path:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{self.nodeid.split('::')[0].removesuffix('.hlo')}-{self.name}")
        if state.reproducers is not None:
            return state.reproducers / slug
        factory = getattr(self.config, "_tmp_path_factory", None)
        base = factory.getbasetemp() if factory is not None else Path(self.config.rootpath) / ".accv-reproducers"
        return Path(base) / "accv-reproducers" / slug

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:  # type: ignore[override]
        e = excinfo.value
        if isinstance(e, KernelCheckFailed):
            return str(e)
        if isinstance(e, AccvError):
            return f"{self._where()}: {e}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.path.name} on {self.target} {self.backend}"   # a failure's title
