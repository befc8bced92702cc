"""The e-graph layer over egglog's bindings (compilers/act/egraph/store.py): after random additions and
unions, the snapshot's partition of handles is the congruence closure a reference union-find
computes, snapshots are reused only while nothing changed, and every class's e-nodes are the
added ones with their children mapped to classes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compilers.act.egraph import EGraph, NodeInfo
from semantics.dtypes import DTYPES
from semantics.types import TensorType

T4 = TensorType(DTYPES["s8"], (4,))


def _info(k: int) -> NodeInfo:
    return NodeInfo("op", f"f{k}", (), T4)


def _closure(sigs: list[tuple[int, tuple[int, ...]]], unions: list[tuple[int, int]]) -> list[int]:
    """Reference: union-find over handles, then congruence (same operator, equal children) to a
    fixed point; returns each handle's representative."""
    parent = list(range(len(sigs)))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in unions:
        parent[find(a)] = find(b)
    changed = True
    while changed:
        changed = False
        seen: dict[tuple, int] = {}
        for h, (op, kids) in enumerate(sigs):
            key = (op, tuple(find(k) for k in kids))
            if key in seen and find(seen[key]) != find(h):
                parent[find(h)] = find(seen[key])
                changed = True
            seen.setdefault(key, h)
    return [find(h) for h in range(len(sigs))]


@st.composite
def _programs(draw):  # noqa: ANN202
    steps = []
    n = 0
    for _ in range(draw(st.integers(1, 40))):
        if n >= 2 and draw(st.booleans()) and draw(st.booleans()):
            steps.append(("union", draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))))
        else:
            arity = draw(st.integers(0, min(n, 3)))
            kids = tuple(draw(st.integers(0, n - 1)) for _ in range(arity))
            steps.append(("add", draw(st.integers(0, 3)), kids))
            n += 1
        if draw(st.integers(0, 9)) == 0:
            steps.append(("snapshot",))
    return steps


@settings(max_examples=60, deadline=None)
@given(_programs())
def test_snapshot_is_the_congruence_closure(steps) -> None:  # noqa: ANN001
    eg = EGraph()
    handles: list[int] = []            # step order -> handle (hash-consed adds share a handle)
    unions: list[tuple[int, int]] = []
    for s in steps:
        if s[0] == "add":
            handles.append(eg.add(_info(s[1]), tuple(handles[k] for k in s[2])))
        elif s[0] == "union":
            a, b = handles[s[1]], handles[s[2]]
            eg.union(a, b)
            unions.append((a, b))
        else:
            eg.snapshot()
    snap = eg.snapshot()
    sigs = [(iid, kids) for iid, kids in eg._handle_sig]
    rep = _closure(sigs, unions)
    # the same partition of handles
    for h1 in range(len(sigs)):
        for h2 in range(h1 + 1, len(sigs)):
            assert (rep[h1] == rep[h2]) == (snap.handle_class[h1] == snap.handle_class[h2]), (h1, h2)
    # each class holds exactly its handles' e-nodes, children as classes
    want: dict[int, set] = {}
    for h, (iid, kids) in enumerate(sigs):
        want.setdefault(snap.handle_class[h], set()).add((iid, tuple(snap.handle_class[k] for k in kids)))
    got = {c: {(en.info, en.children) for en in nodes} for c, nodes in enumerate(snap.classes)}
    assert got == want
    # nothing changed: the same snapshot object; a change: a new one that sees it
    assert eg.snapshot() is snap
    h = eg.add(_info(9))
    snap2 = eg.snapshot()
    assert snap2 is not snap and snap2.handle_class[h] not in snap2.handle_class[:h]
    eg.close()      # the next example's e-graph reuses this egglog e-graph, popped back to empty


def test_a_closed_egraph_gives_back_an_empty_egglog_egraph() -> None:
    """EGraph.close pops the egglog e-graph back to the declarations and the next EGraph reuses
    it: nothing of the first (e-nodes, unions, handles) is in the second."""
    import pytest

    eg = EGraph()
    a, b = eg.add(_info(0)), eg.add(_info(1))
    c = eg.add(_info(2), (a,))
    eg.add(_info(2), (b,))
    eg.union(a, b)
    assert len(eg.snapshot().classes) == 2                 # a = b, hence f2(a) = f2(b)
    base = eg.eg
    eg.close()
    eg.close()                                             # idempotent
    with pytest.raises(RuntimeError, match="after close"):
        eg.snapshot()
    eg2 = EGraph()
    assert eg2.eg is base                                  # reused, not rebuilt
    x, y = eg2.add(_info(0)), eg2.add(_info(1))
    eg2.add(_info(2), (x,))
    eg2.add(_info(2), (y,))
    snap = eg2.snapshot()
    assert len(snap.classes) == 4 and snap.handle_class == [0, 1, 2, 3]   # no union survived
    assert c == 2 and eg2.n_handles == 4
    eg2.close()


