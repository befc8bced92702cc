"""Proofs of rewrite rules with z3, per rule, claimed dtype and rank.

Two methods, and every result says which one it used (its *generality*):

* ``symbolic`` (the default target): all sizes and attributes are symbolic integers, tensors are
  uninterpreted functions from index tuples to elements (:mod:`verif.symbolic`). The rule holds
  when, under its preconditions and the left side's well-formedness, the right side is
  well-formed, has the same shape, and equals the left side at one arbitrary in-bounds index.
  Proved this way, the rule holds for every size at that rank.
* ``bounded N``: for rules whose operators have no symbolic-shape form (dot, reduce) or whose
  symbolic proof does not finish: every assignment of sizes in [0, N] and attributes allowed by
  the well-formedness conditions and preconditions is enumerated, both sides are built as concrete
  graphs and encoded with the concrete SMT semantics (:mod:`semantics.smt`, the operator table's
  own encoding), and equality is proved for every input.

A refuted rule comes with a counterexample (sizes, attributes, input tensors) that is replayed on
the reference interpreter (:mod:`verif.replay`); a counterexample that does not replay is a prover
bug and raises :class:`ProverBug`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import z3

from rewrite_rules.dsl import Node, Op, Rule, RuleCtx
from rewrite_rules.instantiate import emit, evaluator
from semantics.ops import REGISTRY
from semantics.ops import _z3util as Z

from .replay import outputs_differ, replay_graphs, replay_symbolic
from .results import Counterexample, ProofResult, ProverBug, verdict_of
from .limits import Limits, check, solver, why_unknown
from .queries import MEMO, elements_unsat
from .symbolic import Encoder, NotSymbolic

__all__ = ["ProofResult", "ProverBug", "prove", "Counterexample", "verdict_of", "PROVER_VERSION"]

#: bumped when an encoding change can change verdicts (the cache file is per version): 2 = NaN bits
#: of inputs modelled, right sides type-checked, verdicts recorded
PROVER_VERSION = "2"


def _uses(node: Node, names: tuple[str, ...]) -> bool:
    if isinstance(node, Op):
        return node.opcode in names or any(_uses(a, names) for a in node.args)
    return False


def _uninterpreted(*nodes: Node) -> list[str]:
    found: set[str] = set()

    def walk(n: Node) -> None:
        if isinstance(n, Op):
            if n.opcode in REGISTRY and REGISTRY[n.opcode].uninterpreted:
                found.add(n.opcode)
            for a in n.args:
                walk(a)
    for n in nodes:
        walk(n)
    return sorted(found)


def prove(rule: Rule, dtype: str, rank: int, timeout_s: float | None = None, bound: int = 3,
          rlimit: int | None = None) -> ProofResult:
    """Prove ``rule`` for one dtype and rank (symbolic first, bounded when needed). Every z3 query
    gets ``rlimit`` resource units (default :data:`verif.limits.RLIMIT`: the limit that decides,
    the same on any machine) and ``timeout_s`` wall seconds (default
    :data:`verif.limits.TIMEOUT_S`: a safety stop only)."""
    from . import limits

    lim = Limits(limits.TIMEOUT_S if timeout_s is None else timeout_s, limits.RLIMIT if rlimit is None else rlimit)
    t0 = time.perf_counter()
    draws = Z.nan_draws()
    try:
        return _prove(rule, dtype, rank, lim, bound, t0)
    except ProverBug as e:
        if Z.nan_draws() == draws:
            raise
        # z3 chose the bits of a NaN an operation computed (any pattern: the interpreter's choice is
        # not modelled), and the interpreter's own NaN does not show the difference
        return ProofResult(rule.name, dtype, rank, "unknown", "", time.perf_counter() - t0,
                           detail=f"the claim depends on the bits of a computed NaN, which are not modelled ({e})")


def _prove(rule: Rule, dtype: str, rank: int, lim: Limits, bound: int, t0: float) -> ProofResult:
    ctx, lhs, rhs, pre = rule.instantiate(dtype, rank)
    unint = _uninterpreted(lhs, rhs)
    ill = _check_right_side(rule, ctx, lhs, rhs, pre, dtype, rank, lim)
    if ill is not None:
        ill.seconds = time.perf_counter() - t0
        ill.uninterpreted = unint
        return ill
    try:
        # the symbolic proof first: when it proves the rule, random inputs cannot refute it, so the
        # quick random check (small counterexamples that replay by construction) runs only where
        # the symbolic query does not prove the rule
        try:
            res = _prove_symbolic(rule, ctx, lhs, rhs, pre, dtype, rank, lim)
            bug = None
        except ProverBug as e:
            res, bug = None, e
        if res is None or res.status != "proved":
            quick = _prove_bounded(rule, ctx, lhs, rhs, pre, dtype, rank, lim, bound=2, max_instances=12,
                                   random_only=True)
            if quick.status == "refuted":
                quick.seconds = time.perf_counter() - t0
                quick.uninterpreted = unint
                return quick
            if bug is not None:
                raise bug
        assert res is not None
        if res.status == "unknown":
            b = _prove_bounded(rule, ctx, lhs, rhs, pre, dtype, rank, lim, bound)
            b.detail = f"symbolic: {res.detail}; " + b.detail if b.status != "refuted" else b.detail
            res = b
    except NotSymbolic as e:
        res = _prove_bounded(rule, ctx, lhs, rhs, pre, dtype, rank, lim, bound)
        res.detail = f"{e.args[0]} has no symbolic-shape encoding" + (f"; {res.detail}" if res.detail else "")
    res.seconds = time.perf_counter() - t0
    res.uninterpreted = unint
    return res


def _check_right_side(rule: Rule, ctx: RuleCtx, lhs: Node, rhs: Node, pre: list[Any], dtype: str, rank: int,
                      lim: Limits) -> ProofResult | None:
    """Type-check the right side before any proof: at one instance of the sizes and attributes
    that satisfies the preconditions and the left side's well-formedness (smallest found), both
    sides are built as graphs through the operator table's type and shape rules. Operand dtypes,
    ranks and dimension attributes do not depend on the sizes, so a right side that fails here is
    ill-formed at every instance: a refutation with the table's reason. (Size-dependent
    conditions are the symbolic and bounded provers' well-formedness checks.)"""
    from semantics.errors import AccvError

    enc = Encoder(ctx.dtype, shapes_only=True)
    try:
        wf = _shape_conditions(enc, lhs)
    except NotSymbolic:
        return None
    s = solver(Limits(lim.timeout_s, lim.rlimit // 4))   # a quick look: a quarter of the rlimit
    s.add(*pre, *wf)
    sizes = [n for t in ctx.tensors.values() for n in t.shape]
    m = _small_model(s, sizes, caps=(4, 8, 16))
    if m is None:
        if check(s) != z3.sat:
            return None   # vacuous or unknown: the provers below report it
        m = s.model()
    ev = evaluator(model=m)
    if any(ev(n) > 64 for n in sizes):
        return None   # too large to replay cheaply; the bounded and symbolic checks still apply
    try:
        emit(ctx.tensors, [lhs], ctx.dtype, ev, rule.name)
    except AccvError:
        return None   # the left side's conditions are not complete here: no conclusion
    try:
        emit(ctx.tensors, [rhs], ctx.dtype, ev, rule.name)
    except AccvError:
        cex = replay_symbolic(rule, ctx, lhs, rhs, dtype, m, enc, [])
        return ProofResult(rule.name, dtype, rank, "refuted", "symbolic", 0.0, detail=cex.summary(),
                           counterexample=cex)
    return None


def _prove_symbolic(rule: Rule, ctx: RuleCtx, lhs: Node, rhs: Node, pre: list[Any], dtype: str, rank: int,
                    lim: Limits) -> ProofResult:
    enc_l = Encoder(ctx.dtype)
    L = enc_l.encode(lhs)
    enc_r = Encoder(ctx.dtype)
    R = enc_r.encode(rhs)
    s = solver(lim)
    s.add(*pre, *enc_l.wf)
    inhabited = check(s)
    if inhabited == z3.unsat:   # a proof over no instance proves nothing: flag the rule instead
        return ProofResult(rule.name, dtype, rank, "unknown", "", 0.0,
                           detail="vacuous: no well-formed left side satisfies the preconditions")
    if L.rank != R.rank or L.dtype != R.dtype:
        return _refute_structure(rule, ctx, lhs, rhs, pre, dtype, rank, enc_l, lim,
                                 f"sides differ in rank/dtype: {L.dtype}[rank {L.rank}] vs {R.dtype}[rank {R.rank}]")
    idx = [z3.Int(f"i{k}") for k in range(L.rank)]
    in_bounds = z3.And(*[z3.And(0 <= i, i < n) for i, n in zip(idx, L.shape, strict=True)]) if idx else z3.BoolVal(True)
    shape_diff = z3.Or(*[a != b for a, b in zip(L.shape, R.shape, strict=True)]) if idx else z3.BoolVal(False)
    wf_r = z3.And(*enc_r.wf) if enc_r.wf else z3.BoolVal(True)
    lv, rv = L.at(idx), R.at(idx)
    elem = z3.Or(lv != rv, Z.nan_sign_differs(lv, rv))   # values, and NaN signs where modelled
    if elements_unsat(elem, lim):
        # the elements agree wherever they are read: what is left is the integer part (shapes,
        # the right side's well-formedness); anything but unsat there goes to the full query
        s.push()
        s.add(z3.Or(z3.Not(wf_r), shape_diff))
        r = check(s)
        s.pop()
        if r == z3.unsat:
            return ProofResult(rule.name, dtype, rank, "proved", "symbolic", 0.0)
    s.add(z3.Or(z3.Not(wf_r), shape_diff, z3.And(in_bounds, elem)))
    r = check(s)
    if r == z3.unsat:
        return ProofResult(rule.name, dtype, rank, "proved", "symbolic", 0.0)
    if r == z3.unknown:
        return ProofResult(rule.name, dtype, rank, "unknown", "", 0.0, detail=f"z3: {why_unknown(s, lim)}")
    m = _small_model(s, [n for t in ctx.tensors.values() for n in t.shape]) or s.model()
    cex = replay_symbolic(rule, ctx, lhs, rhs, dtype, m, enc_l, idx)
    return ProofResult(rule.name, dtype, rank, "refuted", "symbolic", 0.0, detail=cex.summary(), counterexample=cex)


def _small_model(s: z3.Solver, sizes: list[Any], caps: tuple[int, ...] = (2, 4, 8)) -> z3.ModelRef | None:
    """A model with small tensors if there is one (small counterexamples replay fast and read well)."""
    if not sizes:
        return s.model() if check(s) == z3.sat else None
    for cap in caps:
        s.push()
        s.add(*[n <= cap for n in sizes])
        if check(s) == z3.sat:
            m = s.model()
            s.pop()
            return m
        s.pop()
    return None


def _refute_structure(rule: Rule, ctx: RuleCtx, lhs: Node, rhs: Node, pre: list[Any], dtype: str, rank: int,
                      enc: Encoder, lim: Limits, why: str) -> ProofResult:
    """Sides of different rank or dtype: refuted if some well-formed instance exists."""
    s = solver(lim)
    s.add(*pre, *enc.wf)
    if check(s) != z3.sat:
        return ProofResult(rule.name, dtype, rank, "unknown", "", 0.0,
                           detail="vacuous: no well-formed left side satisfies the preconditions")
    cex = replay_symbolic(rule, ctx, lhs, rhs, dtype, s.model(), enc, [], structural=why)
    return ProofResult(rule.name, dtype, rank, "refuted", "symbolic", 0.0, detail=why, counterexample=cex)


def _int_symbols(ctx: RuleCtx, conds: list[Any]) -> list[Any]:
    found: dict[str, Any] = {}

    def walk(e: Any) -> None:
        if z3.is_const(e) and e.sort() == z3.IntSort() and e.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            found[str(e)] = e
        for ch in e.children():
            walk(ch)
    for c in conds:
        walk(c)
    for t in ctx.tensors.values():
        for n in t.shape:
            found[str(n)] = n
    for v in ctx.symbols:
        found[str(v)] = v
    return [found[k] for k in sorted(found)]


def _prove_bounded(rule: Rule, ctx: RuleCtx, lhs: Node, rhs: Node, pre: list[Any], dtype: str, rank: int,
                   lim: Limits, bound: int, max_instances: int = 1000, random_only: bool = False) -> ProofResult:
    """Enumerate instances with sizes <= ``bound``; random-test each, then (unless ``random_only``)
    prove each with the concrete SMT semantics."""
    enc = Encoder(ctx.dtype, shapes_only=True)
    wf = _shape_conditions(enc, lhs)
    syms = _int_symbols(ctx, list(pre) + wf)
    sizes = {str(n) for t in ctx.tensors.values() for n in t.shape}
    s = solver(lim)
    s.add(*pre, *wf)
    for v in syms:
        if str(v) in sizes:
            s.add(v >= 0, v <= bound)
        else:
            s.add(v >= -bound, v <= 2 * bound)
    instances: list[dict[str, int]] = []
    # the instance cap decides (deterministic); the wall deadline is the safety stop
    deadline = time.perf_counter() + lim.timeout_s * 4
    exhausted = False
    while len(instances) < max_instances and time.perf_counter() < deadline:
        r = check(s)
        if r != z3.sat:
            exhausted = r == z3.unsat
            break
        m = s.model()
        assign = {str(v): m.eval(v, model_completion=True).as_long() for v in syms}
        instances.append(assign)
        s.add(z3.Or(*[v != assign[str(v)] for v in syms]) if syms else z3.BoolVal(False))
    if not instances:
        return ProofResult(rule.name, dtype, rank, "unknown", "", 0.0, detail=f"no well-formed instance with sizes <= {bound}")
    # cheap random testing of every instance first (smallest first), then a proof of each
    instances.sort(key=lambda a: (sum(a[str(n)] for t in ctx.tensors.values() for n in t.shape), sorted(a.items())))
    for n, assign in enumerate(instances):
        # the smallest instances get the full random test; larger ones a few tries (the proof of
        # every instance below is complete, the random runs only find counterexamples sooner)
        res = _prove_instance(rule, ctx, lhs, rhs, dtype, rank, assign, syms, lim, prove=False,
                              tries=6 if random_only else (24 if n < 12 else 3))
        if res is not None:
            return res
    if random_only:
        return ProofResult(rule.name, dtype, rank, "unknown", "", 0.0, detail="no random counterexample")
    for assign in instances:
        res = _prove_instance(rule, ctx, lhs, rhs, dtype, rank, assign, syms, lim, prove=True)
        if res is not None:
            return res
    gen = f"bounded {bound}"
    if exhausted:
        return ProofResult(rule.name, dtype, rank, "proved", gen, 0.0, detail=f"{len(instances)} instances")
    return ProofResult(rule.name, dtype, rank, "unknown", "", 0.0,
                       detail=f"first {len(instances)} instances proved; instance cap/time reached ({gen})")


def _random_refutation(gl: Any, gr: Any, assign: dict[str, int], tries: int = 24) -> Counterexample | None:
    """Run both sides on random inputs (edge values included) before asking z3: a difference found
    this way is a counterexample that replays by construction."""
    from semantics.inputs import random_inputs
    from semantics.interp import evaluate

    for seed in range(tries):
        xs = random_inputs(gl, seed, edges=seed % 2 == 1)
        if seed % 3 == 2:
            # aliasing: give every input of the same type the same value (x - x, max(x, x), ...)
            first: dict[tuple[Any, ...], np.ndarray] = {}
            for k, x in enumerate(xs):
                xs[k] = first.setdefault((x.dtype, x.shape), x)
        if outputs_differ(evaluate(gl, xs)[0], evaluate(gr, xs)[0]):
            return replay_graphs(gl, gr, assign, xs, "outputs differ (random inputs)")
    return None


def _shape_conditions(enc: Encoder, node: Node) -> list[Any]:
    """Well-formedness conditions of ``node`` (the encoder in shapes-only mode knows dot/reduce)."""
    enc.encode(node)
    return enc.wf


def _prove_instance(rule: Rule, ctx: RuleCtx, lhs: Node, rhs: Node, dtype: str, rank: int,
                    assign: dict[str, int], syms: list[Any], lim: Limits, prove: bool = True,
                    tries: int = 24) -> ProofResult | None:
    """None when equal for every input at this instance (with ``prove=False``: for the random
    inputs tried), else a refutation (or unknown)."""
    from semantics.errors import AccvError
    from semantics.smt import encode, symbolic_inputs

    ev = evaluator(subst={v: assign[str(v)] for v in syms})
    try:
        gl, gr = emit(ctx.tensors, [lhs, rhs], ctx.dtype, ev, rule.name)
    except AccvError as e:
        return ProofResult(rule.name, dtype, rank, "refuted", "bounded", 0.0,
                           detail=f"right side is not a valid graph at {assign}: {e.reason}")
    if gl.result_type.short() != gr.result_type.short():
        cex = replay_graphs(gl, gr, assign, None, f"types differ: {gl.result_type.short()} vs {gr.result_type.short()}")
        return ProofResult(rule.name, dtype, rank, "refuted", "bounded", 0.0, detail=cex.summary(), counterexample=cex)
    if not prove:
        quick = _random_refutation(gl, gr, assign, tries)
        if quick is not None:
            return ProofResult(rule.name, dtype, rank, "refuted", "bounded", 0.0, detail=quick.summary(),
                               counterexample=quick)
        return None
    ins = symbolic_inputs(gl)
    el = encode(gl, ins).outputs[0]
    er = encode(gr, ins).outputs[0]
    # One query per output element: the disjunction over all elements is equivalent (unsat iff every
    # element is) but much slower for z3 (a 3x3 int8 dot: 80 s as one query, 4.5 s element by element).
    # Each element's query has the rlimit; the wall deadline over the instance is the safety stop.
    deadline = time.perf_counter() + lim.timeout_s
    m = None
    for i in np.ndindex(el.type.shape):
        left = deadline - time.perf_counter()
        if left <= 0:
            return ProofResult(rule.name, dtype, rank, "unknown", "", 0.0,
                               detail=f"z3 at {assign}: wall-clock safety stop ({lim.timeout_s:g}s per instance)")
        diff = z3.simplify(z3.Or(el.terms[i] != er.terms[i], Z.nan_sign_differs(el.terms[i], er.terms[i])))
        if z3.is_false(diff):
            continue   # the same term on both sides
        key = MEMO.canonical(diff)
        if MEMO.known_unsat(key):
            continue   # equal up to names to a query already proved (another element or instance)
        s = solver(lim, left)
        s.add(diff)
        r = check(s)
        if r == z3.unsat:
            MEMO.add_unsat(key)
            continue
        if r == z3.unknown:
            return ProofResult(rule.name, dtype, rank, "unknown", "", 0.0,
                               detail=f"z3 at {assign}, element {i}: {why_unknown(s, lim)}")
        m = s.model()
        break
    if m is None:
        return None
    inputs = []
    for st in ins:
        arr = np.empty(st.type.shape, dtype=st.type.dtype.np)
        for i in np.ndindex(st.type.shape):
            arr[i] = Z.model_value(m, st.terms[i], st.type.dtype)
        inputs.append(arr)
    cex = replay_graphs(gl, gr, assign, inputs, "outputs differ")
    return ProofResult(rule.name, dtype, rank, "refuted", "bounded", 0.0, detail=cex.summary(), counterexample=cex)

