"""Phase 1 of Act: instruction selection by equality saturation (seed 000 §5, appendix C.1-C.3).

- Module 1 (:func:`initialize`): the kernel with byte-flattened inputs and outputs. Each entry
  parameter becomes a leaf ``input i`` of type ``u8[bytes]`` in d0 followed by the unbflat chain
  of its layout (reshape / bitcast / transpose, tiles included); each output is the bflat chain
  of the root value (C.1: bflat is invertible, so the chains are exact).
- Module 2 (:class:`IsaRules`, :func:`apply_isa_rules`): IR-to-ISA rules generated from each
  instruction's g_θ(α) for the α the kernel's types admit, with the precondition ∃β e_θ(α, β)
  (the α-only constraints; the β part is left to phase 2), plus the proven IR-to-IR rules of
  :mod:`compilers.act.rewrite`. A match adds the pii θ_{α,?} to the matched e-class.
- Module 3 (:func:`constants`, :func:`extract`): bottom-up compile-time constant detection, then
  the top-down buffer-guided extraction of pii graphs (Fig. 37) with the node bound Γ(k) = 2^k (§5.4).

Nothing here names a target: everything comes from the :class:`~compilers.isa.Accelerator`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from semantics.dtypes import U8, DType
from semantics.ir import Graph, Literal
from semantics.layout import _physical_shape, _tile_perm, byte_size
from semantics.types import TensorType

from ..isa import HBM, Accelerator, InstrDef
from .egraph import EGraph, ENode, NodeInfo, Snapshot, class_literals, type_key
from .seminaive import Changes
from .terms import Term, is_noop, lit_info, lower_outputs, lower_semantics, mk_op, narrowed

__all__ = ["Kernel", "initialize", "insert", "IsaRule", "IsaRules", "apply_isa_rules", "match", "constants", "PiiGraph", "PiiNode", "Extractor",
           "gamma"]


def gamma(k: int) -> int:
    """Γ(k) = 2^k, the node bound of the k-th extraction (§5.4)."""
    return 2 ** k


# --- Module 1 -------------------------------------------------------------------------------

def _unbflat(x: Term, tt: TensorType) -> Term:
    """The tensor of type ``tt`` whose bflat image is the byte term ``x`` (layout.unbflat as operators)."""
    dt: DType = tt.dtype
    order, phys = _physical_shape(tt)
    lay = tt.effective_layout
    nb = dt.nbytes
    shape_t = phys
    if lay.tiles:
        split, perm = _tile_perm(phys, lay.tiles)
        shape_t = tuple(split[p] for p in perm)
    if nb > 1:
        v = mk_op("reshape", [x], {}, TensorType(U8, shape_t + (nb,)))
        v = mk_op("bitcast-convert", [v], {}, TensorType(dt, shape_t))
    else:
        v = mk_op("reshape", [x], {}, TensorType(U8, shape_t))
        if dt != U8:
            v = mk_op("bitcast-convert", [v], {}, TensorType(dt, shape_t))
    if lay.tiles:
        inv = tuple(int(i) for i in sorted(range(len(perm)), key=lambda i: perm[i]))
        split_shape = tuple(shape_t[i] for i in inv)
        v = mk_op("transpose", [v], {"dimensions": inv}, TensorType(dt, split_shape))
        v = mk_op("reshape", [v], {}, TensorType(dt, phys))
        logical_phys = tuple(tt.shape[d] for d in order)
        if logical_phys != phys:
            v = mk_op("slice", [v], {"slice": tuple((0, n, 1) for n in logical_phys)}, TensorType(dt, logical_phys))
    inv_order = tuple(int(i) for i in sorted(range(len(order)), key=lambda i: order[i]))
    if inv_order != tuple(range(len(order))):
        v = mk_op("transpose", [v], {"dimensions": inv_order}, TensorType(dt, tuple(tt.shape)))
    return _simplify_chain(v)


def _bflat(v: Term, tt: TensorType) -> Term:
    """The bflat byte image of ``v`` (type ``tt``) as operators."""
    dt = tt.dtype
    order, phys = _physical_shape(tt)
    lay = tt.effective_layout
    nb = dt.nbytes
    cur = v
    shape = tuple(tt.shape[d] for d in order)
    if tuple(order) != tuple(range(len(order))):
        cur = mk_op("transpose", [cur], {"dimensions": tuple(order)}, TensorType(dt, shape))
    if lay.tiles:
        if shape != phys:
            raise NotImplementedError("bflat of a padded tile")
        split, perm = _tile_perm(phys, lay.tiles)
        cur = mk_op("reshape", [cur], {}, TensorType(dt, split))
        shape = tuple(split[p] for p in perm)
        cur = mk_op("transpose", [cur], {"dimensions": tuple(perm)}, TensorType(dt, shape))
    if nb > 1:
        cur = mk_op("bitcast-convert", [cur], {}, TensorType(U8, shape + (nb,)))
    elif dt != U8:
        cur = mk_op("bitcast-convert", [cur], {}, TensorType(U8, shape))
    return _simplify_chain(mk_op("reshape", [cur], {}, TensorType(U8, (byte_size(tt),))))


def _simplify_chain(t: Term, memo: dict[int, Term] | None = None) -> Term:
    """Drop no-op steps of a bflat chain (terms.is_noop, the rule terms.lower applies) and
    merge consecutive reshapes (memoized: the term below the chain is a DAG)."""
    memo = {} if memo is None else memo
    k = id(t)
    if k not in memo:
        memo[k] = _simplify_step(t, memo)
    return memo[k]


def _simplify_step(t: Term, memo: dict[int, Term]) -> Term:
    if t.is_param or t.is_lit or not t.children:
        return t
    kids = tuple(_simplify_chain(c, memo) for c in t.children)
    info = t.info
    assert info is not None
    if is_noop(info.name, dict(info.attrs), info.type, kids):
        return kids[0]
    if info.name == "reshape" and not kids[0].is_param and kids[0].info is not None and kids[0].info.name == "reshape":
        return Term(info, kids[0].children)
    return Term(info, kids)


@dataclass
class Kernel:
    """The kernel as phase 1 sees it: output byte terms, input byte types and layouts."""

    graph: Graph
    inputs: list[TensorType]
    outputs: list[TensorType]
    roots: list[Term]
    input_leaves: list[Term]


def initialize(graph: Graph) -> Kernel:
    """Module 1: the kernel with byte-flattened inputs and outputs (Fig. 9a)."""
    from semantics.types import TupleType

    ins = [t for t in graph.param_types]
    leaves: list[Term] = []
    params: list[Term] = []
    for i, t in enumerate(ins):
        assert isinstance(t, TensorType)
        leaf = Term(NodeInfo("input", str(i), (), TensorType(U8, (byte_size(t),)), HBM))
        leaves.append(leaf)
        params.append(_unbflat(leaf, t))
    outs = lower_outputs(graph, None, params)
    rt = graph.result_type
    out_types = list(rt.elements) if isinstance(rt, TupleType) else [rt]
    roots = []
    for o, t in zip(outs, out_types, strict=True):
        if o.is_lit:   # a compile-time constant output: its bytes, folded (§5.3)
            from semantics.layout import bflat

            data = bflat(o.info.literal.to_array(), t)  # type: ignore[union-attr, arg-type]
            roots.append(Term(lit_info(data, TensorType(U8, (data.size,)))))
        else:
            roots.append(_bflat(o, t))  # type: ignore[arg-type]
    return Kernel(graph, ins, out_types, roots, leaves)  # type: ignore[arg-type]


def insert(egraph: EGraph, t: Term, memo: dict[int, tuple[Term, int]]) -> int:
    """Add a term (params not allowed) and return its handle. ``memo`` maps id(term) to the term
    and its handle: the term is kept alive with its entry, because the literal forms inserted
    here are temporary objects whose ids Python reuses once they are freed."""
    k = id(t)
    hit = memo.get(k)
    if hit is not None and hit[0] is t:
        return hit[1]
    assert t.info is not None, "parameters cannot be inserted"
    kids = tuple(insert(egraph, c, memo) for c in t.children)
    fresh = egraph.n_handles
    h = egraph.add(t.info, kids)
    memo[k] = (t, h)
    if h >= fresh:      # an e-node added before got its literal forms then
        for f in literal_forms(t.info):
            egraph.union(h, insert(egraph, f, memo))
    return h


_LIT_FORMS: dict[NodeInfo, list[Term]] = {}
_LIT_FORMS_MAX = 1 << 12     # emptied when full: no growth over a campaign of kernels


def literal_forms(info: NodeInfo) -> list[Term]:
    """The other e-nodes a literal's e-class gets when it is inserted: its int8 narrowing
    (:func:`.terms.narrowed`) and the unbflat chain of its bytes, so an instruction that loads
    from HBM can load the constant (its bytes are then placed in the constant section, §5.3).
    A function of the literal: made once per process (a rule's right side inserts its
    constants in every compile)."""
    if info.kind != "lit" or info.literal is None or not info.type.shape:
        return []
    hit = _LIT_FORMS.get(info)
    if hit is None:
        if len(_LIT_FORMS) >= _LIT_FORMS_MAX:
            _LIT_FORMS.clear()
        hit = _LIT_FORMS[info] = _literal_forms(info)
    return hit


def _literal_forms(info: NodeInfo) -> list[Term]:
    out = []
    n = narrowed(info)
    if n is not None:
        out.append(n)
    from semantics.layout import bflat

    data = bflat(info.literal.to_array(), info.type)
    leaf = Term(lit_info(data, TensorType(U8, (data.size,))))
    chain = _unbflat(leaf, info.type)
    if chain is not leaf:
        out.append(chain)
    return out


# --- Module 2: IR-to-ISA rules ---------------------------------------------------------------

@dataclass
class IsaRule:
    """g_θ(α) → θ_{α,?}: the lowered semantics as a pattern over the instruction's parameters."""

    instr: InstrDef
    alpha: tuple[tuple[str, int], ...]
    pattern: Term
    in_types: tuple[TensorType, ...]
    out_type: TensorType

    @property
    def name(self) -> str:
        return f"{self.instr.name}{dict(self.alpha)}"


