"""Where the tiling keeps what it derives (compilers/act/phase1/tiling/tops.py, search.py): the target's
patterns and tables in the description's TargetContext, a compile's generation seconds in its
CompileContext (timer "gen", which the driver reports as backend generation)."""

from __future__ import annotations

import pytest

from compilers.act.context import CompileContext, TargetContext
from compilers.act.driver import CompileError
from compilers.act.phase1.tiling import Tiler
from compilers.act.phase1.tiling.tops import TargetTiling
from compilers.targets import load_target


def test_generation_seconds_go_to_the_compile_context() -> None:
    """A Tiler that generates g_θ(α) (dimensions no compile here used) adds the seconds to its
    context's "gen"; a second one for the same target and dimensions finds the target's tables and
    generates nothing. Both read the target's caches from its TargetContext."""
    acc = load_target("amx")
    first = CompileContext(TargetContext.of(acc))
    a = Tiler(acc, {7, 11}, None, [], ctx=first)
    assert first.seconds.get("gen", 0.0) > 0.0
    again = CompileContext(TargetContext.of(acc))
    b = Tiler(acc, {7, 11}, None, [], ctx=again)
    assert again.seconds.get("gen", 0.0) == 0.0
    assert a.tables is b.tables and a.target is b.target is TargetTiling.of(TargetContext.of(acc))


def test_a_context_of_another_target_is_refused() -> None:
    with pytest.raises(CompileError, match="compile context is for qkv, not amx"):
        Tiler(load_target("amx"), {16}, None, [], ctx=CompileContext(TargetContext.of(load_target("qkv"))))


def test_the_target_caches_are_emptied_together(monkeypatch) -> None:  # noqa: ANN001
    """Past MAX_RULES the next Tiler starts by emptying every pattern cache of its target (views,
    rules, tops, layouts, tables), not one of them: the tables' rules are the rules' cache's."""
    from compilers.act.phase1.tiling import tops

    acc = load_target("qkv")
    tt = TargetTiling.of(TargetContext.of(acc))
    before = Tiler(acc, {16, 64}, None, []).tables
    old = {k: r for k, r in tt.rules.items() if r is not None}
    assert old and tt.views.memo
    assert Tiler(acc, {16, 64}, None, []).tables is before       # within the bounds: kept
    monkeypatch.setattr(tops, "MAX_RULES", 0)
    after = Tiler(acc, {16, 64}, None, []).tables
    assert after is not before and list(tt.tables_memo.values()) == [after]
    again = {k: r for k, r in tt.rules.items() if r is not None}
    assert again.keys() & old.keys() and all(again[k] is not old[k] for k in again.keys() & old.keys())


def test_a_target_context_is_dropped_with_its_description() -> None:
    """The context lives on the description object: once the description is gone, so are its
    caches (a registry keyed by the description would keep both alive through the caches)."""
    import gc
    import weakref

    from compilers.act.context import TargetContext
    from compilers.isa import Accelerator

    acc = Accelerator("scratch", hbm_size=64)
    ctx = TargetContext.of(acc)
    ctx.memo("m")["k"] = acc            # a cache that refers back to its description
    assert TargetContext.of(acc) is ctx
    gone = weakref.ref(ctx)
    del acc, ctx
    gc.collect()
    assert gone() is None
