"""HLO text: the parser (semantics.hlo_parser) and printer (semantics.hlo_printer).

Covers: every corpus file parses and round-trips (parse . print . parse == parse, print is a fixed
point), each kind of bad input raises the right error type at the right line:col with a one-line
message, comments and XLA annotations are ignored, literals round-trip bit-exactly, and a fuzz
check that truncated or mutated corpus files raise nothing but AccvError subclasses.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from semantics.dtypes import DTYPES
from semantics.errors import AccvError, GraphError, HloSyntaxError
from semantics.hlo_parser import parse_file, parse_hlo
from semantics.hlo_printer import format_scalar, print_hlo
from semantics.types import Layout, TensorType
from tests.paths import PAPER, ACT_CORPUS

CORPUS = ACT_CORPUS
CORPUS_FILES = sorted(CORPUS.rglob("*.hlo"))


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(CORPUS)) for p in paths]


def test_corpus_present() -> None:
    assert len(CORPUS_FILES) == 133


@pytest.mark.parametrize("path", CORPUS_FILES, ids=_ids(CORPUS_FILES))
def test_corpus_parses(path: Path) -> None:
    g = parse_file(path)
    assert g.entry.instructions
    assert g.entry_name in {c.name for c in g.computations}


@pytest.mark.parametrize("path", CORPUS_FILES, ids=_ids(CORPUS_FILES))
def test_corpus_round_trip(path: Path) -> None:
    g = parse_file(path)
    text = print_hlo(g)
    g2 = parse_hlo(text, "printed")
    assert g2 == g
    assert print_hlo(g2) == text


# -- golden-ish ---------------------------------------------------------------------------------

def test_amx_k1_prints_tiled_layouts() -> None:
    g = parse_file(PAPER / "amx_k1.hlo")
    text = print_hlo(g)
    assert "{1,0:T(16,64)}" in text
    assert "{1,0:T(16,16)}" in text
    assert text.startswith("HloModule k1, entry_computation_layout={(")
    assert "ENTRY k1" in text and "ROOT dot.3 = s32[32,32]{1,0:T(16,16)} dot(" in text
    assert "%" not in text
    b = g.entry["B"].type
    assert b == TensorType(DTYPES["s8"], (32, 64), Layout((1, 0), (16, 64)))
    assert g.entry["A"].type.layout is None  # no layout written: none stored


def test_regions_printed_before_entry() -> None:
    g = parse_file(PAPER / "qkv_attention.hlo")
    text = print_hlo(g)
    assert text.index("reduce_add (") < text.index("ENTRY main")
    assert "to_apply=reduce_add" in text
    assert g.entry["sum"].attrs["to_apply"] == "reduce_add"
    assert g.entry["sum"].attrs["dimensions"] == (1,)


# -- syntax accepted ----------------------------------------------------------------------------

SMALL = """HloModule small

ENTRY main {
  a = s8[2,2] parameter(0)
  b = s8[2,2] parameter(1)
  ROOT c = s8[2,2] add(a, b)
}
"""


def test_comments_metadata_and_annotations_ignored() -> None:
    noisy = """HloModule small, is_scheduled=true, allow_spmd_sharding_propagation_to_output={true}, \
entry_computation_layout={(s8[2,2]{1,0}, s8[2,2]{1,0})->s8[2,2]{1,0}}
// a line comment
ENTRY %main (a: s8[2,2], b: s8[2,2]) -> s8[2,2] {  /* a block
   comment over lines */
  %a = s8[2,2] parameter(0), metadata={op_type="p" op_name="a" source_file="x.py" source_line=3}
  %b = s8[2,2] parameter(1), sharding={replicated}  // trailing
  ROOT %c = s8[2,2] add(s8[2,2] %a, s8[2,2]{1,0} %b), backend_config="{\\"k\\": [1, 2]}", \
frontend_attributes={_xla="x"}
}
"""
    assert parse_hlo(noisy) == parse_hlo(SMALL)


def test_last_computation_is_entry_without_keyword() -> None:
    text = """HloModule m