_PATTERNS: dict[tuple, dict] = {}
#: a campaign over kernels of many shapes generates g_θ(α) for every new α; past this many
#: cached per target, a compile starts by emptying the pattern caches (they refill on demand)
MAX_PATTERNS = 20_000
_LAYOUT_OPS = ("reshape", "bitcast-convert", "transpose", "copy")


class IsaRules:
    """The IR-to-ISA rules of one accelerator, generated on demand for the α values that the
    e-graph's types can use (an α's input and output slice types must be types of e-classes)."""

    MAX_ALPHA = 4096

    def __init__(self, acc: Accelerator, normalize=None, cache_key: object = None) -> None:  # noqa: ANN001
        """``normalize``: Term -> Term, the proven IR-to-IR normalization of patterns; rules
        generated with the same ``cache_key`` (the same normalizer) are shared within the process,
        like a generated backend."""
        self.acc = acc
        self.normalize = normalize
        #: what identifies the patterns this object makes (its shared cache, or itself)
        self.key: object = (acc.name, id(acc), cache_key) if cache_key is not None else ("own", id(self))
        self._cache: dict[tuple[str, tuple[tuple[str, int], ...]], IsaRule | None] = (
            {} if cache_key is None else _PATTERNS.setdefault((acc.name, id(acc), cache_key), {}))
        if len(self._cache) > MAX_PATTERNS:
            self._cache.clear()
            _RULE_KEYS.clear()
            _DEPTHS.clear()
            _PARTS.clear()

    def _candidates(self, ins: InstrDef, dims: set[int]) -> Iterator[dict[str, int]]:
        doms = []
        for a in ins.alpha:
            dom = ins.domain(a)
            pref = ins.search_values(a)
            if pref is not None:
                doms.append(tuple(pref))
            elif len(dom) <= 8:
                doms.append(dom)
            else:
                doms.append(tuple(v for v in dom if v in dims))
        count = math.prod(len(d) for d in doms)
        if count > self.MAX_ALPHA:
            doms = [d[:8] for d in doms]
        alpha_only = [c for c in ins.constraints if c.vars() <= set(ins.alpha)]
        for combo in itertools.product(*doms):
            env = dict(zip(ins.alpha, combo, strict=True))
            if all(c.eval(env) for c in alpha_only):
                yield env

    def rule(self, ins: InstrDef, alpha: dict[str, int]) -> IsaRule | None:
        key = (ins.name, tuple(sorted(alpha.items())))
        if key in self._cache:
            return self._cache[key]
        r: IsaRule | None = None
        try:
            env = dict.fromkeys(ins.beta, 0) | alpha
            in_types = tuple(self.acc.buffers[s.buffer].slice_type(s.bounds(env)[1]) for s in ins.inputs)
            out_type = self.acc.buffers[ins.output.buffer].slice_type(ins.output.bounds(env)[1])
            pat = lower_semantics(ins, alpha)
            if self.normalize is not None:
                pat = self.normalize(pat)
            r = IsaRule(ins, tuple(alpha.items()), pat, in_types, out_type)
        except Exception:  # noqa: BLE001 - an α the semantics rejects is not a candidate
            r = None
        self._cache[key] = r
        return r

    def rules_for(self, types: set[tuple[str, tuple[int, ...]]]) -> list[IsaRule]:
        """The rules whose output type is one of ``types`` (memoized per type set)."""
        key = ("_for", frozenset(types))
        hit = self._cache.get(key)  # type: ignore[call-overload]
        if hit is None:
            hit = self._cache[key] = self._rules_for(types)  # type: ignore[index]
        return list(hit)  # type: ignore[arg-type]

    def _rules_for(self, types: set[tuple[str, tuple[int, ...]]]) -> list[IsaRule]:
        dims: set[int] = set()
        for _, shape in types:
            for d in shape:
                dims.add(d)
        dims |= {a * b for a in list(dims) for b in (2, 4)}
        out = []
        for ins in self.acc.instructions.values():
            for alpha in self._candidates(ins, dims):
                env = dict.fromkeys(ins.beta, 0) | alpha
                try:
                    ot = self.acc.buffers[ins.output.buffer].slice_type(ins.output.bounds(env)[1])
                except Exception:  # noqa: BLE001
                    continue
                if type_key(ot) not in types:
                    continue
                r = self.rule(ins, alpha)
                if r is not None:
                    out.append(r)
        return out


