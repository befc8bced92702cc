"""Rules that let Gemmini's instructions compute min/max/clamp/negate/reverse/saturation.

The right sides are written exactly as :mod:`compilers.targets.gemmini` states its instruction
semantics, so a left side matched in a program can be replaced by the instruction:

* mvin with scale ``s``: ``convert_s8(clamp(-128.0, round-nearest-even(convert_f32(x) * s), 127.0))``;
* mvout from the accumulator with acc scale ``s`` and ReLU flag ``r``: the same scaling and int8
  saturation, then ``maximum(., broadcast(-128 * (1 - r)))`` (ReLU after the clip);
* accumulate: ``y + old * accumulate``; the array's 20-bit wrap: ``(v << 12) >>a 12``.

What is and is not true (each false variant is in tests/rewrite_rules/test_wrong_rules.py):

* An s32 value converted to f32 is rounded when |y| > 2^24, yet the mvout saturation with scale
  1.0 is still exactly ``convert_s8(clamp(-128, y, 127))`` for EVERY s32 y: a rounded value is far
  outside [-128, 127] and saturates the same way. Without the saturation (``s32 -> f32 -> s32``)
  the trip is only the identity for narrow integers (|x| < 2^24).
* s8 negate wraps (``negate(-128) = -128``) while the mvin scale -1.0 path saturates
  (``-128 -> 127``): negate is NOT mvin(-1.0) on s8. The true statements are the saturating negate
  ``convert_s8(clamp(-128, negate(convert_s32(x)), 127))`` and ``negate(maximum(x, -127))`` (the
  value restriction x != -128 expressed structurally by a clamp).
* Clamp bounds are written as broadcast constants of the operand's shape (the target's HLO uses
  scalar constants; same values). Scalar clamp bounds are avoided because the symbolic encoder
  marks such a clamp ill-formed (verif/symbolic.py takes args[0] as the shape reference), which
  would make a rule vacuously "proved". On s32 (the accumulator)
  ``negate(x) = x * (-1)`` holds with identical wraparound.
* ``dot(x, I) = x`` and ``reverse(x) = dot(x, J)`` (J the anti-identity) hold for integers; for
  floats they are false (``inf * 0 = NaN`` pollutes the sum; also ``-0.0 + 0.0 = +0.0``).
  The dot rules are proved by the bounded prover (dot has no symbolic-shape encoding).

Expected prover outcomes: the rules through the f32 scale path (mvin/mvout/round-nearest-even)
make z3 time out at the default 20 s (symbolic and bounded) on the 2-core machine; they are
recorded with ``note=`` and need ``accv prove gemmini --timeout 120``. Their truth is also checked
exhaustively over every 8/16-bit input and on s32 edge values by tests/rewrite_rules/test_families_arith.py.
"""

from __future__ import annotations

from .dsl import INTS, clamp, compare, convert, dot, full, iota, op, reverse, rule

F = "gemmini"
ELEM = (1,)
NARROW = ("s8", "u8", "s16", "u16")

__all__: list[str] = []


def _scale_to_s8(x, scale: float, shape):
    """Gemmini's mvin/mvout scaling: f32, multiply by the scale, round half to even, saturate to int8."""
    sh = shape
    sf = convert(x, "f32")
    sm = op("multiply", sf, full(scale, sh, "f32"))
    sr = op("round-nearest-even", sm)
    scl = clamp(full(-128.0, sh, "f32"), sr, full(127.0, sh, "f32"))
    return convert(scl, "s8")


def mvin(x, scale: float):
    """mvin to the scratchpad with ``scale`` (``x`` a tensor variable)."""
    return _scale_to_s8(x, scale, x.shape)


def mvout(y, scale: float, relu: int, shape=None):
    """mvout from the accumulator with acc scale ``scale`` and ReLU flag ``relu`` (after the clip)."""
    sh = y.shape if shape is None else shape
    return op("maximum", _scale_to_s8(y, scale, sh), full(-128 * (1 - relu), sh, "s8"))


def _sat_s8(y):
    """The plain HLO int8 saturation of an s32 value."""
    return convert(clamp(full(-128, y.shape, "s32"), y, full(127, y.shape, "s32")), "s8")