r {
  x = s8[] parameter(0)
  y = s8[] parameter(1)
  ROOT s = s8[] add(x, y)
}
main {
  a = s8[4] parameter(0)
  z = s8[] constant(0)
  ROOT out = s8[] reduce(a, z), dimensions={0}, to_apply=%r
}
"""
    g = parse_hlo(text)
    assert g.entry_name == "main"
    assert g.entry.root == "out"


def test_attribute_kinds() -> None:
    text = """HloModule m
ENTRY main {
  a = f32[4,6] parameter(0)
  z = f32[] constant(0)
  p = f32[6,15] pad(a, z), padding=1_1x-1_0_2
  s = f32[2,3] slice(a), slice={[0:4:2], [1:4]}
  i = s32[3,2] iota(), iota_dimension=1
  ROOT c = pred[4,6] compare(a, a), direction=LT, type=TOTALORDER
}
"""
    g = parse_hlo(text)
    e = g.entry
    assert e["p"].attrs["padding"] == ((1, 1, 0), (-1, 0, 2))
    assert e["s"].attrs["slice"] == ((0, 4, 2), (1, 4, 1))
    assert e["i"].attrs["iota_dimension"] == 1
    assert e["c"].attrs["direction"] == "LT" and e["c"].attrs["type"] == "TOTALORDER"
    assert e["a"].attrs["index"] == 0
    printed = print_hlo(g)
    assert "padding=1_1_0x-1_0_2" in printed and "slice={[0:4:2], [1:4]}" in printed
    assert parse_hlo(printed) == g


def test_literals_round_trip_bit_exactly() -> None:
    text = """HloModule lits
ENTRY main {
  f = f32[8] constant({-0, 1e-45, nan, -nan, nan(0x1), inf, -inf, 3.4028234663852886e+38})
  h = f16[3] constant({6.1e-05, 65504, -5.96e-08})
  b = bf16[2,2] constant({ {1.5, -0.0}, {3.0078125, nan(0x3)} })
  d = f64[3] constant({0.1, 5e-324, -1.7976931348623157e+308})
  p = pred[3] constant({true, false, 1})
  u = u64[2] constant({18446744073709551615, 0})
  s = s8[2] constant({-128, 127})
  e = s32[2,0] constant({ {}, {} })
  ROOT sc = f32[] constant(-1.5)
}
"""
    g = parse_hlo(text)
    bits = g.entry["f"].attrs["literal"].to_array().view(np.uint32)
    assert [int(x) for x in bits] == [0x80000000, 1, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7F800000,
                                      0xFF800000, 0x7F7FFFFF]
    assert g.entry["sc"].attrs["literal"].shape == ()
    assert g.entry["e"].attrs["literal"].shape == (2, 0)
    printed = print_hlo(g)
    assert "nan(0x1)" in printed and "-nan" in printed and "-0.0" in printed
    g2 = parse_hlo(printed)
    assert g2 == g
    for name in ("f", "h", "b", "d", "p", "u", "s"):
        assert g2.entry[name].attrs["literal"].data == g.entry[name].attrs["literal"].data


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([d for d in DTYPES.values() if d.is_float]), st.integers(min_value=0))
def test_every_float_bit_pattern_round_trips(dt, raw: int) -> None:  # type: ignore[no-untyped-def]
    bits = raw % (1 << dt.bits)
    text = f"HloModule m\nENTRY e {{\n  ROOT c = {dt.name}[] constant({format_scalar(bits, dt)})\n}}\n"
    lit = parse_hlo(text).entry["c"].attrs["literal"]
    assert int(np.frombuffer(lit.data, dtype=dt.uint_np)[0]) == bits


# -- errors -------------------------------------------------------------------------------------

def _error(text: str, kind: type[AccvError]) -> AccvError:
    with pytest.raises(AccvError) as info:
        parse_hlo(text, "t.hlo")
    err = info.value
    assert type(err) is kind, f"{type(err).__name__}: {err}"
    assert "\n" not in str(err)
    return err


def _at(err: AccvError, line: int, col: int) -> None:
    assert err.loc is not None, str(err)
    assert (err.loc.file, err.loc.line, err.loc.col) == ("t.hlo", line, col), str(err)
    assert str(err).startswith(f"t.hlo:{line}:{col}: ")


def test_error_truncated_file() -> None:
    text = SMALL[: SMALL.index("  ROOT")]
    err = _error(text, HloSyntaxError)
    assert "unexpected end of file, expected '}'" in err.reason
    _at(err, 6, 1)


def test_error_truncated_mid_instruction() -> None:
    text = SMALL[: SMALL.index("add(a") + 5]
    err = _error(text, HloSyntaxError)
    assert "unexpected end of file" in err.reason


def test_error_unknown_op() -> None:
    err = _error(SMALL.replace("add(a, b)", "frobnicate(a, b)"), GraphError)
    assert "unknown operator 'frobnicate'" in err.reason
    _at(err, 6, 8)


def test_error_wrong_arity() -> None:
    err = _error(SMALL.replace("add(a, b)", "add(a, b, a)"), GraphError)
    assert "add takes 2 operands, got 3" in err.reason
    _at(err, 6, 8)


def test_error_shape_mismatch() -> None:
    err = _error(SMALL.replace("ROOT c = s8[2,2]", "ROOT c = s8[2,3]"), GraphError)
    assert "does not match" in err.reason
    _at(err, 6, 8)


def test_error_undefined_name() -> None:
    err = _error(SMALL.replace("add(a, b)", "add(a, q)"), GraphError)
    assert "operand 'q' is not defined" in err.reason
    _at(err, 6, 8)


def test_error_bad_layout() -> None:
    err = _error(SMALL.replace("b = s8[2,2] ", "b = s8[2,2]{1,1} "), HloSyntaxError)
    assert "bad layout" in err.reason
    _at(err, 5, 14)
    err = _error(SMALL.replace("b = s8[2,2] ", "b = s8[2,2]{0} "), HloSyntaxError)
    assert "bad layout" in err.reason
    _at(err, 5, 14)


@pytest.mark.parametrize("layout", ["{1,0:T(8,128)(2,1)}", "{1,0:T(8,128)E(32)}", "{1,0:S(1)E(8)}",
                                    "{1,0:T(2,*)}", "{1,0:E(16)}"])
def test_error_unsupported_layout_feature(layout: str) -> None:
    err = _error(SMALL.replace("b = s8[2,2] ", f"b = s8[2,2]{layout} "), HloSyntaxError)
    assert "unsupported layout feature" in err.reason
    assert err.loc is not None and err.loc.line == 5


def test_error_unknown_dtype() -> None:
    err = _error(SMALL.replace("b = s8[2,2] ", "b = q7[2,2] "), HloSyntaxError)
    assert "unknown dtype 'q7'" in err.reason
    _at(err, 5, 7)


def test_error_bad_literal_count() -> None:
    text = SMALL.replace("  ROOT c", "  k = s8[2,2] constant({ {1, 2}, {3, 4, 5} })\n  ROOT c")
    err = _error(text, HloSyntaxError)
    assert "bad literal" in err.reason and "3 elements" in err.reason
    _at(err, 6, 34)
    err = _error(SMALL.replace("  ROOT c", "  k = s8[3] constant({1, 2})\n  ROOT c"), HloSyntaxError)
    _at(err, 6, 22)


@pytest.mark.parametrize("lit,why", [("{300, 1}", "out of range"), ("{1.5, 1}", "not an integer"),
                                     ("{true, 1}", "not an integer")])
def test_error_bad_literal_value(lit: str, why: str) -> None:
    err = _error(SMALL.replace("  ROOT c", f"  k = s8[2] constant({lit})\n  ROOT c"), HloSyntaxError)
    assert why in err.reason
    _at(err, 6, 23)


def test_error_duplicate_name() -> None:
    err = _error(SMALL.replace("b = s8[2,2] parameter(1)", "a = s8[2,2] parameter(1)"), GraphError)
    assert "defined twice" in err.reason
    _at(err, 5, 3)


def test_error_attribute_missing() -> None:
    err = _error(SMALL.replace("add(a, b)", "transpose(a)"), GraphError)
    assert "needs attribute 'dimensions'" in err.reason
    _at(err, 6, 8)


def test_error_unknown_attribute() -> None:
    err = _error(SMALL.replace("add(a, b)", "add(a, b), frob={1,2}"), GraphError)
    assert "no attribute 'frob'" in err.reason


def test_error_bad_token() -> None:
    err = _error(SMALL.replace("c = s8[2,2] add", "c = s8[2,2] + add"), HloSyntaxError)
    assert "expected an opcode" in err.reason
    _at(err, 6, 20)


def test_error_missing_header() -> None:
    err = _error(SMALL.replace("HloModule small", "Module small"), HloSyntaxError)
    _at(err, 1, 1)


# -- fuzz ---------------------------------------------------------------------------------------

FUZZ_SOURCES = [PAPER / n for n in ("amx_k1.hlo", "qkv_attention.hlo", "amx_k3.hlo")] + [
    CORPUS / "act-gemmini-swlib" / "reduce.hlo", CORPUS / "act-gemmini-fuzz" / "fuzz_000.gen.hlo"]
FUZZ_TEXTS = [p.read_text() for p in FUZZ_SOURCES]
_ALPHABET = "{}()[],=:%-_.x0123456789 \n/*\"abcfinsuT" + "\x00\u00e9"


def _parse_only_accv_errors(text: str) -> None:
    try:
        parse_hlo(text, "fuzz.hlo")
    except AccvError as e:
        assert "\n" not in str(e)
        if e.loc is not None:
            assert e.loc.line >= 1 and e.loc.col >= 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FUZZ_TEXTS), st.floats(min_value=0.0, max_value=1.0))
def test_fuzz_truncation(text: str, frac: float) -> None:
    _parse_only_accv_errors(text[: int(len(text) * frac)])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FUZZ_TEXTS), st.lists(st.tuples(st.floats(min_value=0.0, max_value=1.0),
                                                        st.sampled_from(_ALPHABET)), min_size=1, max_size=4))
def test_fuzz_substitution(text: str, edits: list[tuple[float, str]]) -> None:
    chars = list(text)
    for frac, ch in edits:
        chars[min(int(len(chars) * frac), len(chars) - 1)] = ch
    _parse_only_accv_errors("".join(chars))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(FUZZ_TEXTS), st.floats(min_value=0.0, max_value=1.0), st.text(_ALPHABET, max_size=6))
def test_fuzz_insertion(text: str, frac: float, ins: str) -> None:
    i = int(len(text) * frac)
    _parse_only_accv_errors(text[:i] + ins + text[i:])


# -- what XLA prints for a whole module (jaxlib's dumps) -----------------------------------------

JAX_MODULE = """HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[4]{0}, f32[4]{0})->f32[4]{0}}, \
allow_spmd_sharding_propagation_to_parameters={true,true}