def match(snap: Snapshot, ids: dict[NodeInfo, int], pat: Term, cls: int,
          bind: dict[int, int], _meta: dict[int, tuple] | None = None) -> Iterator[dict[int, int]]:
    """All ways the pattern matches e-class ``cls`` (bindings: parameter index -> class).
    ``_meta`` memoizes each pattern node's (type key, e-node info id) for one snapshot."""
    meta = _meta if _meta is not None else {}
    m = meta.get(id(pat))
    if m is None or m[0] is not pat:
        tk = type_key(pat.type) if pat.is_param else pat.info.tkey  # type: ignore[union-attr]
        m = meta[id(pat)] = (pat, tk, None if pat.is_param else ids.get(pat.info))  # type: ignore[arg-type]
    if snap.class_type[cls] != m[1]:
        return
    if pat.is_param:
        prev = bind.get(pat.index)
        if prev is None:
            yield {**bind, pat.index: cls}
        elif prev == cls:
            yield bind
        return
    iid = m[2]
    if iid is None:
        return
    n = len(pat.children)
    for en in snap.classes[cls]:
        if en.info != iid or len(en.children) != n:
            continue
        yield from _match_children(snap, ids, pat.children, en.children, 0, bind, meta)


def _match_children(snap: Snapshot, ids: dict[NodeInfo, int], pats: Sequence[Term], kids: Sequence[int], i: int,
                    bind: dict[int, int], meta: dict[int, tuple]) -> Iterator[dict[int, int]]:
    if i == len(pats):
        yield bind
        return
    for b in match(snap, ids, pats[i], kids[i], bind, meta):
        yield from _match_children(snap, ids, pats, kids, i + 1, b, meta)


