"""GraphBuilder rejects malformed graphs at construction, and built graphs are immutable.

Every violation raises GraphError whose message names the instruction (or computation) and the
rule that was broken.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from semantics.dtypes import DTYPES
from semantics.errors import GraphError
from semantics.graph import ComputationBuilder, GraphBuilder
from semantics.ir import Attrs, Literal
from semantics.types import Layout, TensorType, TupleType

S8, S32, F32 = DTYPES["s8"], DTYPES["s32"], DTYPES["f32"]


def t(dt, *shape: int) -> TensorType:  # type: ignore[no-untyped-def]
    return TensorType(dt, tuple(shape))


def entry(params: list[TensorType]) -> tuple[GraphBuilder, ComputationBuilder]:
    gb = GraphBuilder("m")
    cb = gb.computation("main")
    for i, p in enumerate(params):
        cb.add(f"p{i}", "parameter", attrs={"index": i}, declared=p)
    return gb, cb


def rejects(fn, *fragments: str) -> GraphError:  # type: ignore[no-untyped-def]
    with pytest.raises(GraphError) as ei:
        fn()
    msg = str(ei.value)
    assert "\n" not in msg
    for f in fragments:
        assert f in msg, f"{f!r} not in {msg!r}"
    return ei.value


def test_unknown_operator() -> None:
    _, cb = entry([t(S8, 2)])
    e = rejects(lambda: cb.add("r", "frobnicate", ["p0"]), "instruction 'r'", "unknown operator 'frobnicate'")
    assert e.where == "instruction 'r'"


def test_arity() -> None:
    _, cb = entry([t(S8, 2)])
    rejects(lambda: cb.add("r", "add", ["p0"]), "instruction 'r'", "add takes 2 operands, got 1")
    rejects(lambda: cb.add("r", "negate", ["p0", "p0"]), "instruction 'r'", "negate takes 1 operands, got 2")
    rejects(lambda: cb.add("r", "dynamic-update-slice", ["p0"]), "instruction 'r'", "at least 2")


def test_undefined_operand() -> None:
    _, cb = entry([t(S8, 2)])
    rejects(lambda: cb.add("r", "add", ["p0", "ghost"]), "instruction 'r'", "operand 'ghost' is not defined before use")


def test_duplicate_name() -> None:
    _, cb = entry([t(S8, 2)])
    cb.add("r", "negate", ["p0"])
    rejects(lambda: cb.add("r", "negate", ["p0"]), "instruction 'r'", "defined twice", "'main'")
    gb = GraphBuilder("m")
    gb.add_computation(_tiny_comp(gb, "c"))
    rejects(lambda: gb.computation("c"), "computation 'c' is defined twice")


def _tiny_comp(gb: GraphBuilder, name: str):  # type: ignore[no-untyped-def]
    cb = gb.computation(name)
    cb.add("x", "parameter", attrs={"index": 0}, declared=t(S8))
    return cb.build()


def test_shape_mismatch() -> None:
    _, cb = entry([t(S8, 2), t(S8, 3)])
    rejects(lambda: cb.add("r", "add", ["p0", "p1"]), "instruction 'r'", "different shapes", "s8[2]", "s8[3]")


def test_dtype_mismatch() -> None:
    _, cb = entry([t(S8, 2), t(S32, 2)])
    rejects(lambda: cb.add("r", "add", ["p0", "p1"]), "instruction 'r'", "different element types", "s8", "s32")
    rejects(lambda: cb.add("q", "and", ["p0", "p0"], declared=t(F32, 2)), "instruction 'q'", "does not match")
    _, cb = entry([t(F32, 2)])
    rejects(lambda: cb.add("r", "and", ["p0", "p0"]), "instruction 'r'", "and is not defined on f32")


def test_bad_dimensions() -> None:
    _, cb = entry([t(S8, 2, 3)])
    rejects(lambda: cb.add("r", "transpose", ["p0"], {"dimensions": (0, 0)}), "instruction 'r'",
            "not a permutation")
    rejects(lambda: cb.add("r", "reverse", ["p0"], {"dimensions": (2,)}), "instruction 'r'",
            "dimension 2 out of range for rank 2")
    rejects(lambda: cb.add("r", "slice", ["p0"], {"slice": ((0, 3, 1), (0, 3, 1))}), "instruction 'r'",
            "out of bounds for dimension 0")
    rejects(lambda: cb.add("r", "reshape", ["p0"], declared=t(S8, 5)), "instruction 'r'", "element count")
    rejects(lambda: cb.add("r", "broadcast", ["p0"], {"dimensions": (1, 0)}, declared=t(S8, 3, 2)),
            "instruction 'r'")
    rejects(lambda: cb.add("r", "negate", ["p0"], declared=TensorType(S8, (2, 3), Layout((0, 0)))),
            "instruction 'r'", "not a permutation")


def test_missing_and_unknown_attribute() -> None:
    _, cb = entry([t(S8, 2, 3)])
    rejects(lambda: cb.add("r", "transpose", ["p0"]), "instruction 'r'", "transpose needs attribute 'dimensions'")
    rejects(lambda: cb.add("r", "negate", ["p0"], {"bogus": 1}), "instruction 'r'", "no attribute 'bogus'")
    rejects(lambda: cb.add("r", "compare", ["p0", "p0"], {"direction": "XX"}), "instruction 'r'",
            "direction=XX is not one of")
    rejects(lambda: cb.add("r", "convert", ["p0"]), "instruction 'r'", "convert needs its result type written out")


def _region(gb: GraphBuilder, name: str, pts: list[TensorType], op: str = "add") -> None:
    cb = gb.computation(name)
    for i, p in enumerate(pts):
        cb.add(f"x{i}", "parameter", attrs={"index": i}, declared=p)
    if len(pts) == 2 and pts[0] == pts[1]:
        cb.add("r", op, ["x0", "x1"], root=True)
    gb.add_computation(cb.build())


def test_reduce_region_signature() -> None:
    gb = GraphBuilder("m")
    _region(gb, "add_f32", [t(F32), t(F32)])
    _region(gb, "one_param", [t(S8)])
    cb = gb.computation("main")
    cb.add("p0", "parameter", attrs={"index": 0}, declared=t(S8, 4))
    cb.add("z", "parameter", attrs={"index": 1}, declared=t(S8))
    rejects(lambda: cb.add("r", "reduce", ["p0", "z"], {"dimensions": (0,), "to_apply": "add_f32"}),
            "instruction 'r'", "reduce region 'add_f32' must map (s8[], s8[]) -> s8[]")
    rejects(lambda: cb.add("r", "reduce", ["p0", "z"], {"dimensions": (0,), "to_apply": "one_param"}),
            "instruction 'r'", "must map")
    rejects(lambda: cb.add("r", "reduce", ["p0", "z"], {"dimensions": (0,), "to_apply": "nowhere"}),
            "instruction 'r'", "nowhere")
    rejects(lambda: cb.add("r", "reduce", ["p0", "p0"], {"dimensions": (0,), "to_apply": "add_f32"}),
            "instruction 'r'", "init value must be a scalar")


def test_declared_type_mismatch() -> None:
    _, cb = entry([t(S8, 2)])
    rejects(lambda: cb.add("r", "negate", ["p0"], declared=t(S8, 3)), "instruction 'r'",
            "declared type s8[3] does not match the inferred s8[2]")
    rejects(lambda: cb.add("r", "compare", ["p0", "p0"], {"direction": "EQ"}, declared=t(S8, 2)),
            "instruction 'r'", "does not match the inferred pred[2]")
    # a declared layout is kept (it does not change the value type)
    ins = cb.add("ok", "negate", ["p0"], declared=TensorType(S8, (2,), Layout((0,))))
    assert ins.type.layout == Layout((0,))


def test_tuple_misuse() -> None:
    _, cb = entry([t(S8, 2)])
    cb.add("tp", "tuple", ["p0", "p0"])
    rejects(lambda: cb.add("r", "negate", ["tp"]), "instruction 'r'", "must be a tensor")
    rejects(lambda: cb.add("r", "get-tuple-element", ["p0"], {"index": 0}), "instruction 'r'",
            "needs a tuple operand")
    rejects(lambda: cb.add("r", "get-tuple-element", ["tp"], {"index": 2}), "instruction 'r'",
            "index 2 out of range for a 2-tuple")
    # a tuple used by anything but get-tuple-element (here: another tuple) is rejected
    _, cb = entry([t(S8, 2)])
    cb.add("tp", "tuple", ["p0"])

    def misuse() -> None:   # rejected when added or when the computation is built
        cb.add("outer", "tuple", ["tp", "p0"])
        cb.add("r", "negate", ["p0"], root=True)
        cb.build()
    rejects(misuse, "instruction 'outer'", "'tp' may be used only by get-tuple-element")


def test_parameter_indices() -> None:
    gb = GraphBuilder("m")
    cb = gb.computation("main")
    cb.add("a", "parameter", attrs={"index": 0}, declared=t(S8, 2))
    cb.add("c", "parameter", attrs={"index": 2}, declared=t(S8, 2))
    rejects(cb.build, "computation 'main'", "no parameter(1)")
    rejects(lambda: cb.add("d", "parameter", attrs={"index": 0}, declared=t(S8, 2)), "instruction 'd'",
            "parameter(0) is declared twice (also 'a')")
    rejects(lambda: cb.add("e", "parameter", attrs={"index": 3}), "instruction 'e'", "parameter needs its type")


def test_empty_computation_and_module() -> None:
    gb = GraphBuilder("m")
    rejects(gb.computation("c").build, "computation 'c' is empty")
    rejects(GraphBuilder("empty").build, "module 'empty' has no computation")


def test_valid_graph_builds() -> None:
    gb, cb = entry([t(S8, 2), t(S8, 2)])
    cb.add("s", "add", ["p0", "p1"])
    cb.add("r", "negate", ["s"], root=True)
    gb.add_computation(cb.build(), entry=True)
    g = gb.build()
    assert g.entry.root == "r" and g.entry.params == ("p0", "p1")
    assert g.result_type == t(S8, 2) and len(g) == 4


# ---------------------------------------------------------------------------------------------
# immutability
# ---------------------------------------------------------------------------------------------

def _graph():  # type: ignore[no-untyped-def]
    gb, cb = entry([t(S8, 2)])
    cb.add("c", "constant", attrs={"literal": Literal.from_array(np.array([1, 2], np.int8))}, declared=t(S8, 2))
    cb.add("r", "add", ["p0", "c"], root=True)
    gb.add_computation(cb.build(), entry=True)
    return gb.build()


def test_graph_is_frozen() -> None:
    g = _graph()
    comp = g.entry
    ins = comp["r"]
    for obj, field in ((g, "name"), (comp, "root"), (ins, "opcode"), (ins, "operands"), (ins.attrs, "items"),
                       (ins.type, "shape"), (ins.type.dtype, "bits"), (comp["c"].attrs["literal"], "data")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, field, None)
    assert isinstance(g.computations, tuple) and isinstance(comp.instructions, tuple)
    assert isinstance(ins.operands, tuple) and isinstance(ins.attrs.items, tuple)
    assert isinstance(comp["c"].attrs["literal"].data, bytes)


def test_built_graph_unaffected_by_builder_reuse() -> None:
    gb, cb = entry([t(S8, 2)])
    cb.add("r", "negate", ["p0"], root=True)
    comp = cb.build()
    cb.add("later", "negate", ["r"])
    assert [i.name for i in comp.instructions] == ["p0", "r"]


def test_value_equality_and_hashing() -> None:
    g1, g2 = _graph(), _graph()
    assert g1 == g2 and hash(g1.entry["r"]) == hash(g2.entry["r"])
    assert Attrs.of(a=1, b=2) == Attrs.of(b=2, a=1)
    lit = Literal.from_array(np.array([np.nan], np.float32))
    assert lit == Literal.from_array(np.array([np.nan], np.float32))   # bit-exact, NaN == NaN
    assert Literal.from_array(np.array([0.0], np.float32)) != Literal.from_array(np.array([-0.0], np.float32))
    assert TupleType((t(S8, 2),)) == TupleType((t(S8, 2),))
