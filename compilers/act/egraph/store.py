"""The e-graph of phase 1, stored in egglog (seed 000 §5, Fig. 9).

egglog (Rust engine) owns the e-graph: hash-consing, union-find and congruence closure. Every
e-node is one of the constructors ``n0 .. n8`` (by arity) whose first argument is a short
key naming a :class:`NodeInfo` held here on the Python side: a tensor operator with its attributes
and result type, a flattened input variable (a leaf in ``d0``), a literal (a folded compile-time
constant), or a partially instantiated instruction θ_{α,?} (pii) with its output buffer. Since the
key carries the result type, every e-node of an e-class has the same type.

Rule matching happens in Python on a :class:`Snapshot` of the e-graph (egglog's frozen e-graph
gives every handle's canonical class): the rules of this project carry symbolic
attributes, dtype claims and z3 preconditions that egglog's pattern language cannot state, so
:mod:`compilers.act.phase1.rewrite` matches them here and hands the resulting unions back to egglog.
Two cases need no rebuild and are closed here, exactly as egglog would (tested against it): pii
e-nodes put in their classes (:meth:`EGraph.extend`), and a round whose new e-nodes and unions
merge no two existing classes (:meth:`EGraph._closed`: every IR round of the AMX kernels);
their rows reach egglog with the next flush.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import egglog.bindings as eb

from semantics.errors import AccvError
from semantics.ir import Literal
from semantics.types import TensorType

__all__ = ["NodeInfo", "EGraph", "Snapshot", "ENode", "MAX_ARITY", "class_literals"]

MAX_ARITY = 8


#: The e-graph's signature, declared once per e-graph: ``h`` names an e-node by its handle (an
#: i64), ``n0 .. n8`` are the e-nodes by arity, the first argument the :class:`NodeInfo` key. New
#: e-nodes and unions reach egglog as rows of the relations ``a0 .. a8`` (handle, key, child
#: handles) and ``u`` (handle, handle), read in bulk from tab-separated files (egglog's ``input``
#: command); the rules of the ruleset ``ins``, compiled once here, turn each new row into its
#: ``(union (h i) (n_k key (h c)...))`` or ``(union (h a) (h b))``. Building the same actions as
#: a rule per flush cost ~30 µs per action in egglog's rule compiler; a row costs ~0.5 µs.
_DECLS = "(sort T)\n(ruleset ins)\n(constructor h (i64) T)\n" + "\n".join(
    f"(constructor n{k} (String{' T' * k}) T)\n"
    f"(relation a{k} (i64 String{' i64' * k}))\n"
    f"(rule ((a{k} x key{''.join(f' c{j}' for j in range(k))}))"
    f" ((union (h x) (n{k} key{''.join(f' (h c{j})' for j in range(k))}))) :ruleset ins)"
    for k in range(MAX_ARITY + 1)) + "\n(relation u (i64 i64))\n(rule ((u x y)) ((union (h x) (h y))) :ruleset ins)"
_SPAN = eb.RustSpan("", 0, 0)
#: where the rows' files go: memory (tmpfs) where the machine has it, else the temporary folder
_ROWS_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
#: egglog e-graphs holding the declarations alone, with their rows' folders, free for the next
#: :class:`EGraph`: compiling ``_DECLS``'s rules costs ~4.5 ms, a push and a pop ~0.5 ms
_FREE: list[tuple[Any, tempfile.TemporaryDirectory | None]] = []
_FREE_MAX = 4
_RUN = eb.RunSchedule(eb.Repeat(_SPAN, 1, eb.Run(_SPAN, eb.RunConfig("ins", None))))


def type_key(t: TensorType) -> tuple[str, tuple[int, ...]]:
    return (t.dtype.name, tuple(t.shape))


@dataclass(frozen=True)
class NodeInfo:
    """What an e-node is. ``kind``: ``op`` (tensor operator ``name`` with canonical ``attrs``),
    ``input`` (flattened entry parameter ``name``), ``lit`` (constant ``literal``), ``pii``
    (instruction ``name`` with α ``attrs``, output ``buffer``)."""

    kind: str
    name: str
    attrs: tuple[tuple[str, Any], ...]
    type: TensorType
    buffer: str = ""
    literal: Literal | None = field(default=None, compare=True)

    def __hash__(self) -> int:
        # cached: infos key the e-graph's and the matchers' tables, and the generated hash walks
        # the attributes, the type and the literal's bytes on every lookup
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.kind, self.name, self.attrs, self.type, self.buffer, self.literal))
            object.__setattr__(self, "_hash", h)
        return h

    def __getstate__(self) -> dict:
        # the cached hash is per process (str hashes are salted): never carried along
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    @property
    def tkey(self) -> tuple[str, tuple[int, ...]]:
        return type_key(self.type)

    def short(self) -> str:
        t = f"{self.type.dtype.name}{list(self.type.shape)}"
        if self.kind == "pii":
            return f"{self.name}{dict(self.attrs)}->{self.buffer}:{t}"
        if self.kind == "input":
            return f"input{self.name}:{t}"
        if self.kind == "lit":
            return f"literal:{t}"
        return f"{self.name}:{t}"


class ENode:
    """An e-node of a snapshot: ``info`` (index into EGraph.infos) over ``children`` (e-class ids
    of the snapshot). Not changed after construction; equal by value. A plain slotted class: a
    snapshot makes one per e-node, and a frozen dataclass's constructor costs twice as much."""

    __slots__ = ("info", "children")

    def __init__(self, info: int, children: tuple[int, ...]) -> None:
        self.info = info
        self.children = children

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ENode):
            return NotImplemented
        return self.info == other.info and self.children == other.children

    def __hash__(self) -> int:
        return hash((self.info, self.children))

    def __repr__(self) -> str:
        return f"ENode(info={self.info}, children={self.children})"