FileNames
1 "scripts/jax_dumps.py"

FunctionNames
1 "<module>"

FileLocations
1 {file_name_id=1 function_name_id=1 line=541 end_line=541 column=13 end_column=19}

StackFrames
1 {file_location_id=1 parent_frame_id=1}


%fused_computation (param_0: f32[4], param_1: f32[4]) -> f32[4] {
  %param_0 = f32[4]{0} parameter(0)
  %param_1 = f32[4]{0} parameter(1)
  %unused = f32[4]{0} negate(%param_0)
  ROOT %add.0 = f32[4]{0} add(%param_0, %param_1), metadata={op_name="jit(f)/add" stack_frame_id=1}
}

relu.1 {
  x.2 = f32[4]{0} parameter(0)
  c = f32[] constant(0)
  b = f32[4]{0} broadcast(c), dimensions={}
  ROOT m = f32[4]{0} maximum(x.2, b)
}

ENTRY %main.3 (x.1: f32[4], y.1: f32[4]) -> f32[4] {
  %x.1 = f32[4]{0:S(1)} parameter(0), sharding={replicated}
  %y.1 = f32[4]{0} parameter(1)
  %fusion = f32[4]{0} fusion(%x.1, %y.1), kind=kCustom, calls=%fused_computation, \
backend_config={"outer_dimension_partitions":["2"]}
  ROOT %call = f32[4]{0} call(%fusion), to_apply=relu.1, frontend_attributes={xla_cpu_small_call="true"}
}
"""


def test_jax_module_with_tables_fusion_and_call_is_inlined() -> None:
    g = parse_hlo(JAX_MODULE)
    assert [c.name for c in g.computations] == ["main.3"]
    ops = [i.opcode for i in g.entry.instructions]
    assert ops == ["parameter", "parameter", "add", "constant", "broadcast", "maximum"]  # dead negate dropped
    assert g.entry.root_instruction.opcode == "maximum"
    x = np.array([1, -2, 3, -4], np.float32)
    from semantics.interp import evaluate
    (r,) = evaluate(g, [x, x])
    assert r.tolist() == [2, 0, 6, 0]


LOOP = """HloModule loop
cond {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(COUNT)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[3]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  v = f32[3] get-tuple-element(s), index=1
  one = s32[] constant(1)
  i2 = s32[] add(i, one)
  v2 = f32[3] add(v, v)
  ROOT t = (s32[], f32[3]) tuple(i2, v2)
}
t_branch {
  p = (f32[3]) parameter(0)
  v = f32[3] get-tuple-element(p), index=0
  ROOT r = (f32[3]) tuple(v)
}
f_branch {
  p = (f32[3]) parameter(0)
  v = f32[3] get-tuple-element(p), index=0
  n = f32[3] negate(v)
  ROOT r = (f32[3]) tuple(n)
}
ENTRY main {
  x = f32[3] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[3]) tuple(z, x)
  w = (s32[], f32[3]) while(t), condition=cond, body=body
  v = f32[3] get-tuple-element(w), index=1
  zero = f32[] constant(0)
  s = f32[] reduce(v, zero), dimensions={0}, to_apply=add_r
  p = pred[] compare(s, zero), direction=GT
  arg = (f32[3]) tuple(v)
  c = (f32[3]) conditional(p, arg, arg), true_computation=t_branch, false_computation=f_branch
  ROOT o = f32[3] get-tuple-element(c), index=0
}
add_r {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
"""


def test_while_with_constant_trip_count_is_unrolled_and_conditional_selects() -> None:
    from semantics.interp import evaluate
    # the region add_r is defined after its use: regions are built on first use
    g = parse_hlo(LOOP.replace("COUNT", "3"))
    assert "while" not in {i.opcode for i in g.entry.instructions}
    # 3 trips; the counter's adds are folded away (dead once the loop is unrolled)
    assert sum(i.opcode == "add" for i in g.entry.instructions) == 3
    x = np.array([1, -2, 3], np.float32)
    (r,) = evaluate(g, [x])
    assert r.tolist() == [8, -16, 24]
    (r,) = evaluate(g, [-x])
    assert r.tolist() == [8, -16, 24]   # sum < 0: the false branch negates


def test_while_with_runtime_condition_is_an_error_naming_it() -> None:
    text = LOOP.replace("""  n = s32[] constant(COUNT)
  ROOT lt = pred[] compare(i, n), direction=LT""", """  v = f32[3] get-tuple-element(s), index=1
  k = f32[] constant(0)
  r = f32[] reduce(v, k), dimensions={0}, to_apply=add_r
  ROOT lt = pred[] compare(r, k), direction=LT""")
    err = _error(text, GraphError)
    assert "while loop 'w'" in err.reason and "not a compile-time constant" in err.reason
    _at(err, 34, 3)


def test_call_errors_keep_locations() -> None:
    text = JAX_MODULE.replace("to_apply=relu.1", "to_apply=relu.9")
    err = _error(text, GraphError)
    assert "relu.9" in err.reason
    _at(err, 34, 8)
    text = JAX_MODULE.replace("ROOT m = f32[4]{0} maximum(x.2, b)", "ROOT m = f32[4]{0} maximum(x.2, q)")
    err = _error(text, GraphError)
    assert "operand 'q' is not defined" in err.reason
    _at(err, 27, 8)
    err = _error(JAX_MODULE.replace('1 "<module>"', '1 "<module>" )'), HloSyntaxError)
    assert "expected a computation name" in err.reason
    _at(err, 7, 14)


def test_memory_space_in_a_layout_is_accepted() -> None:
    g = parse_hlo(SMALL.replace("b = s8[2,2] ", "b = s8[2,2]{1,0:T(2,2)S(1)} "))
    assert g.entry["b"].type.layout == Layout((1, 0), (2, 2))