def test_flush_leaves_no_row_files() -> None:
    """The rows handed to egglog go through one file per relation and flush; none is left behind."""
    import os

    eg = EGraph()
    a = eg.add(_info(0))
    b = eg.add(_info(1), (a,))
    eg.add(_info(1), (b,))
    eg.union(a, b)
    snap = eg.snapshot()
    assert snap.handle_class[0] == snap.handle_class[1] == snap.handle_class[2]   # congruence
    assert eg._dir is not None and os.listdir(eg._dir.name) == []


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_extend_is_the_snapshot_egglog_gives(data) -> None:  # noqa: ANN001
    """EGraph.extend: new e-nodes of fresh (info, child classes), each united with one class of
    the current snapshot, give the snapshot egglog reads back after a flush. Where the snapshot is
    not current (something else was added since), it reads egglog's."""
    eg = EGraph()
    hs = [eg.add(_info(i)) for i in range(3)]
    for i in range(data.draw(st.integers(2, 8))):
        kids = tuple(data.draw(st.sampled_from(hs)) for _ in range(data.draw(st.integers(1, 2))))
        hs.append(eg.add(_info(3 + i % 2), kids))
        if data.draw(st.booleans()):
            eg.union(data.draw(st.sampled_from(hs)), data.draw(st.sampled_from(hs)))
    snap = eg.snapshot()
    stale = data.draw(st.booleans())
    if stale:
        eg.add(_info(99), (hs[0],))
    added = []
    for j in range(data.draw(st.integers(1, 4))):
        c = data.draw(st.integers(0, len(snap.classes) - 1))
        h = eg.add(NodeInfo("pii", f"p{j}", (), T4), (hs[data.draw(st.integers(0, len(hs) - 1))],))
        eg.union(h, next(x for x, k in enumerate(snap.handle_class) if k == c))
        added.append((h, c))
    got = eg.extend(snap, added)
    assert eg.snapshot() is got                 # the driver's next snapshot
    eg.flush()                                  # egglog's own, read back
    want = eg.snapshot()
    assert (got.classes, got.handle_class, got.class_type, got.by_info) == \
        (want.classes, want.handle_class, want.class_type, want.by_info)


@settings(max_examples=150, deadline=None)
@given(_programs(), st.data())
def test_a_snapshot_closed_here_is_egglogs(steps, data) -> None:  # noqa: ANN001
    """EGraph._closed: after a snapshot, new e-nodes and unions that merge no two of its classes
    (hash-consed onto its e-nodes, new classes joining each other or one of its classes, by
    union or congruence) give, without egglog, the snapshot egglog reads back after a flush:
    the same classes, ids, e-nodes, types and index. Where two of its classes would merge it
    declines (None) and egglog's rebuild does it."""
    eg = EGraph()
    handles: list[int] = []
    for s in steps:
        if s[0] == "add":
            handles.append(eg.add(_info(s[1]), tuple(handles[k] for k in s[2])))
        elif s[0] == "union":
            eg.union(handles[s[1]], handles[s[2]])
    snap = eg.snapshot()
    # over it: new leaves (new classes), unary e-nodes of two operators over old and new classes
    # (which congruence can join once their operands' classes are united), and unions, mostly
    # of a new e-node (no merge of snap's classes) but some of two old ones
    fresh = [eg.add(_info(10 + i)) for i in range(data.draw(st.integers(1, 3)))]
    handles += fresh
    for _ in range(data.draw(st.integers(1, 12))):
        r = data.draw(st.integers(0, 9))
        if r < 3:
            eg.union(data.draw(st.sampled_from(fresh)), data.draw(st.sampled_from(handles)))
        elif r == 3:
            eg.union(data.draw(st.sampled_from(handles)), data.draw(st.sampled_from(handles)))
        else:
            h = eg.add(_info(data.draw(st.integers(0, 1))), (data.draw(st.sampled_from(handles)),))
            if h >= len(snap.handle_class):
                fresh.append(h)
            handles.append(h)
    got = eg._closed(snap)
    eg.flush()
    want = eg.snapshot()
    if got is not None:
        assert (got.classes, got.handle_class, got.class_type, got.by_info) == \
            (want.classes, want.handle_class, want.class_type, want.by_info)
    else:       # it declines only where two of snap's classes merge
        assert len(set(want.handle_class[:len(snap.handle_class)])) < len(snap.classes)
    eg.close()
