"""The ISA description API: an accelerator's data model and instruction set (seed 000 §3, Def. 1-6).

An :class:`Accelerator` has the HBM ``d0`` (byte-addressable ``u8[size]``) and tensor buffers
(:class:`DataModel`, Def. 1: access dimensions S0, element type E[S1]). Each :class:`InstrDef`
(Def. 4) has computational attributes α and addressing attributes β, input and output data slices
(Def. 2) whose starts and lengths are expressions of the attributes (h_θ), validity constraints
e_θ(α, β), and semantics g_θ(α) written as HLO text with backtick placeholders (`` `n * 128` ``)
evaluated on α — the same HLO dialect as :mod:`semantics.hlo_parser`, so g_θ means exactly what
the reference interpreter says. Each instruction also declares a numeric contract (exact, or an
error bound for an approximate unit) and a cost (cycles, bytes moved) for the default cost model.

:meth:`Accelerator.validate` checks a description when it is loaded: semantics type-check for
sampled α, slice shapes match the buffers and the semantics' parameter and result types,
expressions use only declared attributes. Errors name the instruction and the field.

Everything else — the simulator, the encoders, the compiler — reads only this description.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from semantics.dtypes import DTYPES, U8, DType
from semantics.errors import AccvError, GraphError, HloSyntaxError
from semantics.ir import Graph
from semantics.types import TensorType

from .expr import Expr, ExprError, parse_expr

__all__ = ["IsaError", "DataModel", "SliceSpec", "NumericContract", "Cost", "InstrDef", "Accelerator", "HBM"]

HBM = "d0"


class IsaError(AccvError):
    """A malformed ISA description (names the target, the instruction and the field)."""


@dataclass(frozen=True)
class DataModel:
    """A tensor buffer d = (S0, E[S1]) (Def. 1): ``access`` = S0, ``elem`` = S1."""

    name: str
    access: tuple[int, ...]
    elem: tuple[int, ...]
    dtype: DType
    doc: str = ""

    @property
    def shape(self) -> tuple[int, ...]:
        return self.access + self.elem

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.nbytes

    def slice_type(self, lengths: Sequence[int]) -> TensorType:
        """Type of the data slice d[Is:Is+lengths] (Def. 2): E[lengths, S1]."""
        return TensorType(self.dtype, tuple(lengths) + self.elem)

    def __str__(self) -> str:
        s1 = f"{self.dtype.name}[{','.join(map(str, self.elem))}]"
        return f"{self.name} = ({list(self.access)}, {s1})"


@dataclass(frozen=True)
class SliceSpec:
    """A data slice of a buffer: per access dimension a start and a length expression (h_θ)."""

    buffer: str
    start: tuple[Expr, ...]
    length: tuple[Expr, ...]

    def bounds(self, env: Mapping[str, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return tuple(e.eval(env) for e in self.start), tuple(e.eval(env) for e in self.length)

    def vars(self) -> frozenset[str]:
        return frozenset().union(*(e.vars() for e in self.start + self.length))

    def __str__(self) -> str:
        return f"{self.buffer}[" + ", ".join(f"{s}:+{n}" for s, n in zip(self.start, self.length, strict=True)) + "]"


@dataclass(frozen=True)
class NumericContract:
    """How a backend's result for this instruction may differ from g_θ: ``exact`` (bit-exact), or
    ``ulp``/``abs`` with a bound, for an approximate unit. Every comparison downstream uses it."""

    kind: str = "exact"
    bound: float = 0.0
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("exact", "ulp", "abs"):
            raise ValueError(f"numeric contract kind must be exact, ulp or abs, not {self.kind}")

    def __str__(self) -> str:
        return "exact" if self.kind == "exact" else f"{self.kind} <= {self.bound:g}"


@dataclass(frozen=True)
class Cost:
    """Default cost model entry: cycles and bytes moved between HBM and the buffers, as
    expressions of α."""

    cycles: Expr = field(default_factory=lambda: parse_expr("1"))
    hbm_bytes: Expr = field(default_factory=lambda: parse_expr("0"))


_PLACEHOLDER = re.compile(r"`([^`]*)`")


@dataclass(frozen=True)
class InstrDef:
    """An abstract instruction θ (Def. 4)."""

    name: str
    alpha: tuple[str, ...]
    beta: tuple[str, ...]
    inputs: tuple[SliceSpec, ...]
    output: SliceSpec
    constraints: tuple[Expr, ...]
    semantics: str
    alpha_domain: tuple[tuple[str, tuple[int, ...]], ...]
    contract: NumericContract = NumericContract()
    cost: Cost = Cost()
    doc: str = ""
    target: str = ""
    search: tuple[tuple[str, tuple[int, ...]], ...] = ()
    #: relations between α attributes the compiler's search keeps to (e.g. ``a_cols == b_rows``):
    #: the description's claim that every α outside them computes what one inside computes from
    #: fewer operand bytes at no lower cost, so no program is lost; a program outside them is still
    #: valid (the simulator and encoders check ``constraints`` only)
    search_where: tuple[Expr, ...] = ()
    #: adjacency (instruction fusion): the next instruction must be one of these (e.g. a preload
    #: becomes one command pair with its compute) / the previous instruction must be one of these
    followed_by: tuple[str, ...] = ()
    preceded_by: tuple[str, ...] = ()
    #: register shapes fixed per program (e.g. an AMX tile's palette rows / colsb): for a β
    #: attribute naming a register, the α expressions of the shape this instruction uses it
    #: with; two instructions using one register with different shapes conflict (phase 2 keeps
    #: them on different registers)
    config: tuple[tuple[str, tuple[Expr, ...]], ...] = ()
    #: named classes of an α attribute's values (coverage goals, :meth:`alpha_class`): per
    #: attribute, (name, predicate over α) in order; a value in none of them is class ``other``
    classes: tuple[tuple[str, tuple[tuple[str, Expr], ...]], ...] = ()

    def alpha_class(self, a: str, alpha: Mapping[str, int]) -> str:
        """The class of α attribute ``a``'s value in ``alpha`` (what a campaign's coverage goal
        counts): the first declared class whose predicate holds (else ``other``); without
        declared classes, a domain of at most 4 values has one class per value, a larger one
        three: its least value, its greatest and those between (``1``, ``16``, ``1<v<16``)."""
        for k, named in self.classes:
            if k == a:
                return next((n for n, e in named if e.eval(alpha)), "other")
        v, dom = int(alpha[a]), self.domain(a)
        if len(dom) <= 4:
            return str(v)
        lo, hi = min(dom), max(dom)
        return str(v) if v in (lo, hi) else f"{lo}<v<{hi}"

    def class_names(self, a: str) -> tuple[tuple[str, bool], ...]:
        """Every class of α attribute ``a`` with whether the compiler may choose a value in it
        (False: no value of the description's ``search`` domain is in it, so no compiled program
        has it). Declared classes that read only ``a`` are checked on its search values (or
        domain), with ``other`` where a value is in none of them; declared classes that also
        read other attributes are taken as the whole list, each reachable."""
        searched = self.search_values(a)
        for k, named in self.classes:
            if k == a:
                def reach(e: Expr) -> bool:
                    if searched is None or e.vars() != {a}:
                        return True
                    return any(e.eval({a: v}) for v in searched)
                out = tuple((n, reach(e)) for n, e in named)
                if set().union(*(e.vars() for _, e in named)) != {a}:
                    return out      # classes by other attributes too: the description lists them all
                vals = self.domain(a) if searched is None else searched
                return out + (("other", any(not any(e.eval({a: v}) for _, e in named) for v in vals)),)
        dom = self.domain(a)
        vals = dom if searched is None else searched
        if len(dom) <= 4:
            return tuple((str(v), v in vals) for v in dom)
        lo, hi = min(dom), max(dom)
        mid = f"{lo}<v<{hi}"
        return ((str(lo), lo in vals), (mid, any(lo < v < hi for v in vals)), (str(hi), hi in vals))

    def search_values(self, a: str) -> tuple[int, ...] | None:
        """The values of α attribute ``a`` the compiler tries (None: it derives them from the
        kernel's tensor sizes); a subset of the domain, declared by the description."""
        for k, v in self.search:
            if k == a:
                return v
        return None

    @property
    def attrs(self) -> tuple[str, ...]:
        return self.alpha + self.beta

    def domain(self, a: str) -> tuple[int, ...]:
        for k, v in self.alpha_domain:
            if k == a:
                return v
        raise KeyError(a)

    def graph(self, alpha: Mapping[str, int]) -> Graph:
        """g_θ(α): the semantics instantiated for concrete α (cached)."""
        key = tuple(int(alpha[a]) for a in self.alpha)
        return _instantiate(self, key)

    def source(self, alpha: Mapping[str, int]) -> tuple[str, str]:
        """g_θ(α) as HLO text (what :meth:`graph` parses) and its source name (cached)."""
        return _source(self, tuple(int(alpha[a]) for a in self.alpha))

    def check(self, env: Mapping[str, int]) -> str | None:
        """The first violated validity constraint e_θ(α, β) as text, or None."""
        for c in self.constraints:
            if not c.eval(env):
                return str(c)
        return None

    def signature(self) -> str:
        return f"{self.name}(" + ", ".join(self.alpha) + " | " + ", ".join(self.beta) + ")"


@lru_cache(maxsize=4096)
def _source(instr: InstrDef, key: tuple[int, ...]) -> tuple[str, str]:
    """g_θ(α)'s HLO text (placeholders evaluated) and the source name the parser is given."""
    env = dict(zip(instr.alpha, key, strict=True))

    def sub(m: re.Match[str]) -> str:
        return str(parse_expr(m.group(1)).eval(env))

    try:
        text = _PLACEHOLDER.sub(sub, instr.semantics)
    except ExprError as e:
        raise IsaError(f"semantics placeholder: {e}", where=f"{instr.target}.{instr.name}") from None
    header = "" if text.lstrip().startswith("HloModule") else f"HloModule {instr.name}\n"
    return header + text, f"<{instr.target}.{instr.name} semantics, {env}>"


@lru_cache(maxsize=4096)
def _instantiate(instr: InstrDef, key: tuple[int, ...]) -> Graph:
    from semantics.hlo_parser import parse_hlo

    from .gen_cache import cached

    text, filename = _source(instr, key)
    try:
        return cached("graph", text, filename, lambda: parse_hlo(text, filename=filename), Graph)
    except (HloSyntaxError, GraphError) as e:
        raise IsaError(f"semantics does not type-check: {e}", where=f"{instr.target}.{instr.name}") from None


def _exprs(items: Sequence[str | int]) -> tuple[Expr, ...]:
    return tuple(parse_expr(x) for x in items)


class Accelerator:
    """An accelerator ISA description (Fig. 7's API, in Python).

    Example (compilers/targets/qkv/description.py, which defines the sizes)::

        qkv = Accelerator("qkv", hbm_size=HBM_SIZE)
        qkv.add_data_model("d1", access=[D1_ROWS], elem=[ROW], dtype="bf16")
        qkv.add_instruction("load_rm", alpha={"n": range(1, 129)}, beta=["addr_in", "addr_out"],
                            inputs=[("d0", ["addr_in"], ["n * 128"])], output=("d1", ["addr_out"], ["n"]),
                            semantics=...)
    """

    def __init__(self, name: str, hbm_size: int, doc: str = "") -> None:
        self.name = name
        self.doc = doc
        self.hbm_size = hbm_size
        self.buffers: dict[str, DataModel] = {HBM: DataModel(HBM, (hbm_size,), (), U8, "HBM (byte addressable)")}
        self.instructions: dict[str, InstrDef] = {}
        #: instructions only the middle end's micro-kernels emit (compilers/middle); Act's
        #: instruction selection leaves them out, so they cost the paper kernels' compiles nothing
        self.tile_only: tuple[str, ...] = ()

    # -- building ------------------------------------------------------------------------------

    def add_data_model(self, name: str, access: Sequence[int], elem: Sequence[int], dtype: str, doc: str = "") -> DataModel:
        if name in self.buffers:
            raise IsaError(f"buffer '{name}' is defined twice", where=self.name)
        if dtype not in DTYPES:
            raise IsaError(f"buffer '{name}': unknown element type '{dtype}'", where=self.name)
        if not access or any(int(s) <= 0 for s in list(access) + list(elem)):
            raise IsaError(f"buffer '{name}': sizes must be positive and S0 non-empty", where=self.name)
        d = DataModel(name, tuple(int(s) for s in access), tuple(int(s) for s in elem), DTYPES[dtype], doc)
        self.buffers[name] = d
        return d

    def add_instruction(self, name: str, *, alpha: Mapping[str, Sequence[int]], beta: Sequence[str],
                        inputs: Sequence[tuple[str, Sequence[str | int], Sequence[str | int]]],
                        output: tuple[str, Sequence[str | int], Sequence[str | int]],
                        semantics: str, constraints: Sequence[str] = (), contract: NumericContract | None = None,
                        cycles: str | int = 1, hbm_bytes: str | int = 0, doc: str = "",
                        search: Mapping[str, Sequence[int]] | None = None, search_where: Sequence[str] = (),
                        followed_by: Sequence[str] = (),
                        preceded_by: Sequence[str] = (),
                        config: Mapping[str, Sequence[str | int]] | None = None,
                        classes: Mapping[str, Mapping[str, str]] | None = None) -> InstrDef:
        """Declare an instruction. ``alpha`` maps each computational attribute to its domain (the
        values the compiler may choose and validation samples from). ``followed_by`` /
        ``preceded_by``: the instructions that must come directly after / before it in a program
        (fused command pairs); the scheduler and the target's encoder both read them. ``config``:
        per register-naming β attribute, the shape (α expressions) the register must be
        configured with for this instruction (one configuration per program). ``classes``: per α
        attribute, named classes of its values as predicates over α (coverage goals,
        :meth:`InstrDef.alpha_class`), e.g. ``{"stride": {"dense": "stride == cols"}}``.
        ``search`` / ``search_where``: the values and relations of α the compiler tries (the
        fields of :class:`InstrDef`)."""
        where = f"{self.name}.{name}"
        if name in self.instructions:
            raise IsaError("instruction is defined twice", where=where)
        try:
            ins = InstrDef(
                name=name, alpha=tuple(alpha), beta=tuple(beta),
                inputs=tuple(SliceSpec(b, _exprs(s), _exprs(n)) for b, s, n in inputs),
                output=SliceSpec(output[0], _exprs(output[1]), _exprs(output[2])),
                constraints=_exprs(constraints), semantics=semantics,
                alpha_domain=tuple((k, tuple(int(v) for v in vals)) for k, vals in alpha.items()),
                contract=contract or NumericContract(), cost=Cost(parse_expr(cycles), parse_expr(hbm_bytes)),
                doc=doc, target=self.name,
                search=tuple((k, tuple(int(v) for v in vals)) for k, vals in (search or {}).items()),
                search_where=_exprs(search_where),
                followed_by=tuple(followed_by), preceded_by=tuple(preceded_by),
                config=tuple((k, _exprs(v)) for k, v in (config or {}).items()),
                classes=tuple((k, tuple((n, parse_expr(e)) for n, e in v.items())) for k, v in (classes or {}).items()))
        except ExprError as e:
            raise IsaError(str(e), where=where) from None
        self.instructions[name] = ins
        return ins

    # -- validation ----------------------------------------------------------------------------

    def validate(self, samples: int = 3, seed: int = 0) -> None:
        """Check every instruction (module docstring); raises :class:`IsaError` on the first problem."""
        rng = random.Random(seed)
        for ins in self.instructions.values():
            self._validate_instr(ins, rng, samples)

    def _validate_instr(self, ins: InstrDef, rng: random.Random, samples: int) -> None:
        where = f"{self.name}.{ins.name}"
        declared = set(ins.attrs)
        if len(declared) != len(ins.attrs):
            raise IsaError("an attribute is declared twice", where=where)
        for a in ins.alpha:
            if not ins.domain(a):
                raise IsaError(f"alpha attribute '{a}' has an empty domain", where=where)
        for a, named in ins.classes:
            if a not in ins.alpha or any(e.vars() - set(ins.alpha) for _, e in named):
                raise IsaError(f"classes of '{a}': only alpha attributes may be classed, by alpha attributes",
                               where=where)
        for c in ins.search_where:
            if c.vars() - set(ins.alpha):
                raise IsaError(f"search relation '{c}' may relate only alpha attributes", where=where)
        fields: list[tuple[str, frozenset[str]]] = []
        for i, s in enumerate(ins.inputs):
            fields.append((f"input {i} ({s.buffer})", s.vars()))
        fields.append((f"output ({ins.output.buffer})", ins.output.vars()))
        for c in ins.constraints:
            fields.append((f"constraint '{c}'", c.vars()))
        fields.append(("cost", ins.cost.cycles.vars() | ins.cost.hbm_bytes.vars()))
        for what, used in fields:
            unknown = used - declared
            if unknown:
                raise IsaError(f"{what} uses undeclared attribute '{sorted(unknown)[0]}'", where=where)
        for what, used in (("cost", ins.cost.cycles.vars() | ins.cost.hbm_bytes.vars()),):
            if used - set(ins.alpha):
                raise IsaError(f"{what} may use only alpha attributes", where=where)
        for s in list(ins.inputs) + [ins.output]:
            lens_alpha = frozenset().union(*(e.vars() for e in s.length))
            if lens_alpha - set(ins.alpha):
                raise IsaError(f"slice {s}: lengths may depend only on alpha attributes", where=where)
            if s.buffer not in self.buffers:
                raise IsaError(f"slice {s} names unknown buffer '{s.buffer}'", where=where)
            buf = self.buffers[s.buffer]
            if len(s.start) != len(buf.access) or len(s.length) != len(buf.access):
                raise IsaError(f"slice {s} has {len(s.start)} dimensions, buffer {buf.name} has "
                               f"{len(buf.access)} access dimensions", where=where)
        placeholders = set().union(*(parse_expr(p).vars() for p in _PLACEHOLDER.findall(ins.semantics))) \
            if _PLACEHOLDER.search(ins.semantics) else set()
        if placeholders - set(ins.alpha):
            raise IsaError(f"semantics placeholder uses non-alpha attribute '{sorted(placeholders - set(ins.alpha))[0]}'",
                           where=where)
        for alpha in self._sample_alpha(ins, rng, samples):
            self._check_types(ins, alpha, where)

    def _sample_alpha(self, ins: InstrDef, rng: random.Random, n: int) -> list[dict[str, int]]:
        doms = [ins.domain(a) for a in ins.alpha]
        picks = [dict(zip(ins.alpha, (d[0] for d in doms), strict=True)),
                 dict(zip(ins.alpha, (d[-1] for d in doms), strict=True))]
        picks += [dict(zip(ins.alpha, (rng.choice(d) for d in doms), strict=True)) for _ in range(n)]
        alpha_only = [c for c in ins.constraints if c.vars() <= set(ins.alpha)]
        return [p for p in picks if all(c.eval(p) for c in alpha_only)] or picks[:1]

    def _check_types(self, ins: InstrDef, alpha: dict[str, int], where: str) -> None:
        g = ins.graph(alpha)
        ptypes = g.param_types
        if len(ptypes) != len(ins.inputs):
            raise IsaError(f"semantics takes {len(ptypes)} parameters but {len(ins.inputs)} input slices are declared "
                           f"(alpha {alpha})", where=where)
        zero = dict.fromkeys(ins.beta, 0) | alpha
        for i, (s, pt) in enumerate(zip(ins.inputs, ptypes, strict=True)):
            want = self.buffers[s.buffer].slice_type(s.bounds(zero)[1])
            if not want.same_value_type(pt):
                raise IsaError(f"input {i}: slice {s} has type {want.short()} but semantics parameter({i}) is "
                               f"{pt.short() if isinstance(pt, TensorType) else pt} (alpha {alpha})", where=where)
        want = self.buffers[ins.output.buffer].slice_type(ins.output.bounds(zero)[1])
        if not want.same_value_type(g.result_type):
            rt = g.result_type
            raise IsaError(f"output: slice {ins.output} has type {want.short()} but the semantics returns "
                           f"{rt.short() if isinstance(rt, TensorType) else rt} (alpha {alpha})", where=where)

    # -- presentation --------------------------------------------------------------------------

    def describe(self) -> str:
        lines = [f"accelerator {self.name}" + (f": {self.doc}" if self.doc else ""), "", "buffers:"]
        for b in self.buffers.values():
            lines.append(f"  {b}  ({b.nbytes} bytes)" + (f"  {b.doc}" if b.doc else ""))
        lines += ["", "instructions:"]
        for i, ins in enumerate(self.instructions.values(), 1):
            lines.append(f"  ({i}) {ins.signature()}" + (f"  -- {ins.doc}" if ins.doc else ""))
            for k, s in enumerate(ins.inputs):
                lines.append(f"        in{k}:  {s}")
            lines.append(f"        out:  {ins.output}")
            if ins.constraints:
                lines.append("        when: " + " and ".join(str(c) for c in ins.constraints))
            if ins.search_where:
                lines.append("        searched where: " + " and ".join(str(c) for c in ins.search_where))
            lines.append(f"        numeric: {ins.contract}; cost: {ins.cost.cycles} cycles, {ins.cost.hbm_bytes} HBM bytes")
        return "\n".join(lines) + "\n"
