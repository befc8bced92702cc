"""Optional XLA oracle: run a :class:`~semantics.ir.Graph` on XLA's CPU backend (through jax).

Used by the conformance test (tests/semantics/test_conformance.py) and bench/conformance.py to
check the reference semantics against XLA itself. jax is imported lazily, so this module imports
fine without it; :func:`available` says whether the oracle can run and, if not, why.

Recipe (jaxlib >= 0.10 compiles only MLIR): HLO text -> ``xla_client.hlo.hlo_module_from_text``
-> serialized HloModuleProto -> ``_jax.mlir.hlo_to_stablehlo`` -> ``Client.compile_and_load`` ->
``execute``. Two details matter for bit-exactness:

* ``jax_enable_x64`` must be on, else ``device_put`` narrows s64/u64/f64 buffers to 32 bits.
* The StableHLO->HLO import runs StableHLO's aggressive folder, which evaluates operations whose
  operands are all constants with MLIR (APInt/APFloat) semantics rather than XLA's codegen (and
  kills the process with SIGFPE on an integer division of constants by zero). So before printing,
  every constant of the ENTRY computation (except a constant root) becomes an extra runtime
  parameter, at the graph level: :func:`hoist_constants` rebuilds the graph with
  :class:`~semantics.graph.GraphBuilder` and the text comes from :func:`~semantics.hlo_printer.print_hlo`.
  Likewise every ``iota`` of the ENTRY computation is fed through ``maximum(iota, p)`` with a
  runtime zero ``p`` (a value-preserving operation: iota values are >= 0) so that nothing built
  from it can be folded at compile time.
* XLA runs with ``--xla_allow_excess_precision=false`` (:data:`STRICT_PRECISION_FLAG`). With the
  default (true), XLA may skip the rounding of a bf16 result that is converted straight to f32
  (it removes the f32->bf16->f32 convert pair): measured, ``convert(bf16 add(p, q)) -> f32`` kept
  the unrounded f32 sum in 512 of 1000 elements. The reference semantics rounds every bf16/f16
  operation, which is XLA's strict mode (0 of 1000 differ with the flag). The flag is set before
  jax is imported unless XLA_FLAGS already names it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from .graph import GraphBuilder
from .hlo_printer import print_hlo
from .ir import Attrs, Graph, Literal
from .types import TensorType, TupleType

STRICT_PRECISION_FLAG = "--xla_allow_excess_precision=false"

__all__ = ["available", "run_xla", "run_xla_all", "hoist_constants", "compile_text"]

_state: dict[str, Any] = {}
_cache: dict[str, Any] = {}


def available() -> tuple[bool, str]:
    """(True, "") when jax with the XLA CPU backend can be imported, else (False, the reason)."""
    try:
        _jax()
    except Exception as e:  # ImportError, or a broken installation
        return False, f"XLA oracle unavailable: cannot import jax ({type(e).__name__}: {e})"
    return True, ""


def _jax() -> Any:
    if "jax" not in _state:
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_allow_excess_precision" not in flags:
            os.environ["XLA_FLAGS"] = (flags + " " + STRICT_PRECISION_FLAG).strip()
        import jax
        from jax._src.lib import _jax as jaxlib_ext
        from jax._src.lib import xla_client

        jax.config.update("jax_enable_x64", True)
        _state.update(jax=jax, ext=jaxlib_ext, xc=xla_client, client=jax.devices("cpu")[0].client)
    return _state


def hoist_constants(graph: Graph) -> tuple[Graph, list[np.ndarray]]:
    """The graph with each non-root ENTRY constant turned into an extra parameter (same name and
    type) and each ENTRY iota guarded by ``maximum(iota, zero-parameter)``; returns it and the
    values to pass for the new parameters, in parameter order."""
    entry = graph.entry
    gb = GraphBuilder(graph.name)
    for comp in graph.computations:
        if comp.name != graph.entry_name:
            gb.add_computation(comp)
    cb = gb.computation(entry.name)
    nparams = len(entry.params)
    extra: list[np.ndarray] = []
    names = {i.name for i in entry.instructions}
    rename: dict[str, str] = {}
    for ins in entry.instructions:
        is_root = ins.name == entry.root
        operands = [rename.get(o, o) for o in ins.operands]
        if ins.opcode == "constant" and not is_root:
            lit: Literal = ins.attrs["literal"]
            cb.add(ins.name, "parameter", [], Attrs.of(index=nparams + len(extra)), declared=ins.type)
            extra.append(lit.to_array())
        elif ins.opcode == "iota" and isinstance(ins.type, TensorType):
            t = ins.type
            raw, zero = _fresh(names, ins.name + ".raw"), _fresh(names, ins.name + ".zero")
            cb.add(raw, "iota", [], ins.attrs, declared=t.without_layout())
            cb.add(zero, "parameter", [], Attrs.of(index=nparams + len(extra)), declared=t.without_layout())
            extra.append(np.zeros(t.shape, dtype=t.dtype.np))
            cb.add(ins.name, "maximum", [raw, zero], declared=ins.type, root=is_root)
        else:
            cb.add(ins.name, ins.opcode, operands, ins.attrs, declared=ins.type, root=is_root)
    gb.add_computation(cb.build(), entry=True)
    return gb.build(), extra


def _fresh(names: set[str], base: str) -> str:
    name, k = base, 0
    while name in names:
        k += 1
        name = f"{base}{k}"
    names.add(name)
    return name


def compile_text(text: str) -> Any:
    """Compile HLO text on XLA:CPU (cached by text); returns the loaded executable."""
    exe = _cache.get(text)
    if exe is None:
        st = _jax()
        xc, client = st["xc"], st["client"]
        mod = xc.hlo.hlo_module_from_text(text)
        mlir = st["ext"].mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
        devs = xc.DeviceList(tuple(client.local_devices()[:1]))
        exe = client.compile_and_load(mlir, devs, xc.CompileOptions())
        _cache[text] = exe
    return exe


def run_xla(graph: Graph, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Run ``graph`` on XLA:CPU with ``inputs`` (one array per entry parameter) and return its
    outputs as a flat list (one array, or one per element of a root tuple)."""
    if any(isinstance(t, TupleType) for t in graph.param_types):
        raise ValueError("run_xla: tuple-typed parameters are not supported")
    hoisted, extra = hoist_constants(graph)
    text = print_hlo(hoisted)
    exe = compile_text(text)
    st = _jax()
    dev = st["client"].local_devices()[0]
    args = [st["jax"].device_put(np.ascontiguousarray(x), dev) for x in [*inputs, *extra]]
    outs = [np.asarray(o) for o in exe.execute(args)]
    want = graph.result_types
    if len(outs) != len(want):
        raise RuntimeError(f"XLA returned {len(outs)} outputs, the graph has {len(want)}")
    return [o.astype(t.dtype.np, copy=False).reshape(t.shape) for o, t in zip(outs, want, strict=True)]


def run_xla_all(graph: Graph, inputs: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Every tensor value of the ENTRY computation (parameters excepted) as XLA:CPU computes it,
    by name: the graph is run with a root tuple of all of them. (XLA may fuse differently than
    for the original root; each value is still XLA's own computation of that instruction.)"""
    entry = graph.entry
    keep = [i for i in entry.instructions if isinstance(i.type, TensorType) and i.opcode != "parameter"]
    gb = GraphBuilder(graph.name)
    for comp in graph.computations:
        if comp.name != graph.entry_name:
            gb.add_computation(comp)
    cb = gb.computation(entry.name)
    for ins in entry.instructions:
        cb.add(ins.name, ins.opcode, list(ins.operands), ins.attrs, declared=ins.type)
    cb.add(_fresh({i.name for i in entry.instructions}, "all_values"), "tuple", [i.name for i in keep], root=True)
    gb.add_computation(cb.build(), entry=True)
    outs = run_xla(gb.build(), inputs)
    return {i.name: o for i, o in zip(keep, outs, strict=True)}