_RULE_KEYS: dict[int, tuple] = {}


def _rule_keys(r: IsaRule) -> tuple:
    """(rule, output type key, input type keys, {unused positions: pii NodeInfo}, the pattern's
    e-node infos) of a rule, memoized per process (hashing a NodeInfo costs more than matching a small pattern)."""
    hit = _RULE_KEYS.get(id(r))
    if hit is None or hit[0] is not r:
        hit = _RULE_KEYS[id(r)] = (r, type_key(r.out_type), tuple(type_key(t) for t in r.in_types), {},
                                   tuple(_pattern_infos(r.pattern, {})))
    return hit


def _pattern_infos(t: Term, out: dict[NodeInfo, None]) -> dict[NodeInfo, None]:
    """The e-node infos of a pattern (each must be in the e-graph for it to match), in order."""
    if t.info is not None and t.info not in out:
        out[t.info] = None
        for c in t.children:
            _pattern_infos(c, out)
    return out


_DEPTHS: dict[int, tuple[Term, int]] = {}


def _depth_below(x: Term, d: int) -> int:
    return max([d, *(_depth_below(c, d + 1) for c in x.children if not c.is_param)])


def _pattern_depth(t: Term) -> int:
    """How deep below its root a pattern steps through e-nodes (a parameter reads its class's
    type and identity only), memoized per pattern."""
    hit = _DEPTHS.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]

    out = 0 if t.is_param else _depth_below(t, 0)
    _DEPTHS[id(t)] = (t, out)
    return out


