"""The refutations of rewrite_rules/xla_simplifier.txt replayed on XLA itself (for
bench/xla_simplifier.py): does XLA's algebraic simplifier apply the unsound rewrite?

For each refuted (rewrite, dtype) the prover's counterexample (``lhs_hlo``, ``inputs``,
``lhs_out``, ``rhs_out`` in the results JSON) is turned into an HLO module of the left side in
which the rewrite's constants (the ``const`` names of its line) are HLO constants holding the
counterexample's values, so that XLA's simplifier can match them. That module runs

* on the reference interpreter, with the right side's module: both outputs must equal the
  prover's recorded ones (the replay);
* on XLA:CPU through jax twice, in child processes (XLA reads its flags once): with XLA's default
  passes, and with ``--xla_disable_hlo_passes=algsimp`` (the algebraic simplifier off). Both runs
  use ``--xla_allow_excess_precision=false`` as semantics.xla_oracle does;
* the module XLA receives (jaxlib compiles only StableHLO: the HLO text goes to StableHLO and back
  to HLO, and that conversion folds some rewrites, e.g. ``add(x, 0) -> x``, before any XLA pass)
  is evaluated on the reference interpreter, to say where a rewrite happened.

XLA's output is compared with the interpreter's two sides (bits; any NaN equals any NaN, as the
prover compares). The HLO text is compiled as is (semantics.xla_oracle.compile_text), not through
xla_oracle.run_xla, whose constant hoisting would hide the constants from the simplifier.

    python bench/xla_simplifier_replay.py --worker [--no-algsimp] < jobs.json > outputs.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NO_ALGSIMP = "--xla_disable_hlo_passes=algsimp"

__all__ = ["from_json", "with_constants", "same", "replay_all", "outcome"]


def from_json(v: Any, dtype: Any) -> np.ndarray:
    """A counterexample value (verif.results' JSON form) as an array of the numpy dtype ``dtype``."""
    dt = np.dtype(dtype)
    if isinstance(v, dict):
        return np.asarray(v["bits"], dtype=f"u{dt.itemsize}").view(dt)
    return np.asarray(v).astype(dt)


def _bits(a: np.ndarray) -> dict[str, Any]:
    a = np.ascontiguousarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape), "bits": a.view(f"u{a.dtype.itemsize}").reshape(-1).tolist()}


