"""Semi-naive rounds of rule matching on e-graph snapshots (seed 000 §5, Module 2).

Equality saturation re-runs every rule on the whole e-graph each round; a match found in one
round is found again in every later one, and re-applying it builds nothing and unions nothing.
As in Datalog engines and egglog, a round needs only the matches that use something new.
:class:`Changes` says, for one round's snapshot against the same matcher's previous round,
which root classes can hold such a match for a left side that steps through e-nodes down to a
given depth. The IR-to-IR rules (:mod:`.rewrite`) and the IR-to-ISA rules (:mod:`.phase1`)
keep one each.
"""

from __future__ import annotations

from typing import Any

from . import EGraph, Snapshot

__all__ = ["Changes"]


class _Ran:
    """What :meth:`Changes.near` and :meth:`Changes.repeats` keep of the previous round."""

    __slots__ = ("ran",)

    def __init__(self, ran: set[int]) -> None:
        self.ran = ran


class Changes:
    """Which classes of a round's snapshot can hold a match the previous rounds did not see.

    Classes only grow. A class is *changed* when it is new, when it merged classes of the
    previous round's snapshot (by handles: it holds more of the old IR handles than the class
    its first one was in; piis, which no rule's left side reads, are left out), or when its
    literal is not the one it had. An IR e-node is *new* when no old handle names it or one of
    its children is a changed class.

    A match steps through e-nodes, from the root's down to the left side's depth, and reads, at
    its leaves, classes' types, identities and literals. If every e-node it steps through is
    old, every leaf class is an unchanged child of an old e-node, so the previous round's
    snapshot held the same match with the same leaf handles (a class's first handle), hence the
    same right side, and it was applied then or, by induction, in an earlier round.
    ``dist[c]`` is the fewest steps from class ``c`` down through old e-nodes to a class with
    a new e-node; a root with ``dist[c]`` beyond the left side's depth can only repeat old
    matches and is not tried.

    The previous round must have run each left side it is asked about in full (``ran``); the
    first round, a left side first run now, or a previous round cut short (pass ``prev=None``)
    try every root."""

    FAR = 1 << 30

    def __init__(self, eg: EGraph, snap: Snapshot, lits: dict[int, Any], prev: object, owner: object) -> None:
        self.owner = owner               # the rule set (kept alive: ``ran`` holds its members' ids)
        self.ran: set[int] = set()       # ids of the left sides this round runs in full (read only once set)
        hc = snap.handle_class
        n_cls = len(snap.classes)
        infos, sig = eg.infos, eg._handle_sig
        ir = eg.ir_handle_flags()
        self.prev = prev if isinstance(prev, Changes) and prev.owner is owner else None
        n_old = self.prev.n_handles if self.prev is not None else 0
        count = [0] * n_cls        # IR handles per class
        old = [0] * n_cls          # of them, those the previous round's snapshot had
        first = [-1] * n_cls
        for h, c in enumerate(hc):
            if ir[h]:
                count[c] += 1
                if h < n_old:
                    old[c] += 1
                if first[c] < 0:
                    first[c] = h
        self.n_handles, self.handle_class, self.count, self.lits = len(hc), hc, count, lits
        self.dist: list[int] | None = None
        self.changed: list[bool] | None = None
        self.fresh: list[list[bool]] | None = None   # per class, per e-node: new this round
        if self.prev is None:
            return
        p = self.prev
        self.prev = None if p is None else _Ran(p.ran)   # only its ``ran`` is read later; the rest can go
        changed = [False] * n_cls
        for c in range(n_cls):
            h0 = first[c]
            if h0 < 0 or h0 >= n_old:
                changed[c] = True
                continue
            pc = p.handle_class[h0]
            changed[c] = old[c] != p.count[pc] or lits.get(c) is not p.lits.get(pc)
        self.changed = changed
        # the e-nodes (info, child classes) that an old handle names
        old_nodes = set()
        for h in range(n_old):
            if ir[h]:
                iid, kids = sig[h]
                old_nodes.add((iid, tuple([hc[k] for k in kids])))
        far = self.FAR
        dist = [far] * n_cls
        parents: list[list[int]] = [[] for _ in range(n_cls)]
        todo = []
        fresh_nodes: list[list[bool]] = []
        for c, nodes in enumerate(snap.classes):
            fresh = False
            flags = []
            for en in nodes:
                new = False
                if infos[en.info].kind != "pii":
                    kids = en.children
                    if (en.info, kids) not in old_nodes or any(changed[k] for k in kids):
                        fresh = new = True
                    else:
                        for k in kids:
                            parents[k].append(c)
                flags.append(new)
            fresh_nodes.append(flags)
            if fresh:
                dist[c] = 0
                todo.append(c)
        self.fresh = fresh_nodes
        d = 0
        while todo:
            d += 1
            nxt = []
            for k in todo:
                for c in parents[k]:
                    if dist[c] == far:
                        dist[c] = d
                        nxt.append(c)
            todo = nxt
        self.dist = dist

    def repeats(self, key: int) -> bool:
        """Whether the previous round ran the left side ``key`` in full: then a match of it that
        steps through no new e-node (``fresh``) repeats one of that round's or an earlier one."""
        return self.dist is not None and key in self.prev.ran   # type: ignore[union-attr]

    def near(self, key: int, depth: int, classes: list[int]) -> list[int]:
        """The root classes to try this round for the left side ``key`` (an id in ``ran``) that
        steps through e-nodes ``depth`` levels below its root, in their order."""
        if self.dist is None or key not in self.prev.ran:   # type: ignore[union-attr]
            return classes
        dist = self.dist
        return [c for c in classes if dist[c] <= depth]

    def touched(self, key: int, classes: list[int]) -> list[int]:
        """The root classes to try this round for a ground left side ``key`` (an id in ``ran``),
        one that reads only its root class's type and literal (its roots are the classes holding
        an e-node of its operator): the changed classes and those with a new e-node. Any other
        class holds all of one old class's handles and no other old class's, the same literal,
        and only e-nodes that class had, so the old class was a root with the same match, and
        the right side was united with it then."""
        if self.dist is None or key not in self.prev.ran:   # type: ignore[union-attr]
            return classes
        ch, dist = self.changed, self.dist
        return [c for c in classes if ch[c] or not dist[c]]   # type: ignore[index]