def apply_isa_rules(egraph: EGraph, snap: Snapshot, rules: Sequence[IsaRule], owner: object = None) -> int:
    """Add θ_{α,?} to every e-class that g_θ(α) matches; returns the number of new piis.

    With ``owner`` (what keeps the rules alive, e.g. their :class:`IsaRules`), rounds are
    semi-naive (:class:`.seminaive.Changes`): a rule run in the e-graph's previous round is
    tried only at roots where its pattern can reach a new e-node; at the others every match
    adds a pii e-node that is already there."""
    rep = egraph.rep_handles(snap)
    changed = Changes(egraph, snap, class_literals(egraph, snap), egraph.isa_round if owner is not None else None,
                      owner)
    by_type: dict[tuple[str, tuple[int, ...]], list[int]] = {}
    for c, t in enumerate(snap.class_type):
        by_type.setdefault(t, []).append(c)
    infos = egraph.infos
    existing = {(en.info, en.children) for cl in snap.classes for en in cl if infos[en.info].kind == "pii"}
    new: list[tuple[int, int]] = []      # (handle, class) of the piis added
    ids = egraph.info_ids
    pat_ids = egraph.pattern_ids
    class_type, by_info = snap.class_type, snap.by_info
    meta: dict[int, tuple] = {}     # pattern node -> (node, type key, info id): the piis added below are no pattern's
    iid_of: dict[tuple[int, tuple[int, ...]], int] = {}     # (rule, unused positions) -> this e-graph's info id
    for r in rules:
        changed.ran.add(id(r))      # (a rule whose pattern cannot match anywhere has run too)
        _, out_key, in_keys, pii_infos, pat_infos = _rule_keys(r)
        # a pattern holding an operator (with its attributes and type) that no e-node has cannot
        # match anywhere: most patterns, in most rounds. The e-graph's info ids of the pattern's
        # infos are looked up once each (an id, once given, stays; equal infos compare slowly)
        known = pat_ids.get(id(r))
        if known is None or known[0] is not r:
            known = pat_ids[id(r)] = (r, [], [-1])
        found = known[1]
        if len(found) < len(pat_infos):
            missed = known[2]
            if missed[0] == len(infos):
                continue    # no info was added since one of this pattern's was looked up in vain
            while len(found) < len(pat_infos):
                i = ids.get(pat_infos[len(found)])
                if i is None:
                    break
                found.append(i)
            if len(found) < len(pat_infos):
                missed[0] = len(infos)
                continue
        if any(i not in by_info for i in found):
            continue
        if r.pattern.is_param:
            roots = by_type.get(out_key, [])
        else:
            # only the classes holding an e-node of the pattern's root operator (its first info)
            roots = list(dict.fromkeys(c for c, _ in by_info[found[0]]))
        for cls in changed.near(id(r), _pattern_depth(r.pattern), roots):
            if class_type[cls] != out_key:
                continue
            for b in match(snap, ids, r.pattern, cls, {}, meta):
                kids = []
                ok = True
                for i, tk in enumerate(in_keys):
                    c = b.get(i)
                    if c is None:
                        kids.append(-1)
                        continue
                    if class_type[c] != tk:
                        ok = False
                        break
                    kids.append(c)
                if not ok:
                    continue
                unused = tuple(i for i, c in enumerate(kids) if c < 0)
                info_id = iid_of.get((id(r), unused))
                if info_id is None:
                    info = pii_infos.get(unused)
                    if info is None:
                        info = pii_infos[unused] = NodeInfo(
                            "pii", r.instr.name, r.alpha + ((("_unused", unused),) if unused else ()),
                            r.out_type, r.instr.output.buffer, literal=None)
                    info_id = iid_of[(id(r), unused)] = egraph.info_id(info)
                real = tuple(c for c in kids if c >= 0)
                if (info_id, real) in existing:
                    continue
                existing.add((info_id, real))
                h = egraph.add(infos[info_id], tuple(rep[c] for c in real))
                egraph.union(h, rep[cls])
                new.append((h, cls))
    egraph.isa_round = changed if owner is not None else None
    if new:
        # every pii e-node is new, its (info, child classes) in no class (``existing``), and
        # united with one class: no class merges, the next snapshot is this one extended
        # (if ``snap`` was the e-graph as it was; else the next snapshot reads egglog's)
        egraph.extend(snap, new)
    return len(new)


# --- Module 3: constants and extraction ------------------------------------------------------

_PARTS: dict[int, tuple[NodeInfo, Accelerator, tuple[dict[str, int], set[int], list[str]]]] = {}


def pii_parts(acc: Accelerator, info: NodeInfo) -> tuple[dict[str, int], set[int], list[str]]:
    """A pii's α, the operand positions its g_θ ignores (no e-graph child), and the buffers of
    the operands it has children for, in order. Memoized per info (shared: read, never change)."""
    hit = _PARTS.get(id(info))
    if hit is not None and hit[0] is info and hit[1] is acc:
        return hit[2]
    alpha = dict(info.attrs)
    unused = set(alpha.pop("_unused", ()))
    ins = acc.instructions[info.name]
    out = (alpha, unused, [s.buffer for i, s in enumerate(ins.inputs) if i not in unused])
    _PARTS[id(info)] = (info, acc, out)
    return out


def constants(egraph: EGraph, snap: Snapshot) -> list[bool]:
    """Bottom-up: an e-class is constant when one of its e-nodes has only constant operands;
    literals are constant, flattened inputs are not (§5.3)."""
    return constant_witnesses(egraph, snap)[0]


def constant_witnesses(egraph: EGraph, snap: Snapshot) -> tuple[list[bool], list[ENode | None]]:
    """:func:`constants`, and per constant class the e-node that made it constant (its
    literal's, or an operator's whose operands became constant before it: following witnesses
    down never loops), from which :func:`.fold.value` computes its value. The least fixpoint,
    by a worklist: each e-node counts its operands not yet known constant."""
    n = len(snap.classes)
    const = [False] * n
    witness: list[ENode | None] = [None] * n
    waiting: list[list[int]] = [[] for _ in range(n)]   # class -> the e-nodes (by index) it holds up
    owner: list[tuple[int, ENode]] = []
    missing: list[int] = []
    todo: list[int] = []
    infos = egraph.infos
    for c, nodes in enumerate(snap.classes):
        for en in nodes:
            kind = infos[en.info].kind
            if kind == "input" or kind == "pii":
                continue
            kids = set(en.children)
            if not kids:
                if not const[c]:
                    const[c] = True
                    witness[c] = en
                    todo.append(c)
                elif kind == "lit":
                    witness[c] = en     # a literal is preferred: nothing to evaluate
                continue
            j = len(owner)
            owner.append((c, en))
            missing.append(len(kids))
            for k in kids:
                waiting[k].append(j)
    while todo:
        k = todo.pop()
        for j in waiting[k]:
            missing[j] -= 1
            if missing[j] == 0:
                c, en = owner[j]
                if not const[c]:
                    const[c] = True
                    witness[c] = en
                    todo.append(c)
    return const, witness


@dataclass
class PiiNode:
    """One node of a pii graph: an instruction θ_{α,?} (``instr``), a flattened input (from byte
    ``offset`` on: slice^H of an input), a constant, or concat^H of HBM pieces (``operands`` at
    byte ``offsets`` of the node's slice), with the value ids of its operands (None for an
    operand g_θ ignores). Identity nodes emit no instruction (§5.2.3)."""

    id: int
    kind: str                      # "pii" | "input" | "const" | "concat"
    instr: str = ""
    alpha: tuple[tuple[str, int], ...] = ()
    buffer: str = HBM
    type: TensorType | None = None
    operands: tuple[int | None, ...] = ()
    input_index: int = -1
    literal: object = None
    eclass: int = -1
    offset: int = 0
    offsets: tuple[int, ...] = ()


@dataclass
class PiiGraph:
    nodes: list[PiiNode] = field(default_factory=list)
    roots: list[int] = field(default_factory=list)

    def count(self) -> int:
        return sum(1 for n in self.nodes if n.kind == "pii")

    def signature(self) -> tuple:
        return tuple((n.kind, n.instr, n.alpha, n.operands, n.input_index, n.offset, n.offsets) for n in self.nodes)

    def rematerialized(self, acc: Accelerator) -> PiiGraph | None:
        """The same computation with every shared fused pii (an instruction with ``followed_by``,
        e.g. a weight preload) duplicated per consumer: the fallback when no order of the shared
        graph fits memory (the single value its buffer holds is overwritten between two uses).
        None when nothing is shared."""
        from dataclasses import replace

        users: dict[int, list[int]] = {}
        for n in self.nodes:
            for o in n.operands:
                if o is not None:
                    users.setdefault(o, []).append(n.id)
        shared = [n for n in self.nodes if n.kind == "pii" and acc.instructions[n.instr].followed_by
                  and len(users.get(n.id, ())) > 1 and n.id not in self.roots]
        if not shared:
            return None
        nodes = list(self.nodes)
        for n in shared:
            for u in users[n.id][1:]:
                clone = replace(n, id=len(nodes))
                nodes.append(clone)
                un = nodes[u]
                nodes[u] = replace(un, operands=tuple(clone.id if o == n.id else o for o in un.operands))
        return PiiGraph(nodes, list(self.roots))


def _input_leaf(option: tuple[float, int, object]) -> bool:
    """An extraction option that is an input's own bytes (no instruction)."""
    return isinstance(option[2], tuple) and option[2][0] == "input"


@dataclass
class Choice:
    cost: float
    size: int
    enode: object   # ENode or ("input", i) or ("const",)