def wrap20(v, shape):
    """The array's 20-bit wrap of an s32 value of ``shape``: ``(v << 12) >>a 12``."""
    k = full(12, shape, "s32")
    return op("shift-right-arithmetic", op("shift-left", v, k), k)


def _eye(k, dtype: str):
    """The k x k identity matrix as a constant expression (iota == iota)."""
    return convert(compare(iota(0, [k, k], "s32"), iota(1, [k, k], "s32"), "EQ"), dtype)


def _anti_eye(k, dtype: str):
    """The k x k anti-identity J[i, j] = (i == k - 1 - j)."""
    return convert(compare(iota(0, [k, k], "s32"), reverse(iota(1, [k, k], "s32"), (1,)), "EQ"), dtype)


# --- moves ---------------------------------------------------------------------------------------

@rule("mvin(x, scale=1.0) => x on s8", family=F, dtypes=("s8",), ranks=ELEM,
      note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested")
def _mvin_one(c):
    """An s8 tensor moved in with scale 1.0 is unchanged (exact in f32, integral, within int8)."""
    x = c.tensor("x")
    return mvin(x, 1.0), x, []


@rule("convert_s8(round-nearest-even(convert_f32(x) * 1.0)) => x", family=F, dtypes=("s8",), ranks=ELEM,
      note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested")
def _rne_one(c):
    """Scaling an s8 value by 1.0 in f32 and rounding half to even reproduces it (no saturation needed)."""
    x = c.tensor("x")
    y = op("round-nearest-even", op("multiply", convert(x, "f32"), full(1.0, x.shape, "f32")))
    return convert(y, "s8"), x, []


@rule("convert_T(round-nearest-even(convert_f32(x) * 1.0)) => x (narrow ints)", family=F, dtypes=NARROW,
      ranks=ELEM, note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested; s32/u32 false: int32 -> f32 rounds |x| > 2^24")
def _rne_one_narrow(c):
    """The scale-1.0 f32 path is exact for every integer of at most 16 bits."""
    x = c.tensor("x")
    y = op("round-nearest-even", op("multiply", convert(x, "f32"), full(1.0, x.shape, "f32")))
    return convert(y, c.dtype.name), x, []


@rule("convert_s8(clamp(-128, y, 127)) => mvout(y, 1.0, relu=0)", family=F, dtypes=("s32",), ranks=ELEM,
      note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested; true for every s32 y although int32 -> f32 rounds |y| > 2^24: rounded values saturate alike")
def _sat_mvout(c):
    """int8 saturation of an s32 value is an mvout with acc scale 1.0 and no ReLU."""
    # helpers v2: clamp bounds broadcast (a rank-0-bound clamp is ill-formed for verif.symbolic)
    y = c.tensor("y")
    return _sat_s8(y), mvout(y, 1.0, 0), []


@rule("maximum(convert_s8(clamp(-128, y, 127)), 0) => mvout(y, 1.0, relu=1)", family=F, dtypes=("s32",),
      ranks=ELEM,
      note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested")
def _sat_relu_mvout(c):
    """Saturation followed by ReLU is an mvout with scale 1.0 and ReLU."""
    # helpers v2: clamp bounds broadcast (a rank-0-bound clamp is ill-formed for verif.symbolic)
    y = c.tensor("y")
    return op("maximum", _sat_s8(y), full(0, y.shape, "s8")), mvout(y, 1.0, 1), []


@rule("convert_s8(clamp(0, y, 127)) => mvout(y, 1.0, relu=1)", family=F, dtypes=("s32",), ranks=ELEM,
      note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested")
def _clamp0_mvout(c):
    """A clamp to [0, 127] then narrowing is the ReLU mvout (ReLU after the clip commutes)."""
    y = c.tensor("y")
    return convert(clamp(full(0, y.shape, "s32"), y, full(127, y.shape, "s32")), "s8"), mvout(y, 1.0, 1), []


@rule("maximum(x, 0) => mvout(convert_s32(x), 1.0, relu=1) on s8", family=F, dtypes=("s8",), ranks=ELEM,
      note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested")
def _relu_mvout(c):
    """ReLU of s8 data is an accumulator round trip with ReLU."""
    x = c.tensor("x")
    return op("maximum", x, full(0, x.shape)), mvout(convert(x, "s32"), 1.0, 1, x.shape), []


@rule("maximum(x, -128) => x on s8 (ReLU flag off)", family=F, dtypes=("s8",))
def _relu_off(c):
    """Gemmini's disabled ReLU, a maximum with -128, is the identity on int8."""
    x = c.tensor("x")
    return op("maximum", x, full(-128, x.shape)), x, []


@rule("convert_s8(clamp(-128, negate(convert_s32(x)), 127)) => mvin(x, -1.0) on s8", family=F, dtypes=("s8",),
      ranks=ELEM, note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested; negate(x) itself is NOT mvin(x, -1.0) on s8: -(-128) wraps to -128, mvin gives 127")
def _satneg_mvin(c):
    """Saturating negation of int8 data is an mvin with scale -1.0."""
    x = c.tensor("x")
    return convert(clamp(full(-128, x.shape, "s32"), op("negate", convert(x, "s32")), full(127, x.shape, "s32")), "s8"), \
        mvin(x, -1.0), []


@rule("negate(maximum(x, -127)) => mvin(x, -1.0) on s8", family=F, dtypes=("s8",), ranks=ELEM,
      note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested")
def _negmax_mvin(c):
    """Negation of s8 data kept off -128 (structurally, by a maximum) is an mvin with scale -1.0."""
    # helpers v2: clamp bounds broadcast (a rank-0-bound clamp is ill-formed for verif.symbolic)
    x = c.tensor("x")
    return op("negate", op("maximum", x, full(-127, x.shape))), mvin(x, -1.0), []


@rule("convert_s8(clamp(-128, convert_s32(x) * 2, 127)) => mvin(x, 2.0) on s8", family=F, dtypes=("s8",),
      ranks=ELEM,
      note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested")
def _satdouble_mvin(c):
    """Saturating doubling of int8 data is an mvin with scale 2.0."""
    x = c.tensor("x")
    d = op("multiply", convert(x, "s32"), full(2, x.shape, "s32"))
    return convert(clamp(full(-128, x.shape, "s32"), d, full(127, x.shape, "s32")), "s8"), mvin(x, 2.0), []


@rule("clamp(lo, x, hi) on s8 => mvout(clamp(lo, convert_s32(x), hi), 1.0, relu=0)", family=F, dtypes=("s8",),
      ranks=ELEM,
      note="z3 times out at 20 s (symbolic and bounded): prove with --timeout 120; exhaustively tested")
def _clamp_mvout(c):
    """An s8 clamp can be computed on the accumulator (s32) and moved out with scale 1.0."""
    x, lo, hi = c.tensor("x"), c.tensor("lo"), c.tensor("hi")
    return clamp(lo, x, hi), mvout(clamp(convert(lo, "s32"), convert(x, "s32"), convert(hi, "s32")), 1.0, 0, x.shape), []


# --- accumulator ---------------------------------------------------------------------------------

@rule("negate(x) => multiply(x, -1) on s32", family=F, dtypes=("s32",))
def _neg_acc(c):
    """On the s32 accumulator negation is a multiplication by -1 (both wrap: -MIN = MIN)."""
    x = c.tensor("x")
    return op("negate", x), op("multiply", x, full(-1, x.shape)), []


@rule("add(y, multiply(old, 0)) => y (accumulate=0)", family=F, dtypes=("s32",))
def _acc_zero(c):
    """A write without accumulation: the old accumulator contents are multiplied away."""
    y, old = c.tensor("y"), c.tensor("old")
    return op("add", y, op("multiply", old, full(0, y.shape))), y, []


@rule("add(y, old) => add(y, multiply(old, 1)) (accumulate=1)", family=F, dtypes=("s32",))
def _acc_one(c):
    """An accumulating write adds the old accumulator contents."""
    y, old = c.tensor("y"), c.tensor("old")
    return op("add", y, old), op("add", y, op("multiply", old, full(1, y.shape))), []


@rule("convert_s32(x) => wrap20(convert_s32(x)) (narrow ints)", family=F, dtypes=NARROW)
def _wrap20(c):
    """The array's 20-bit wrap leaves every 8/16-bit value unchanged."""
    x = c.tensor("x")
    w = convert(x, "s32")
    return w, wrap20(w, x.shape), []


# --- matrix forms --------------------------------------------------------------------------------

@rule("dot(x, I) => x", family=F, dtypes=INTS, ranks=(2,),
      note="bounded proof (dot); floats false: inf * 0 = NaN, -0.0 + 0.0 = +0.0")
def _dot_eye_right(c):
    """Multiplying by the identity matrix on the right is the identity (integers)."""
    x = c.tensor("x")
    k = x.shape[1]
    return dot(x, _eye(k, c.dtype.name), (1,), (0,)), x, []


@rule("dot(I, x) => x", family=F, dtypes=INTS, ranks=(2,), note="bounded proof (dot); floats false")
def _dot_eye_left(c):
    """Multiplying by the identity matrix on the left is the identity (integers)."""
    x = c.tensor("x")
    k = x.shape[0]
    return dot(_eye(k, c.dtype.name), x, (1,), (0,)), x, []


@rule("reverse(x) => dot(x, J) (vector)", family=F, dtypes=INTS, ranks=(1,),
      note="bounded proof (dot); floats false: inf * 0 = NaN in the other terms of the sum")
def _rev_dot(c):
    """Reversing a vector is a product with the anti-identity matrix (integers)."""
    x = c.tensor("x")
    n = x.shape[0]
    return reverse(x, (0,)), dot(x, _anti_eye(n, c.dtype.name), (0,), (0,)), []


@rule("reverse(x, dim 1) => dot(x, J)", family=F, dtypes=INTS, ranks=(2,), note="bounded proof (dot)")
def _rev_dot_rows(c):
    """Reversing the columns of a matrix is a product with the anti-identity on the right (integers)."""
    x = c.tensor("x")
    n = x.shape[1]
    return reverse(x, (1,)), dot(x, _anti_eye(n, c.dtype.name), (1,), (0,)), []


@rule("dot(convert_s32(a), convert_s32(b)) => wrap20(dot(...)) on s8, K <= 31", family=F, dtypes=("s8",),
      ranks=(2,), note="bounded proof (dot): sizes <= 3 only; the bound K <= 31 is the exact limit "
      "(K = 32 with every element -128 gives 2^19, which wraps), pinned by tests/rewrite_rules/test_gemmini_rules.py")
def _dot_wrap20(c):
    """An int8 x int8 product accumulated over K <= 31 terms fits the array's 20-bit partial sums:
    each term lies in [-16256, 16384], so a sum of K terms lies in [-K * 16256, K * 16384], inside
    [-2^19, 2^19) exactly when K <= 31, and the 20-bit wrap is the identity."""
    a, b = c.tensor("a"), c.tensor("b")
    p = dot(convert(a, "s32"), convert(b, "s32"), (1,), (0,))
    return p, wrap20(p, [a.shape[0], b.shape[1]]), [a.shape[1] <= 31]


@rule("add(dot(convert_s32(a), convert_s32(b)), convert_s32(d)) => wrap20(add(...)) on s8, K <= 31", family=F,
      dtypes=("s8",), ranks=(2,), note="bounded proof (dot): sizes <= 3 only; K <= 31 is the exact limit "
      "(31 * 16384 + 127 < 2^19 <= 32 * 16384)")
def _dot_bias_wrap20(c):
    """An int8 product over K <= 31 terms plus an int8 bias fits 20 bits: the bias moves the range by
    at most 128, and 31 * 16384 + 127 < 2^19, so the array's wrap of the biased sum is the identity."""
    a, b, d = c.tensor("a"), c.tensor("b"), c.tensor("d")
    p = op("add", dot(convert(a, "s32"), convert(b, "s32"), (1,), (0,)), convert(d, "s32"))
    return p, wrap20(p, [a.shape[0], b.shape[1]]), [a.shape[1] <= 31]


@rule("convert_s32(x) => dot(convert_s32(x), convert_s32(I)) on s8", family=F, dtypes=("s8",), ranks=(2,),
      note="bounded proof (dot)")
def _widen_eye(c):
    """Widening an int8 matrix equals multiplying it by the int8 identity in int32: how the array
    moves scratchpad data into the accumulator (or adds a bias to it) without a DRAM round trip."""
    x = c.tensor("x")
    k = x.shape[1]
    return convert(x, "s32"), dot(convert(x, "s32"), convert(_eye(k, "s8"), "s32"), (1,), (0,)), []