def _unbits(d: dict[str, Any], dtype: Any) -> np.ndarray:
    dt = np.dtype(dtype)
    return np.asarray(d["bits"], dtype=f"u{dt.itemsize}").view(dt).reshape(d["shape"])


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shapes and bits, any NaN equal to any NaN (verif.replay.outputs_differ negated)."""
    from verif.replay import outputs_differ

    return not outputs_differ(np.asarray(a), np.asarray(b))


def with_constants(hlo: str, consts: dict[str, np.ndarray]) -> tuple[Any, list[str]]:
    """The module ``hlo`` with the named parameters turned into constants of the given values (the
    other parameters renumbered in order); returns the graph and its parameter names."""
    from semantics.graph import GraphBuilder
    from semantics.hlo_parser import parse_hlo
    from semantics.ir import Attrs, Literal

    g = parse_hlo(hlo)
    entry = g.entry
    gb = GraphBuilder(g.name)
    for comp in g.computations:
        if comp.name != g.entry_name:
            gb.add_computation(comp)
    cb = gb.computation(entry.name)
    params: list[str] = []
    for ins in entry.instructions:
        root = ins.name == entry.root
        if ins.opcode == "parameter" and ins.name in consts:
            lit = Literal.from_array(np.asarray(consts[ins.name]).astype(ins.type.dtype.np))
            cb.add(ins.name, "constant", [], Attrs.of(literal=lit), declared=ins.type, root=root)
        elif ins.opcode == "parameter":
            cb.add(ins.name, "parameter", [], Attrs.of(index=len(params)), declared=ins.type, root=root)
            params.append(ins.name)
        else:
            cb.add(ins.name, ins.opcode, list(ins.operands), ins.attrs, declared=ins.type, root=root)
    gb.add_computation(cb.build(), entry=True)
    return gb.build(), params


def _job(cex: dict[str, Any], consts: list[str]) -> dict[str, Any]:
    """The interpreter replay of one counterexample and the XLA job for it."""
    from semantics.hlo_parser import parse_hlo
    from semantics.hlo_printer import print_hlo
    from semantics.interp import evaluate

    g0 = parse_hlo(cex["lhs_hlo"])
    types = dict(zip(g0.entry.params, g0.param_types, strict=True))
    inputs = {k: from_json(v, types[k].dtype.np).reshape(types[k].shape) for k, v in cex["inputs"].items()}
    out_t = g0.result_types[0]
    out_dt = out_t.dtype.np
    lhs_out = from_json(cex["lhs_out"], out_dt).reshape(out_t.shape)
    rhs_out = from_json(cex["rhs_out"], out_dt).reshape(out_t.shape)
    g, params = with_constants(cex["lhs_hlo"], {k: inputs[k] for k in consts if k in inputs})
    args = [inputs[p] for p in params]
    interp_lhs = evaluate(g, args)[0]
    gr = parse_hlo(cex["rhs_hlo"])
    interp_rhs = evaluate(gr, [inputs[p] for p in gr.entry.params])[0]
    replayed = same(interp_lhs, lhs_out) and same(interp_rhs, rhs_out) and not same(interp_lhs, interp_rhs)
    return {"text": print_hlo(g), "args": [_bits(a) for a in args], "out_dtype": str(np.dtype(out_dt)),
            "lhs": lhs_out, "rhs": rhs_out, "replayed": replayed, "constants": sorted(set(consts) & set(inputs))}


def _worker(no_algsimp: bool) -> int:
    """Child process: compile and run each job of stdin on XLA:CPU, print the outputs as JSON."""
    from semantics.xla_oracle import STRICT_PRECISION_FLAG

    flags = [STRICT_PRECISION_FLAG] + ([NO_ALGSIMP] if no_algsimp else [])
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + " ".join(flags)).strip()
    from semantics import xla_oracle

    st = xla_oracle._jax()
    dev = st["client"].local_devices()[0]
    out = []
    for job in json.load(sys.stdin):
        try:
            exe = xla_oracle.compile_text(job["text"])
            args = [st["jax"].device_put(_unbits(a, a["dtype"]), dev) for a in job["args"]]
            res = np.asarray(exe.execute(args)[0]).astype(job["out_dtype"], copy=False)
            mod = st["xc"].hlo.hlo_module_from_text(job["text"])
            mlir = st["ext"].mlir.hlo_to_stablehlo(mod.as_serialized_hlo_module_proto())
            imported = st["ext"].mlir.mlir_module_to_xla_computation(mlir, use_tuple_args=False,
                                                                    return_tuple=False).as_hlo_text()
            out.append({"ok": True, "out": _bits(res), "imported": imported})
        except Exception as e:  # an HLO XLA rejects is reported, not fatal
            out.append({"ok": False, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"})
    json.dump(out, sys.stdout)
    return 0


def _run_xla(jobs: list[dict[str, Any]], no_algsimp: bool) -> list[dict[str, Any]]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker"] + (["--no-algsimp"] if no_algsimp else [])
    env = dict(os.environ, JAX_PLATFORMS="cpu", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    payload = json.dumps([{k: j[k] for k in ("text", "args", "out_dtype")} for j in jobs])
    p = subprocess.run(cmd, input=payload, capture_output=True, text=True, env=env, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"XLA worker failed (exit {p.returncode}): {p.stderr.strip()[-500:]}")
    return json.loads(p.stdout)


def _which(out: np.ndarray, job: dict[str, Any]) -> str:
    if same(out, job["rhs"]):
        return "rhs"
    return "lhs" if same(out, job["lhs"]) else "neither"


def _side(res: dict[str, Any], job: dict[str, Any]) -> str:
    if not res["ok"]:
        return "error: " + res["error"]
    return _which(_unbits(res["out"], job["out_dtype"]), job)


def _imported_side(res: dict[str, Any], job: dict[str, Any]) -> str:
    """Which side the module XLA receives after the StableHLO round trip computes, on the
    reference interpreter (the conversion folds some rewrites before any XLA pass runs)."""
    if not res["ok"]:
        return "error: " + res["error"]
    from semantics.errors import AccvError
    from semantics.hlo_parser import parse_hlo
    from semantics.interp import evaluate

    try:
        g = parse_hlo(res["imported"])
        args = [_unbits(a, a["dtype"]) for a in job["args"]]
        return _which(evaluate(g, args)[0], job)
    except (AccvError, ValueError, KeyError) as e:
        return f"error: {type(e).__name__}: {str(e)[:120]}"


def outcome(default: str, imported: str, no_algsimp: str) -> str:
    """One line for the table: the side XLA computes with its default passes, the side the module
    computes after the StableHLO->HLO conversion (before XLA's passes), and XLA's side with its
    algebraic simplifier off."""
    if default == "rhs" and imported == "rhs":
        return ("applied: XLA gives the right side's (unsound) result; the StableHLO->HLO conversion of jax's "
                "compile path already rewrote it, before XLA's passes")
    if default == "rhs" and no_algsimp == "lhs":
        return ("applied: XLA gives the right side's (unsound) result; its algebraic simplifier rewrote it "
                "(with algsimp off, the left side's)")
    if default == "rhs":
        return f"applied: XLA gives the right side's (unsound) result, also with algsimp off ({no_algsimp})"
    if default == "lhs":
        return "not applied: XLA gives the left side's result"
    return f"XLA gives neither side's result ({default}; algsimp off: {no_algsimp})"


def replay_all(data: dict[str, Any], consts: dict[str, list[str]]) -> int:
    """Replays every refuted instantiation's two-sided counterexample of ``data`` (the results
    JSON) on the interpreter (``interpreter_replayed``) and adds ``xla`` to the first of each
    (rewrite, dtype); ``consts`` maps a rule's text to its constant names. Returns how many were
    run on XLA."""
    picked: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for r in data["rules"]:
        seen: set[str] = set()
        for i in r["instantiations"]:
            i.pop("xla", None)
            c = i.get("counterexample")
            if i["verdict"] != "refuted" or not c or not c.get("rhs_hlo"):
                continue
            job = _job(c, consts.get(r["rule"], []))
            i["interpreter_replayed"] = job["replayed"]
            if i["dtype"] not in seen:
                seen.add(i["dtype"])
                picked.append((i, job))
    if not picked:
        return 0
    jobs = [j for _, j in picked]
    with_alg, without = _run_xla(jobs, False), _run_xla(jobs, True)
    for (inst, job), a, b in zip(picked, with_alg, without, strict=True):
        d, i, n = _side(a, job), _imported_side(a, job), _side(b, job)
        inst["xla"] = {"interpreter_replayed": job["replayed"], "constants": job["constants"],
                       "xla_default": d, "after_stablehlo_import": i, "xla_no_algsimp": n,
                       "outcome": outcome(d, i, n)}
    return len(picked)


if __name__ == "__main__":
    if "--worker" in sys.argv[1:]:
        sys.exit(_worker("--no-algsimp" in sys.argv[1:]))
    sys.exit("usage: python bench/xla_simplifier_replay.py --worker [--no-algsimp] < jobs.json (bench/xla_simplifier.py drives it)")
