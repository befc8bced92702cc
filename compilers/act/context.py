"""Where Act's caches and timers live, with a visible lifetime (no module-level state).

- :class:`TargetContext`: what Act derives from one target description and keeps across compiles
  (instruction patterns, their tops, rule instantiations, precondition values). One per
  :class:`~compilers.isa.Accelerator` object, made by :meth:`TargetContext.of` and dropped with it.
- :class:`CompileContext`: what one compile keeps (byte views, search memos, timings). Made by the
  driver for each ``compile_graph`` call and passed explicitly to the phases; dropped at its end.

A cache is a named attribute or a named memo (:meth:`memo`), never a module global keyed by
``id()``: an ``id`` is reused once its object dies, so such a key is sound only while the memo also
holds the object (the memos here do, or are keyed by value). Bounded memos (:meth:`bounded`) are
emptied when full, so a campaign of thousands of kernels does not grow them without limit.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TargetContext", "CompileContext"]


class _Memos:
    """Named dictionaries, made on first use."""

    __slots__ = ("_memos", "_limits")

    def __init__(self) -> None:
        self._memos: dict[str, dict[Any, Any]] = {}
        self._limits: dict[str, int] = {}

    def memo(self, name: str) -> dict[Any, Any]:
        """The memo ``name`` (made empty on first use)."""
        m = self._memos.get(name)
        if m is None:
            m = self._memos[name] = {}
        return m

    def bounded(self, name: str, limit: int) -> dict[Any, Any]:
        """The memo ``name``, emptied first when it holds ``limit`` entries or more."""
        m = self.memo(name)
        self._limits[name] = limit
        if len(m) >= limit:
            m.clear()
        return m

    def sizes(self) -> dict[str, int]:
        """Each memo's number of entries (for tests and ``--stats``)."""
        return {k: len(v) for k, v in self._memos.items()}

    def clear(self) -> None:
        for m in self._memos.values():
            m.clear()


class TargetContext(_Memos):
    """Act's caches for one target description; lives as long as the description object."""

    __slots__ = ("acc", "__weakref__")

    def __init__(self, acc: Any) -> None:
        super().__init__()
        self.acc = acc

    @classmethod
    def of(cls, acc: Any) -> TargetContext:
        """The context of ``acc`` (one per description object, made on first use). It is kept on the
        description object itself, so it is dropped with it (a registry keyed by the description
        would keep both alive: the context's caches refer back to the description)."""
        ctx = acc.__dict__.get("_act_context")
        if ctx is None:
            ctx = acc.__dict__["_act_context"] = cls(acc)
        return ctx


class CompileContext(_Memos):
    """One compile's memos and timings; the driver makes one per ``compile_graph`` call."""

    __slots__ = ("target", "seconds", "tries")

    def __init__(self, target: TargetContext, tries: int | None = None) -> None:
        super().__init__()
        self.target = target
        self.seconds: dict[str, float] = {}
        #: the tiling search's bound on instruction tries for this compile (None:
        #: :attr:`Tiler.MAX_TRIES <compilers.act.phase1.tiling.search.Tiler.MAX_TRIES>`)
        self.tries = tries

    def add_time(self, name: str, seconds: float) -> None:
        """Add ``seconds`` to the timer ``name``."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds
