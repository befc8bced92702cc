"""convert identities: round trips, composed conversions, saturation, sign/zero extension.

Conversion rules (docs/semantics.md): int->int keeps the low bits and sign/zero-extends;
int->float rounds once (int->bf16 twice, through f32); f32->bf16 and f32<->f16 keep subnormals;
f32->f64 reads a subnormal as zero (DAZ); float->int truncates and saturates, NaN -> 0;
x->pred is ``x != 0``; pred->number is 0/1. Hence:

* ``T -> W -> T`` is the identity when every T value is exactly a W value: narrow ints through a
  wider int or through f32/f64 (|x| < 2^24), pred through anything, bf16/f16 through f32.
  ``f32 -> bf16 -> f32`` is not (rounding), nor ``s32 -> f32 -> s32`` (2^24 + 1), nor
  ``f32 -> f64 -> f32`` (DAZ flushes a subnormal): see tests/rewrite_rules/test_wrong_rules.py.
* an int->int widening before an int->float conversion changes nothing (one exact step).
* a clamp to T's range in a wider type before the narrowing conversion of a widened T value is
  the identity (the Gemmini saturation pattern on already-narrow data).
"""

from __future__ import annotations

from .dsl import ALL, INTS, NUM, clamp, compare, convert, full, op, rule

F = "convert"
ELEM = (1,)
NARROW = ("s8", "u8", "s16", "u16")        # exactly representable in f32 (|x| < 2^24)
NARROW32 = NARROW + ("s32", "u32")         # exactly representable in f64 and s64

__all__: list[str] = []


@rule("convert(x, T) => x (same type)", family=F, dtypes=ALL)
def _same(c):
    """A conversion to the operand's own type is the identity."""
    x = c.tensor("x")
    return convert(x, c.dtype.name), x, []


@rule("convert(convert(x, s64), T) => x", family=F, dtypes=("pred",) + NARROW32)
def _via_s64(c):
    """Widening to s64 and back is the identity (pred: 0/1 then != 0)."""
    x = c.tensor("x")
    return convert(convert(x, "s64"), c.dtype.name), x, []


@rule("convert(convert(x, s32), T) => x", family=F, dtypes=("pred",) + NARROW)
def _via_s32(c):
    """Widening to s32 and back is the identity for 8- and 16-bit integers and pred."""
    x = c.tensor("x")
    return convert(convert(x, "s32"), c.dtype.name), x, []


@rule("convert(convert(x, signflip(T)), T) => x", family=F, dtypes=INTS)
def _signflip(c):
    """Reinterpreting an integer as the other signedness of the same width and back is the identity."""
    x = c.tensor("x")
    other = ("u" if c.dtype.name[0] == "s" else "s") + c.dtype.name[1:]
    return convert(convert(x, other), c.dtype.name), x, []


@rule("convert(convert(x, f32), T) => x", family=F, dtypes=("pred",) + NARROW + ("bf16", "f16"), ranks=ELEM,
      note="s32/u32 false (2^24 + 1 rounds); f64 false (range); bf16/f16: exact, subnormals kept, "
           "NaN stays NaN (quiet bit)")
def _via_f32(c):
    """Every pred, 8/16-bit integer, bf16 and f16 value is exactly an f32 value."""
    x = c.tensor("x")
    return convert(convert(x, "f32"), c.dtype.name), x, []


@rule("convert(convert(x, f64), T) => x", family=F, dtypes=("pred",) + NARROW32 + ("f16",), ranks=ELEM,
      note="f32 false: f32 -> f64 flushes subnormals (DAZ); bf16 likewise (bf16 subnormals); "
           "s32/u32: z3 may time out at 20 s (true: |x| < 2^53)")
def _via_f64(c):
    """Every pred, integer up to 32 bits and f16 value survives a trip through f64."""
    x = c.tensor("x")
    return convert(convert(x, "f64"), c.dtype.name), x, []


@rule("convert(convert(x, s64), f32) => convert(x, f32)", family=F, dtypes=NARROW32 + ("pred",), ranks=ELEM)
def _widen_then_f32(c):
    """An exact integer widening before the int->f32 rounding changes nothing."""
    x = c.tensor("x")
    return convert(convert(x, "s64"), "f32"), convert(x, "f32"), []


@rule("convert(convert(x, s32), f32) => convert(x, f32)", family=F, dtypes=NARROW + ("pred",), ranks=ELEM)
def _widen32_then_f32(c):
    """Widening an 8/16-bit integer to s32 before converting to f32 changes nothing."""
    x = c.tensor("x")
    return convert(convert(x, "s32"), "f32"), convert(x, "f32"), []