class Extractor:
    """Top-down buffer-guided extraction (Fig. 37) with per-(class, buffer) best choices computed
    bottom-up by cost (a pii's cost from the description plus its operands'), and enumeration of
    alternatives: the best graph first, then graphs that swap one choice for the next best."""

    def __init__(self, acc: Accelerator, egraph: EGraph, snap: Snapshot, cost_fn) -> None:  # noqa: ANN001
        self.acc = acc
        self.eg = egraph
        self.snap = snap
        self.const, self.witness = constant_witnesses(egraph, snap)
        self.values: dict[int, Literal | None] = {}
        self.cost_fn = cost_fn
        self.options: dict[tuple[int, str], list[tuple[float, int, object]]] = {}
        self._built: dict[tuple[int, ...], PiiGraph | None] = {}
        self._solve()

    def _leaf(self, c: int, buf: str) -> tuple[float, int, object] | None:
        if buf != HBM:
            return None
        for en in self.snap.classes[c]:
            info = self.eg.infos[en.info]
            if info.kind == "input":
                return (0.0, 0, ("input", int(info.name)))
        if self.const[c]:
            w = self.witness[c]
            info = self.eg.infos[w.info]  # type: ignore[union-attr]
            # a class the rewrites made constant holds no literal: its value is computed
            # when a pii graph places it (:meth:`constant`), not for every class here
            return (0.0, 0, ("const", info.literal if info.kind == "lit" else None))
        return None

    def constant(self, c: int) -> Literal | None:
        """The value of constant class ``c`` (:func:`.fold.value`), or None where this process
        cannot evaluate it."""
        from .fold import value

        return value(self.eg, self.snap, self.witness, c, self.values)

    def _solve(self) -> None:
        INF = math.inf
        best: dict[tuple[int, str], tuple[float, int]] = {}
        piis: list[tuple[int, object, NodeInfo, list[tuple[int, str]]]] = []
        for c, nodes in enumerate(self.snap.classes):
            for en in nodes:
                info = self.eg.infos[en.info]
                if info.kind != "pii":
                    continue
                _, _, bufs = pii_parts(self.acc, info)
                piis.append((c, en, info, list(zip(en.children, bufs, strict=True))))
        for c in range(len(self.snap.classes)):
            for buf in self.acc.buffers:
                lf = self._leaf(c, buf)
                if lf is not None:
                    best[(c, buf)] = (0.0, 0)
                    self.options.setdefault((c, buf), []).append(lf)
        # least fixpoint of best(c, buf) = min over piis of cost + sum of the operands' best, by a
        # worklist (a pii is re-evaluated when one of its operands improves); the fixpoint does not
        # depend on the order, costs being positive
        costs = [self.cost_fn(info) for _c, _en, info, _k in piis]
        users: dict[tuple[int, str], list[int]] = {}
        for i, (_c, _en, _info, kids) in enumerate(piis):
            for k in set(kids):
                users.setdefault(k, []).append(i)
        work = list(range(len(piis)))
        queued = [True] * len(piis)
        while work:
            i = work.pop()
            queued[i] = False
            c, _en, info, kids = piis[i]
            tot, size = costs[i], 1
            for k in kids:
                b = best.get(k)
                if b is None:
                    tot = INF
                    break
                tot += b[0]
                size += b[1]
            if tot == INF:
                continue
            key = (c, info.buffer)
            cur = best.get(key)
            if cur is None or (tot, size) < cur:
                best[key] = (tot, size)
                for j in users.get(key, ()):
                    if not queued[j]:
                        queued[j] = True
                        work.append(j)
        for i, (c, en, info, kids) in enumerate(piis):
            if all(k in best for k in kids):
                tot = costs[i] + sum(best[k][0] for k in kids)
                size = 1 + sum(best[k][1] for k in kids)
                self.options.setdefault((c, info.buffer), []).append((tot, size, en))
        for k in self.options:
            self.options[k].sort(key=lambda o: (o[0], o[1]))
        self.best = best

    def has(self, c: int, buf: str) -> bool:
        return (c, buf) in self.best

    def build(self, roots: Sequence[int], override: dict[tuple[int, str], int] | None = None,
              max_nodes: int | None = None) -> PiiGraph | None:
        """The pii graph choosing the best option per (class, buffer) (or ``override``'s index);
        None when it has a cycle or more than ``max_nodes`` piis. The graph of the best options
        is built once per roots (enumeration asks again with a larger bound each round)."""
        if not override:
            key = tuple(roots)
            if key not in self._built:
                self._built[key] = self._build(roots, {})
            g = self._built[key]
            if g is not None and max_nodes is not None and g.count() > max_nodes:
                return None
            return g
        return self._build(roots, override, max_nodes)

    def _build(self, roots: Sequence[int], override: dict[tuple[int, str], int],
               max_nodes: int | None = None) -> PiiGraph | None:
        g = PiiGraph()
        memo: dict[tuple[int, str], int] = {}
        active: set[tuple[int, str]] = set()

        def visit(c: int, buf: str, root: int | None = None) -> int | None:
            # a root is written by the program at its output's place: its own node (two outputs
            # of one value are two), and never an input leaf, whose bytes lie at the input's
            # place (a 0-instruction program would leave the output unwritten)
            key = (c, buf) if root is None else (c, buf, root)
            if key in memo:
                return memo[key]
            if key in active or (c, buf) not in self.options:
                return None
            opts = self.options[(c, buf)]
            if root is not None:
                opts = [o for o in opts if not _input_leaf(o)]
                if not opts:
                    return None
            choice = opts[min(override.get((c, buf), 0), len(opts) - 1)]
            active.add(key)
            node = choice[2]
            if isinstance(node, tuple) and node[0] == "input":
                n = PiiNode(len(g.nodes), "input", input_index=node[1], eclass=c,
                            type=self.eg.infos[self.snap.classes[c][0].info].type)
            elif isinstance(node, tuple) and node[0] == "const":
                lit = node[1] if node[1] is not None else self.constant(c)
                if lit is None:
                    active.discard(key)
                    return None
                n = PiiNode(len(g.nodes), "const", literal=lit, eclass=c,
                            type=self.eg.infos[self.snap.classes[c][0].info].type)
            else:
                info = self.eg.infos[node.info]  # type: ignore[union-attr]
                ins = self.acc.instructions[info.name]
                alpha, unused, _ = pii_parts(self.acc, info)
                kids = list(node.children)  # type: ignore[union-attr]
                ops: list[int | None] = []
                for i, s in enumerate(ins.inputs):
                    if i in unused:
                        ops.append(None)
                        continue
                    v = visit(kids.pop(0), s.buffer)
                    if v is None:
                        active.discard(key)
                        return None
                    ops.append(v)
                n = PiiNode(len(g.nodes), "pii", info.name, tuple(alpha.items()), info.buffer, info.type,
                            tuple(ops), eclass=c)
            active.discard(key)
            g.nodes.append(n)
            memo[key] = n.id
            return n.id

        try:
            for i, r in enumerate(roots):
                v = visit(r, HBM, root=i)
                if v is None:
                    return None
                g.roots.append(v)
        finally:
            visit = None    # type: ignore[assignment]  # a recursive closure is a reference cycle: break it
        if max_nodes is not None and g.count() > max_nodes:
            return None
        return g

    def enumerate(self, roots: Sequence[int], max_nodes: int, limit: int = 16) -> Iterator[PiiGraph]:
        """The best pii graph, then one-swap variants (each (class, buffer) of the best graph
        takes its next options), without repeats; at most ``limit`` graphs."""
        seen: set[tuple] = set()
        first = self.build(roots, max_nodes=max_nodes)
        if first is None:
            return
        seen.add(first.signature())
        yield first
        n = 1
        keys = [k for k, v in self.options.items() if len(v) > 1]
        keys.sort(key=lambda k: (-self.options[k][0][0], k))
        for key in keys:
            for alt in range(1, len(self.options[key])):
                g = self.build(roots, {key: alt}, max_nodes=max_nodes)
                if g is None or g.signature() in seen:
                    continue
                seen.add(g.signature())
                yield g
                n += 1
                if n >= limit:
                    return

    def why_not(self, roots: Sequence[int]) -> str:
        """A one-line reason the root cannot be extracted: the topmost e-class with no way to be
        produced in the buffer it is needed in (the operator no instruction computes where no
        way produces it in any buffer)."""
        seen: set[tuple[int, str]] = set()
        frontier = [(r, HBM) for r in roots]
        # a root must be written: an input's own bytes (its leaf) do not count there
        written = {r for r in roots if not all(map(_input_leaf, self.options.get((r, HBM), ())))}
        for i, r in enumerate(roots):
            leaf = next((o[2] for o in self.options.get((r, HBM), ()) if _input_leaf(o)), None)
            if leaf is not None and r not in written:
                t = self.eg.infos[self.snap.classes[r][0].info].type
                return (f"output {i} is the bytes of input {leaf[1]} ({t.dtype.name}{list(t.shape)}) and no "
                        f"instruction sequence writes them to the output")
        layout_reason = ""
        stuck: dict[int, str] = {}     # class -> its reason, at the first buffer it was needed in
        while frontier:
            c, buf = frontier.pop(0)
            if (c, buf) in seen:
                continue
            seen.add((c, buf))
            if (c, buf) in self.best:
                continue
            ops = [self.eg.infos[en.info] for en in self.snap.classes[c]]
            irs = [o for o in ops if o.kind == "op"]
            piis = [o for o in ops if o.kind == "pii"]
            if piis and irs and not any((c, o.buffer) in self.best for o in piis):
                # instructions produce it, but none can (in any buffer): the reason lies below
                # them (an operand nothing computes), or it is this value's operator where the
                # only producers move it from a buffer it cannot be in (Gemmini's store from the
                # array of a product nothing computes): the deepest such value is reported
                o = min(irs, key=lambda o: (o.name in _LAYOUT_OPS, o.name))
                if o.name not in _LAYOUT_OPS:
                    t = o.type
                    stuck.setdefault(c, f"no instruction computes {o.name} on {t.dtype.name}{list(t.shape)} (into {buf})")
                for en in self.snap.classes[c]:
                    info = self.eg.infos[en.info]
                    if info.kind == "pii":
                        frontier.extend(zip(en.children, pii_parts(self.acc, info)[2], strict=True))
                    elif info.kind == "op" and info.name in _LAYOUT_OPS:
                        frontier.extend((k, buf) for k in en.children)
                continue
            if not piis:
                if irs:
                    o = min(irs, key=lambda o: (o.name in _LAYOUT_OPS, o.name))
                    t = o.type
                    reason = f"no instruction computes {o.name} on {t.dtype.name}{list(t.shape)} (into {buf})"
                    if o.name not in _LAYOUT_OPS:
                        return reason
                    # only data movement here (a byte image, a reshape): the operator that no
                    # instruction computes is further down; report it if there is one
                    layout_reason = layout_reason or reason
                    for en in self.snap.classes[c]:
                        if self.eg.infos[en.info].kind == "op":
                            frontier.extend((k, buf) for k in en.children)
                    continue
                if layout_reason:
                    continue
                return f"no instruction produces a {ops[0].type.dtype.name}{list(ops[0].type.shape)} value in {buf}"
            for en in self.snap.classes[c]:
                info = self.eg.infos[en.info]
                if info.kind != "pii" or info.buffer != buf:
                    continue
                _, _, bufs = pii_parts(self.acc, info)
                frontier.extend(zip(en.children, bufs, strict=True))
            if not any(self.eg.infos[en.info].kind == "pii" and self.eg.infos[en.info].buffer == buf
                       for en in self.snap.classes[c]):
                t = ops[0].type
                have = sorted({o.buffer for o in piis})
                return (f"a {t.dtype.name}{list(t.shape)} value is needed in {buf} but instructions produce it only in "
                        f"{', '.join(have)}")
        return (list(stuck.values())[-1] if stuck else layout_reason) or "no complete pii graph (every candidate has a cycle)"