@dataclass
class Snapshot:
    """The e-graph at one moment: e-classes (dense ids) with their e-nodes, the type of each
    class, and the class of every handle created so far."""

    classes: list[list[ENode]]
    handle_class: list[int]
    class_type: list[tuple[str, tuple[int, ...]]]
    by_info: dict[int, list[tuple[int, ENode]]]     # info id -> [(class, enode)]

    _index: dict[tuple[int, tuple[int, ...]], int] | None = field(default=None, compare=False, repr=False)

    @property
    def n_nodes(self) -> int:
        return sum(len(c) for c in self.classes)

    def node_index(self) -> dict[tuple[int, tuple[int, ...]], int]:
        """(info, child classes) of each e-node -> its class (one class each: congruence)."""
        if self._index is None:
            self._index = {(en.info, en.children): c for c, cl in enumerate(self.classes) for en in cl}
        return self._index


class SnapshotError(AccvError):
    """The serialized e-graph does not contain an e-node the compiler added (a compiler bug)."""

    exit_code = 1


class EGraph:
    """Handles (ints) name e-nodes as they were added; :meth:`snapshot` maps them to e-classes."""

    def __init__(self) -> None:
        try:
            self.eg, self._dir = _FREE.pop()
        except IndexError:
            self.eg = eb.EGraph()
            self.eg.run_program(*self.eg.parse_program(_DECLS))
            self._dir = None    # the rows' files' folder, made on first use
        self.eg.run_program(eb.Push(1))     # :meth:`close` pops back to the declarations alone
        self.infos: list[NodeInfo] = []
        self._info_id: dict[NodeInfo, int] = {}
        self._handle_sig: list[tuple[int, tuple[int, ...]]] = []
        self._memo: dict[tuple[int, tuple[int, ...]], int] = {}
        self._pending_unions: list[tuple[int, int]] = []
        self._pending_adds: list[int] = []   # handles added since the last flush
        self._flushes = 0
        self._ir_flags: list[bool] = []      # per handle: not a pii (see ir_handle_flags)
        self.ir_round: object = None         # the IR rules' last round (seminaive.Changes)
        self.isa_round: object = None        # the ISA rules' last round (seminaive.Changes)
        # ISA rule -> (rule, its pattern's info ids found, [len(infos) when the next one was not])
        self.pattern_ids: dict[int, tuple[Any, list[int], list[int]]] = {}
        self.unions = 0
        self._snap: Snapshot | None = None   # the last snapshot, valid until the next flush
        self._reflected = (0, 0)             # the pending (adds, unions) that ``_snap`` holds already
        # right sides rules built, by (instantiation, binding, leaf handles) -> (instantiation,
        # handle): a match found again in a later round builds nothing new
        self.built: dict[tuple, tuple[Any, int]] = {}

    def close(self) -> None:
        """Give the egglog e-graph back for the next :class:`EGraph` (popped to the declarations:
        egglog's push saves the whole e-graph and pop restores it, counters included); this
        object cannot add, flush or snapshot after. Idempotent; an e-graph never closed is
        simply freed."""
        eg, self.eg = self.eg, None
        self._snap = None
        if eg is None:
            return
        try:
            eg.run_program(eb.Pop(_SPAN, 1))
        except Exception:  # noqa: BLE001 - not reusable: dropped (a fresh one is made next time)
            return
        if len(_FREE) < _FREE_MAX:
            _FREE.append((eg, self._dir))
        self._dir = None

    @property
    def info_ids(self) -> dict[NodeInfo, int]:
        return self._info_id

    def info_id(self, info: NodeInfo) -> int:
        i = self._info_id.get(info)
        if i is None:
            i = len(self.infos)
            self.infos.append(info)
            self._info_id[info] = i
        return i

    @property
    def n_handles(self) -> int:
        """Handles created so far (an :meth:`add` that returns a handle >= this made a new one)."""
        return len(self._handle_sig)

    def add(self, info: NodeInfo, children: tuple[int, ...] = ()) -> int:
        """Add an e-node (children are handles); returns its handle."""
        iid = self.info_id(info)
        sig = (iid, tuple(children))
        h = self._memo.get(sig)
        if h is not None:
            return h
        if len(children) > MAX_ARITY:
            raise ValueError(f"{info.name} has {len(children)} operands; the e-graph supports at most {MAX_ARITY}")
        h = len(self._handle_sig)
        self._handle_sig.append(sig)
        self._memo[sig] = h
        # the e-node is named by its handle, (union (h i) (n_k key (h child)...)), so a handle's
        # e-class is read off the frozen e-graph directly
        self._pending_adds.append(h)
        return h

    def ir_handle_flags(self) -> list[bool]:
        """Per handle: True unless its e-node is a pii (extended as handles are added)."""
        flags, sig, infos = self._ir_flags, self._handle_sig, self.infos
        for h in range(len(flags), len(sig)):
            flags.append(infos[sig[h][0]].kind != "pii")
        return flags

    def union(self, a: int, b: int) -> None:
        self._pending_unions.append((a, b))

    def flush(self) -> None:
        """Give the pending e-nodes and unions to egglog and restore congruence (egglog's rebuild):
        one file of rows per relation, read by egglog's ``input``, then one run of ``ins``."""
        if self.eg is None:
            raise RuntimeError("e-graph used after close()")
        if not self._pending_adds and not self._pending_unions:
            return
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="accv-egraph-", dir=_ROWS_DIR)
        rows: dict[str, list[str]] = {}
        sig = self._handle_sig
        for h in self._pending_adds:
            iid, kids = sig[h]
            rows.setdefault(f"a{len(kids)}", []).append("\t".join(map(str, (h, iid, *kids))))
        if self._pending_unions:
            rows["u"] = [f"{a}\t{b}" for a, b in self._pending_unions]
        self._flushes += 1
        paths: list[tuple[str, str]] = []
        try:
            for rel, lines in rows.items():
                # a new file per flush, removed after: truncating one in place costs ~0.3 ms on ext4
                path = os.path.join(self._dir.name, f"{self._flushes}{rel}.tsv")
                paths.append((rel, path))
                with open(path, "w", encoding="ascii") as f:
                    f.write("\n".join(lines) + "\n")
            self.eg.run_program(*(eb.Input(_SPAN, rel, path) for rel, path in paths), _RUN)
        finally:
            # (after a failure the rows stay pending: giving them again adds and unites nothing twice)
            for _, path in paths:
                if os.path.exists(path):
                    os.unlink(path)
        self.unions += len(self._pending_unions)
        self._pending_adds.clear()
        self._pending_unions.clear()
        self._snap = None
        self._reflected = (0, 0)

    def snapshot(self) -> Snapshot:
        """The e-graph read back into dense class ids. egglog's frozen e-graph gives the
        canonical e-class of every handle (the rows of ``h``); the e-nodes of a class are the
        added ones with their children mapped to classes (egglog's own rows, canonicalized, are
        exactly these, congruent duplicates collapsing into one). Class ids are dense, in the
        order of the first handle naming each class (our own sequence, stable from run to run:
        rule application visits classes in id order)."""
        if self._snap is not None and self.is_current(self._snap):
            return self._snap       # nothing pending, or only what :meth:`extend` put in it
        if self._snap is not None:
            closed = self._closed(self._snap)
            if closed is not None:
                return closed
        self.flush()
        fz = self.eg.freeze()
        to_i = self.eg.value_to_i64
        h_fn = fz.functions.get("h")
        of_handle = {to_i(r.inputs[0]): r.output for r in h_fn.rows} if h_fn is not None else {}
        n = len(self._handle_sig)
        if len(of_handle) != n:
            raise SnapshotError(f"e-graph snapshot: egglog holds {len(of_handle)} handles, the compiler added {n}")
        ids: dict[Any, int] = {}
        handle_class = [0] * n
        for h in range(n):
            try:
                v = of_handle[h]
            except KeyError:
                raise SnapshotError(f"e-graph snapshot: handle {h} is missing from egglog's e-graph") from None
            c = ids.get(v)
            if c is None:
                c = ids[v] = len(ids)
            handle_class[h] = c
        members: list[set[tuple[int, tuple[int, ...]]]] = [set() for _ in ids]
        for h, (iid, kids) in enumerate(self._handle_sig):
            members[handle_class[h]].add((iid, tuple([handle_class[k] for k in kids])))
        # sorted by (info, children); an ENode is made once per distinct e-node
        classes: list[list[ENode]] = [[ENode(i, k) for i, k in sorted(m)] for m in members]
        class_type = [self.infos[cl[0].info].tkey for cl in classes]
        self._snap = Snapshot(classes, handle_class, class_type, _by_info(classes))
        return self._snap

    def is_current_but(self, snap: Snapshot, n: int) -> bool:
        """Whether ``snap`` was the e-graph as it is before the last ``n`` handles (each with a
        union) were added, and nothing else changed since."""
        a, u = self._reflected if snap is self._snap else (-1, -1)
        return (snap is self._snap and len(self._handle_sig) == len(snap.handle_class) + n
                and len(self._pending_adds) == a + n and len(self._pending_unions) == u + n)

    def is_current(self, snap: Snapshot) -> bool:
        """Whether ``snap`` is the e-graph as it is: nothing added or united since it was taken."""
        return snap is self._snap and self._reflected == (len(self._pending_adds), len(self._pending_unions))

    #: tests set this: every :meth:`extend` and :meth:`_closed` is compared with a full flush
    #: and snapshot
    CHECK_EXTEND = False

    def _closed(self, snap: Snapshot) -> Snapshot | None:
        """``snap`` with the e-nodes and unions made since it, where their congruence closure
        unites no two classes of ``snap``: each new e-node is one of ``snap``'s (hash-consing:
        its handle joins that class) or makes a class, new classes join each other or one of
        ``snap``'s by the unions and by congruence among the new e-nodes (their child classes
        may have been united), and ``snap``'s e-nodes, whose children are all ``snap``'s
        classes, stay as they were. That closure is the smallest congruence holding the unions,
        so it is exactly what egglog's rebuild gives and :meth:`snapshot` reads back (class ids
        by first handle: ``snap``'s keep theirs). None where two of ``snap``'s classes would
        merge: egglog does that (IR rewrites on AMX kernels never merge classes; on Gemmini
        kernels most rounds do). The e-nodes and unions stay pending for the next flush."""
        a0, u0 = self._reflected if snap is self._snap else (-1, -1)
        n0, sig = len(snap.handle_class), self._handle_sig
        n = len(sig)
        if a0 < 0 or len(self._pending_adds) - a0 != n - n0:
            return None
        old_hc = snap.handle_class
        unions = self._pending_unions[u0:]
        if any(a < n0 and b < n0 and old_hc[a] != old_hc[b] for a, b in unions):
            return None                 # two of snap's classes united directly: egglog merges them
        ncls = len(snap.classes)
        index = snap.node_index()
        up: dict[int, int] = {}         # a united class -> the class it joined (snap's stay roots)

        def find(x: int) -> int:
            while x in up:
                x = up[x]
            return x

        def unite(x: int, y: int) -> bool:
            x, y = find(x), find(y)
            if x == y:
                return True
            if x < ncls and y < ncls:
                return False            # two of snap's classes: egglog's rebuild merges them
            if y < ncls or (x >= ncls and y < x):
                x, y = y, x
            up[y] = x                   # into snap's class, or the earlier new one
            return True

        hc = list(snap.handle_class)
        made: dict[tuple, int] = {}
        for h in range(n0, n):
            iid, kids = sig[h]
            key = (iid, tuple([hc[k] for k in kids]))
            c = index.get(key)
            if c is None:
                c = made.get(key)
                if c is None:
                    c = made[key] = ncls + len(made)
            hc.append(c)
        for a, b in unions:
            if not unite(hc[a], hc[b]):
                return None
        while True:         # congruence: new e-nodes whose child classes now coincide
            changed = False
            seen: dict[tuple, int] = {}
            for h in range(n0, n):
                iid, kids = sig[h]
                key = (iid, tuple([find(hc[k]) for k in kids]))
                c = find(hc[h])
                for o in (index.get(key), seen.get(key)):
                    if o is not None and find(o) != c:
                        if not unite(o, c):
                            return None
                        changed = True
                        c = find(c)
                seen.setdefault(key, c)
            if not changed:
                break
        ids: dict[int, int] = {}        # a new class's root -> its id: by first handle
        final = list(snap.handle_class)
        for h in range(n0, n):
            r = find(hc[h])
            if r >= ncls:
                r = ids.setdefault(r, ncls + len(ids))
            final.append(r)
        classes = list(snap.classes)
        touched: dict[int, set[tuple[int, tuple[int, ...]]]] = {}
        for h in range(n0, n):
            iid, kids = sig[h]
            c = final[h]
            m = touched.get(c)
            if m is None:
                m = touched[c] = {(en.info, en.children) for en in classes[c]} if c < ncls else set()
            m.add((iid, tuple([final[k] for k in kids])))
        classes += [[] for _ in ids]
        class_type = list(snap.class_type) + [("", ())] * len(ids)
        for c, m in touched.items():
            classes[c] = [ENode(i, k) for i, k in sorted(m)]
            class_type[c] = self.infos[classes[c][0].info].tkey
        return self._adopt(Snapshot(classes, final, class_type, _by_info(classes)), "closure")

    def _adopt(self, out: Snapshot, what: str) -> Snapshot:
        """``out``, computed here, as the current snapshot (the pending rows stay pending); with
        CHECK_EXTEND, egglog's own after a flush instead, which must equal it."""
        if self.CHECK_EXTEND:
            self.flush()
            full = self.snapshot()
            if (full.classes, full.handle_class, full.class_type, full.by_info) != \
                    (out.classes, out.handle_class, out.class_type, out.by_info):
                raise SnapshotError(f"{what}: the snapshot differs from egglog's")
            return full
        self._snap = out
        self._reflected = (len(self._pending_adds), len(self._pending_unions))
        return out

    def extend(self, snap: Snapshot, added: list[tuple[int, int]]) -> Snapshot:
        """``snap`` after adding e-nodes that congruence cannot touch: each of ``added`` is a
        handle made after ``snap`` (in order) united with class ``c`` of ``snap``, and no e-node
        of ``snap`` or of ``added`` has the same (info, child classes) as another in a different
        class (the IR-to-ISA rules' pii e-nodes, :func:`.phase1.apply_isa_rules`). Then no class
        merges: the snapshot is ``snap`` with the e-nodes put in their classes, exactly the one
        a flush and :meth:`snapshot` would read back from egglog, without either. The e-nodes
        and unions stay pending and go to egglog with the next flush."""
        n0 = len(snap.handle_class)
        if (not self.is_current_but(snap, len(added))
                or [h for h, _ in added] != list(range(n0, n0 + len(added)))):
            return self.snapshot()          # not the case this is for: read egglog's
        handle_class = snap.handle_class + [c for _, c in added]
        classes = list(snap.classes)
        touched: dict[int, set[tuple[int, tuple[int, ...]]]] = {}
        for h, c in added:
            iid, kids = self._handle_sig[h]
            m = touched.get(c)
            if m is None:
                m = touched[c] = {(en.info, en.children) for en in classes[c]}
            m.add((iid, tuple([handle_class[k] for k in kids])))
        for c, m in touched.items():
            classes[c] = [ENode(i, k) for i, k in sorted(m)]
        return self._adopt(Snapshot(classes, handle_class, snap.class_type, _by_info(classes)), "extend")

    def rep_handles(self, snap: Snapshot) -> dict[int, int]:
        """One handle per e-class (to build new e-nodes over existing classes)."""
        rep: dict[int, int] = {}
        for h, c in enumerate(snap.handle_class):
            rep.setdefault(c, h)
        return rep


def _by_info(classes: list[list[ENode]]) -> dict[int, list[tuple[int, ENode]]]:
    """Info id -> [(class, e-node)] over a snapshot's classes, in class order."""
    by_info: dict[int, list[tuple[int, ENode]]] = {}
    for c, cl in enumerate(classes):
        for en in cl:
            by_info.setdefault(en.info, []).append((c, en))
    return by_info


def class_literals(eg: EGraph, snap: Snapshot) -> dict[int, Literal]:
    """Class -> its literal (the first literal e-node's, in the class's e-node order), for the
    classes that hold one."""
    out = {}
    for c, nodes in enumerate(snap.classes):
        for en in nodes:
            info = eg.infos[en.info]
            if info.kind == "lit":
                out[c] = info.literal
                break
    return out
