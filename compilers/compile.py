"""The compiler's one entry: :func:`compile` (a graph and a target in, a checkable program out).

What belongs here: :func:`compile`, the :class:`Compiled` result, and :func:`rules_for`, the
target's proven rule set behind the proof gate, made once per (target description, proof mode) in
a process. Every user of the compiler calls :func:`compile`: the CLI (``accv compile`` / ``accv
check``), the pytest plugin, the campaign, the benchmarks and scripts.

The pipeline (design.md's flow):

0. canonical forms (:func:`compilers.canon.canonicalize`): a front end's spellings (jax's clip,
   its bias reshape/broadcast chains, identity converts, XLA's views) rewritten to the forms the
   middle end recognizes, each rewrite a gated rule instance or an identity established on the
   instance; the canonical graph is for recognition only: Act (whose e-graph rewrites by the rule
   library itself) and the row-block split compile the graph as given;
1. the middle end (:func:`compilers.middle.compile.compile_tiled`) takes a layer larger than one
   of the target's blocks and composes its tiled program, or leaves the kernel to Act; a layer it
   takes but the target cannot run raises :class:`~compilers.errors.Unsupported`;
2. Act (:func:`compilers.act.driver.compile_graph`, seed 000): e-graph instruction selection
   (phase 1), ordering and CP-SAT allocation (phase 2), under the cost model; the middle end
   also calls it for each distinct row block of a kernel it splits by rows.

The program returned carries its numeric contract (:mod:`compilers.contract`): the middle end's
for a tiled float layer, else the instructions' own. Proof modes: ``"prove"`` proves a rule
instantiation without a cached proof at its first use (and caches it); ``"cached"`` uses cached
proofs only. Either way a rule fires only with a passing proof of its exact text (invariant 3).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from semantics.ir import Graph
from verif.gate import ProofGate

from .act.driver import ActResult, Stats, compile_graph, default_cost
from .act.phase1.rewrite import IrRules
from .canon import canonicalize
from .contract import EXACT, of_instructions
from .errors import Unsupported
from .isa import Accelerator
from .program import Program

__all__ = ["PROOF_MODES", "REGION_TRIES", "Compiled", "ProofUse", "compile", "forget_rules", "rules_for", "without"]

#: ``"prove"``: a missing proof is run at the rule's first use; ``"cached"``: cached proofs only
PROOF_MODES = ("prove", "cached")

_RULES: dict[tuple[int, str], tuple[Accelerator, IrRules]] = {}


def rules_for(acc: Accelerator, proofs: str = "prove") -> IrRules:
    """The rule set of target description ``acc`` behind a proof gate of mode ``proofs``, made
    once per (description, mode) in this process (the gate's answers and the instantiations are
    kept for every later compile)."""
    if proofs not in PROOF_MODES:
        raise ValueError(f"proof mode must be one of {', '.join(PROOF_MODES)}, not {proofs!r}")
    key = (id(acc), proofs)
    hit = _RULES.get(key)
    if hit is None or hit[0] is not acc:
        hit = _RULES[key] = (acc, IrRules.for_target(acc, ProofGate(prove_missing=proofs == "prove")))
    return hit[1]


def forget_rules() -> None:
    """Drop the memoized rule sets (the next compile builds them afresh: after the rule library
    or a description changed in this process, e.g. a test that patches one)."""
    _RULES.clear()


@dataclass(frozen=True)
class ProofUse:
    """What the proof gate did during one compile: seconds proving at first use, what it proved
    (with the verdict) and what it refused for want of a passing proof."""

    seconds: float = 0.0
    proved: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()


@dataclass
class Compiled:
    """A compile: the program (with its contract), the description it targets, its cost under the
    cost model, the statistics (``stats.middle`` where the middle end tiled it), the pii count of
    Act's pii graph (0 for a tiled program) and the proof gate's work."""

    program: Program
    acc: Accelerator
    cost: float
    stats: Stats
    pii_count: int = 0
    proofs: ProofUse = field(default_factory=ProofUse)


def compile(graph: Graph, target: str | Accelerator, *, proofs: str = "prove",
            cost: Callable[[Program], float] | None = None, rules: IrRules | None = None,
            log: Callable[[str], None] | None = None, n: float = 2.0, max_iters: int = 12,
            time_budget: float = 60.0, host: bool = False, host_budget: float = 120.0,
            withhold: Sequence[str] = (), tries: int | None = None) -> Compiled:
    """Compile ``graph`` for ``target`` (a name or a description) through the middle end and Act
    (module doc).

    Args:
        proofs: the proof mode (:data:`PROOF_MODES`) of the memoized rule set (:func:`rules_for`).
        cost: the cost model choosing among Act's candidates (default: the description's
            per-instruction cycles; ``check.cost.rtl_cost`` measures them on the RTL).
        rules: a rule set of one's own instead (tests of the gate, injected rules).
        log: receives the proof gate's lines ("proving ... (first use)") during this compile.
        n, max_iters, time_budget: Act's stop (:func:`compilers.act.driver.compile_graph`).
        host: where the target cannot run the whole graph, partition it (:mod:`compilers.partition`):
            the program is then a :class:`~compilers.partition.program.Partitioned` of accelerator
            programs and host steps; ``host_budget`` bounds the partitioner's seconds.
        withhold: instructions of the target the compile may not use (:func:`without`): how a
            campaign makes the compiler choose another of the hardware's paths, e.g. Gemmini's
            output-stationary dataflow with the weight-stationary instructions withheld. Only
            Act compiles then (the middle end's micro-kernels name their instructions).
        tries: the tiling search's work bound (instruction tries; default
            ``Tiler.MAX_TRIES``). The partitioner compiles its regions with
            :data:`REGION_TRIES`.

    Raises:
        Unsupported: the target cannot run the kernel (with ``host``: no region of it); ``skipped``
            names the rule instantiations the gate refused meanwhile.
    """
    from .middle.compile import compile_tiled
    from .middle.schedule import TileError
    from .targets import load_target

    full = target if isinstance(target, Accelerator) else load_target(target)
    acc = without(full, withhold)
    rules = rules if rules is not None else rules_for(acc, proofs)
    gate = rules.gate
    seconds0, proved0, skipped0 = gate.seconds, len(gate.proved_now), set(gate.skipped)
    old_log = gate.log
    if log is not None:
        gate.log = log

    def use() -> ProofUse:
        return ProofUse(gate.seconds - seconds0, tuple(gate.proved_now[proved0:]),
                        tuple(sorted(gate.skipped - skipped0)))

    def block(g: Graph) -> Program:
        return compile_graph(g, acc, cost, n, max_iters, rules, time_budget, tries).program

    canonical = canonicalize(graph, gate).graph
    try:
        try:
            tiled = None if withhold else compile_tiled(canonical, acc, block, original=graph)
        except TileError as e:
            raise Unsupported(e.reason) from None
        if tiled is not None:
            stats = Stats(middle=True, micro_kernels=tiled.micro_kernels, total=tiled.seconds,
                          best_at=tiled.seconds, candidates=1)
            res = ActResult(tiled.program, (cost or default_cost(acc))(tiled.program), stats, 0)
        else:
            res = compile_graph(graph, acc, cost, n, max_iters, rules, time_budget, tries)
    except Unsupported as e:
        if not host:
            raise Unsupported(e.why, skipped=use().skipped) from None
        gate.log = old_log
        return _partitioned(graph, full, e, cost, log, n, max_iters, time_budget, host_budget, use, proofs,
                            tuple(withhold))
    finally:
        gate.log = old_log
    program = res.program
    if program.contract is EXACT and not _all_exact(acc):
        program = replace(program, contract=of_instructions(acc, program.instructions, len(program.outputs)))
    return Compiled(program, acc, res.cost, res.stats, res.pii_count, use())


def _partitioned(graph: Graph, acc: Accelerator, whole: Unsupported, cost: Callable[[Program], float] | None,
                 log: Callable[[str], None] | None, n: float, max_iters: int, time_budget: float,
                 host_budget: float, use: Callable[[], ProofUse], proofs: str, withhold: tuple[str, ...]) -> Compiled:
    """``graph`` partitioned between ``acc`` and the host (``whole``: why ``acc`` cannot run it
    whole); each region compiled by :func:`compile` without ``host`` (and with ``withhold``)."""
    import time

    from .partition.search import partition

    t0 = time.perf_counter()

    def region(g: Graph) -> Program:
        return compile(g, acc, proofs=proofs, cost=cost, log=log, n=n, max_iters=max_iters,
                       time_budget=time_budget, withhold=withhold, tries=REGION_TRIES).program

    try:
        p = partition(graph, acc.name, region, whole, host_budget)
    except Unsupported as e:
        raise Unsupported(e.why, skipped=use().skipped) from None
    price = cost or default_cost(acc)
    seconds = time.perf_counter() - t0
    stats = Stats(total=seconds, best_at=seconds, candidates=1)
    return Compiled(p, without(acc, withhold), sum(price(q) for q in p.programs), stats, 0, use())  # type: ignore[arg-type]


#: the tiling search's bound on instruction tries (its demands keep their bound) for each region the partitioner
#: compiles: a region that fails, fails in seconds, not in the ~20 s the whole bound
#: (``Tiler.MAX_TRIES``, 20,000) takes on a Gemmini layer chain with a host operator; a region
#: that compiles needs far fewer (the paper's AMX kernels 258-1,219, K1 at 48 x 48 1,514). Work,
#: not time: the same graph always gets the same placement. The whole graph's first attempt keeps
#: the whole bound.
REGION_TRIES = 3000


_WITHOUT: dict[tuple[int, tuple[str, ...]], tuple[Accelerator, Accelerator]] = {}


def without(acc: Accelerator, names: Sequence[str]) -> Accelerator:
    """``acc`` with instructions ``names`` withheld: the same target (its name, buffers, backends;
    its programs run anywhere ``acc``'s do) offering the compiler the other instructions only.
    Made once per (description, names) in a process, so its rule set is too (:func:`rules_for`).
    Raises ValueError for a name ``acc`` does not have."""
    if not names:
        return acc
    key = (id(acc), tuple(sorted(set(names))))
    hit = _WITHOUT.get(key)
    if hit is not None and hit[0] is acc:
        return hit[1]
    unknown = sorted(set(names) - set(acc.instructions))
    if unknown:
        raise ValueError(f"{acc.name} has no instruction {', '.join(unknown)} to withhold")
    import copy

    v = copy.copy(acc)
    for k in [k for k in v.__dict__ if k.startswith("_")]:
        del v.__dict__[k]       # caches of the whole description (Act's TargetContext) are not the variant's
    v.instructions = {k: d for k, d in acc.instructions.items() if k not in key[1]}
    v.tile_only = tuple(t for t in acc.tile_only if t not in key[1])
    _WITHOUT[key] = (acc, v)
    return v


def _all_exact(acc: Accelerator) -> bool:
    """Whether every instruction of ``acc`` declares an exact numeric contract (then every
    program of it is held to the reference bit for bit, without looking at its instructions)."""
    return all(i.contract.kind == "exact" for i in acc.instructions.values())