@rule("convert(convert(x, f32), s32) => convert(x, s32)", family=F, dtypes=NARROW + ("pred",), ranks=ELEM)
def _f32_then_s32(c):
    """An exact detour through f32 does not change an int->s32 conversion of a narrow integer."""
    x = c.tensor("x")
    return convert(convert(x, "f32"), "s32"), convert(x, "s32"), []


@rule("convert(clamp(MIN_T, convert(x, s32), MAX_T), T) => x", family=F, dtypes=NARROW)
def _sat_roundtrip(c):
    """Saturating a widened narrow integer to its own range and narrowing again is the identity."""
    x = c.tensor("x")
    b = c.dtype.bits
    lo, hi = (-(1 << (b - 1)), (1 << (b - 1)) - 1) if c.dtype.is_signed else (0, (1 << b) - 1)
    w = convert(x, "s32")
    return convert(clamp(full(lo, x.shape, "s32"), w, full(hi, x.shape, "s32")), c.dtype.name), x, []


@rule("convert(convert(x, s8), T) => sign-extend low byte (shift left, arithmetic shift right)", family=F,
      dtypes=("s16", "s32", "s64"))
def _sext8(c):
    """Truncating to s8 and widening again sign-extends the low byte."""
    x = c.tensor("x")
    k = full(c.dtype.bits - 8, x.shape)
    return (convert(convert(x, "s8"), c.dtype.name),
            op("shift-right-arithmetic", op("shift-left", x, k), k), [])


@rule("convert(convert(x, u8), T) => and(x, 255)", family=F, dtypes=("s16", "u16", "s32", "u32", "s64", "u64"))
def _zext8(c):
    """Truncating to u8 and widening again keeps the low byte."""
    x = c.tensor("x")
    return convert(convert(x, "u8"), c.dtype.name), op("and", x, full(255, x.shape)), []


@rule("convert(convert(x, s16), T) => sign-extend low half (shifts)", family=F, dtypes=("s32", "s64"))
def _sext16(c):
    """Truncating to s16 and widening again sign-extends the low 16 bits."""
    x = c.tensor("x")
    k = full(c.dtype.bits - 16, x.shape)
    return (convert(convert(x, "s16"), c.dtype.name),
            op("shift-right-arithmetic", op("shift-left", x, k), k), [])


@rule("convert(x, pred) => compare(x, 0, NE)", family=F, dtypes=NUM, ranks=ELEM,
      note="floats included: both read a subnormal as zero (DAZ) and NaN != 0")
def _to_pred(c):
    """Conversion to pred is a comparison with zero."""
    x = c.tensor("x")
    return convert(x, "pred"), compare(x, full(0, x.shape), "NE"), []


@rule("convert(negate(x), f64) => negate(convert(x, f64))", family=F, dtypes=("bf16", "f16", "f32"), ranks=ELEM,
      note="f32: DAZ flushes +-subnormals to the zero of their sign, so negation commutes")
def _neg_to_f64(c):
    """Widening a float to f64 commutes with negation (sign-symmetric rounding and DAZ)."""
    x = c.tensor("x")
    return convert(op("negate", x), "f64"), op("negate", convert(x, "f64")), []


@rule("convert(negate(x), f32) => negate(convert(x, f32))", family=F, dtypes=("bf16", "f16", "f64"), ranks=ELEM,
      note="f64: RNE and FTZ are sign-symmetric")
def _neg_to_f32(c):
    """Converting a float to f32 commutes with negation."""
    x = c.tensor("x")
    return convert(op("negate", x), "f32"), op("negate", convert(x, "f32")), []


@rule("convert(convert(x, f32), bf16) => convert(x, bf16)", family=F, dtypes=INTS + ("f64",), ranks=ELEM,
      note="int->bf16 and f64->bf16 are defined through f32 (two roundings)")
def _bf16_via_f32(c):
    """int/f64 -> bf16 is the conversion through f32."""
    x = c.tensor("x")
    return convert(convert(x, "f32"), "bf16"), convert(x, "bf16"), []


@rule("convert(abs(x), f32) => abs(convert(x, f32))", family=F, dtypes=("bf16", "f16", "f64"), ranks=ELEM)
def _abs_to_f32(c):
    """Converting a float to f32 commutes with abs."""
    x = c.tensor("x")
    return convert(op("abs", x), "f32"), op("abs", convert(x, "f32")), []


@rule("convert(convert(x, f32), T) => convert(x, T) for bf16 -> f32 -> f16/f64", family=F,
      dtypes=("bf16",), ranks=ELEM, note="T fixed to f64 here: bf16 -> f64 goes through f32")
def _bf16_f64(c):
    """bf16 -> f64 equals bf16 -> f32 -> f64."""
    x = c.tensor("x")
    return convert(convert(x, "f32"), "f64"), convert(x, "f64"), []



