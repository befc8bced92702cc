"""Arithmetic and bitwise identities (add, subtract, multiply, divide, negate, shifts, and/or/xor/not).

Every rule is claimed for exactly the dtypes on which it holds under the reference semantics
(docs/semantics.md), with "equal" meaning equal bits except that any NaN equals any NaN (SMT has one
NaN; :func:`verif.replay.outputs_differ`):

* Integers wrap (two's complement), so the ring laws (associativity, distributivity, ``x - x = 0``)
  hold for every integer type; ``add`` on ``pred`` is OR, so the additive laws also hold for pred.
* f32/f64/bf16 arithmetic reads subnormal operands as zero (DAZ) and flushes tiny results (FTZ).
  Hence ``x + 0``, ``x - 0``, ``x * 1``, ``x / 1`` are NOT ``x`` for f32/f64/bf16 (a subnormal ``x``
  becomes 0; ``x + 0`` also turns ``-0.0`` into ``+0.0``). f16 arithmetic is f32 arithmetic rounded
  once to f16, and every f16 value (subnormals included) is an f32 normal, so DAZ/FTZ never touch
  f16: the identities with a neutral element that preserves ``-0.0`` (``x * 1``, ``x / 1``,
  ``x - 0``, ``x + (-0.0)``) hold for f16, and are claimed for it.
* ``x * 0 = 0`` and ``x - x = 0`` fail for every float (NaN, infinities, ``-x * 0 = -0``).
* Exactly symmetric float laws hold for all floats: commutativity, ``negate(negate(x))``,
  ``x - y = x + negate(y)``, ``x + x = x * 2`` (both exact doubling, same DAZ/overflow),
  ``negate(x) * y = negate(x * y)`` (RNE, DAZ and FTZ are sign-symmetric).
* ``0 - x => negate(x)`` fails for floats (``0 - 0 = +0`` but ``negate(0) = -0``); the float variant
  ``(-0.0) - x => negate(x)`` holds only where DAZ does not apply (f16).
* Float add/multiply are not associative and do not distribute (see tests/rewrite_rules/test_wrong_rules.py).
"""

from __future__ import annotations

from .dsl import FLOATS, INTS, NUM, SINTS, full, op, rule

F = "arith"
INTS_PRED = ("pred",) + INTS
INTS_F16 = INTS + ("f16",)
#: elementwise rules claimed for floats are stated at rank 1 only: an elementwise pattern encodes the
#: same scalar formula at every index whatever the rank, and the float proofs cost 10-40 s each
ELEM = (1,)

__all__: list[str] = []


def _k(c, x, v, dtype=None):
    """A constant tensor of ``x``'s shape."""
    return full(v, x.shape, dtype)


# --- additive identities ------------------------------------------------------------------------

@rule("add(x, 0) => x", family=F, dtypes=INTS_PRED,
      note="false for floats: -0.0 + 0 = +0.0 and DAZ flushes subnormals (see test_wrong_rules)")
def _add_zero(c):
    """Adding zero is the identity on integers (and OR with false on pred)."""
    x = c.tensor("x")
    return op("add", x, _k(c, x, 0)), x, []


@rule("add(0, x) => x", family=F, dtypes=INTS_PRED)
def _zero_add(c):
    """Zero on the left of add is the identity on integers and pred."""
    x = c.tensor("x")
    return op("add", _k(c, x, 0), x), x, []


@rule("add(x, -0.0) => x", family=F, dtypes=("f16",), ranks=ELEM,
      note="bf16/f16/f32 symbolic proof is near the 20 s z3 timeout (then bounded 3); f32/f64/bf16 false: DAZ reads a subnormal x as 0")
def _add_negzero(c):
    """-0.0 is the additive identity of f16 (computed in f32, where no f16 value is subnormal)."""
    x = c.tensor("x")
    return op("add", x, _k(c, x, -0.0)), x, []


@rule("subtract(x, 0) => x", family=F, dtypes=INTS_F16, ranks=ELEM,
      note="bf16/f16/f32 symbolic proof is near the 20 s z3 timeout (then bounded 3); f32/f64/bf16 false: DAZ reads a subnormal x as 0")
def _sub_zero(c):
    """Subtracting zero is the identity on integers and f16 (x - (+0) = x + (-0))."""
    x = c.tensor("x")
    return op("subtract", x, _k(c, x, 0)), x, []


@rule("subtract(x, x) => 0", family=F, dtypes=INTS, note="floats false: inf - inf = NaN")
def _sub_self(c):
    """x - x is zero for integers."""
    x = c.tensor("x")
    return op("subtract", x, x), _k(c, x, 0), []


@rule("add(x, negate(x)) => 0", family=F, dtypes=INTS, note="floats false: inf + -inf = NaN")
def _add_neg_self(c):
    """x + (-x) is zero for integers, wraparound included (negate(MIN) = MIN and MIN + MIN = 0)."""
    x = c.tensor("x")
    return op("add", x, op("negate", x)), _k(c, x, 0), []


@rule("add(x, y) => add(y, x)", family=F, dtypes=("pred",) + NUM, ranks=ELEM)
def _add_comm(c):
    """add is commutative for every type (floats: IEEE add is exactly commutative)."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("add", x, y), op("add", y, x), []


@rule("add(add(x, y), z) => add(x, add(y, z))", family=F, dtypes=INTS_PRED,
      note="floats false: rounding makes add non-associative")
def _add_assoc(c):
    """Integer add is associative (wraparound is a ring)."""
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    return op("add", op("add", x, y), z), op("add", x, op("add", y, z)), []


@rule("add(x, x) => multiply(x, 2)", family=F, dtypes=NUM, ranks=ELEM,
      note="bf16/f16/f32 symbolic proof is near the 20 s z3 timeout (then bounded 3)")
def _double(c):
    """x + x is x * 2 for every numeric type (floats: both exact doublings with the same DAZ and overflow)."""
    x = c.tensor("x")
    return op("add", x, x), op("multiply", x, _k(c, x, 2)), []


@rule("subtract(x, y) => add(x, negate(y))", family=F, dtypes=INTS, ranks=ELEM,
      note="floats false: a NaN operand's sign (negate flips it; the reference returns the NaN operand "
           "with its own sign)")
def _sub_as_add(c):
    """Subtraction is addition of the negation (floats too: negate only flips the sign bit)."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("subtract", x, y), op("add", x, op("negate", y)), []


@rule("subtract(x, negate(y)) => add(x, y)", family=F, dtypes=INTS, ranks=ELEM,
      note="floats false: a NaN operand's sign (negate flips it; the reference returns the NaN operand "
           "with its own sign)")
def _sub_neg(c):
    """Subtracting a negation is adding."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("subtract", x, op("negate", y)), op("add", x, y), []


@rule("subtract(0, x) => negate(x)", family=F, dtypes=INTS,
      note="floats false: 0 - 0 = +0 but negate(0) = -0")
def _zero_sub(c):
    """0 - x is the (wrapping) negation on integers."""
    x = c.tensor("x")
    return op("subtract", _k(c, x, 0), x), op("negate", x), []


@rule("negate(negate(x)) => x", family=F, dtypes=NUM, ranks=ELEM)
def _neg_neg(c):
    """Double negation is the identity (ints wrap symmetrically; floats flip the sign bit twice)."""
    x = c.tensor("x")
    return op("negate", op("negate", x)), x, []


@rule("negate(subtract(x, y)) => subtract(y, x)", family=F, dtypes=INTS,
      note="floats false: -(0 - 0) = -0 but 0 - 0 = +0")
def _neg_sub(c):
    """Negating a difference swaps its operands (integers)."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("negate", op("subtract", x, y)), op("subtract", y, x), []


@rule("add(x, subtract(y, x)) => y", family=F, dtypes=INTS)
def _add_sub_cancel(c):
    """x + (y - x) cancels to y with wraparound."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("add", x, op("subtract", y, x)), y, []


@rule("add(subtract(x, y), y) => x", family=F, dtypes=INTS)
def _sub_add_cancel(c):
    """(x - y) + y cancels to x with wraparound."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("add", op("subtract", x, y), y), x, []


# --- multiplicative identities --------------------------------------------------------------------

@rule("multiply(x, 1) => x", family=F, dtypes=INTS_F16, ranks=ELEM,
      note="bf16/f16/f32 symbolic proof is near the 20 s z3 timeout (then bounded 3); f32/f64/bf16 false: DAZ reads a subnormal x as 0")
def _mul_one(c):
    """Multiplying by one is the identity on integers and f16."""
    x = c.tensor("x")
    return op("multiply", x, _k(c, x, 1)), x, []


@rule("multiply(1, x) => x", family=F, dtypes=INTS_F16, ranks=ELEM,
      note="bf16/f16/f32 symbolic proof is near the 20 s z3 timeout (then bounded 3)")
def _one_mul(c):
    """One on the left of multiply is the identity on integers and f16."""
    x = c.tensor("x")
    return op("multiply", _k(c, x, 1), x), x, []


@rule("multiply(x, 0) => 0", family=F, dtypes=INTS, note="floats false: NaN * 0, inf * 0, -1 * 0 = -0")
def _mul_zero(c):
    """Multiplying by zero gives zero on integers."""
    x = c.tensor("x")
    return op("multiply", x, _k(c, x, 0)), _k(c, x, 0), []


@rule("multiply(x, -1) => negate(x)", family=F, dtypes=SINTS, ranks=ELEM,
      note="unsigned: -1 is not a value of the type; floats false: a NaN x keeps its sign in the multiply, "
           "negate flips it (f32/f64/bf16 also: DAZ of a subnormal x gives -0)")
def _mul_minus_one(c):
    """Multiplying by -1 is negation (signed ints wrap alike: -MIN = MIN)."""
    x = c.tensor("x")
    return op("multiply", x, _k(c, x, -1)), op("negate", x), []


@rule("multiply(x, y) => multiply(y, x)", family=F, dtypes=NUM, ranks=ELEM)
def _mul_comm(c):
    """multiply is commutative for every numeric type."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("multiply", x, y), op("multiply", y, x), []


@rule("multiply(multiply(x, y), z) => multiply(x, multiply(y, z))", family=F, dtypes=INTS,
      note="floats false: rounding")
def _mul_assoc(c):
    """Integer multiply is associative modulo 2^n."""
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    return op("multiply", op("multiply", x, y), z), op("multiply", x, op("multiply", y, z)), []


@rule("multiply(x, add(y, z)) => add(multiply(x, y), multiply(x, z))", family=F, dtypes=INTS,
      note="floats false: rounding")
def _distrib_left(c):
    """Integer multiply distributes over add modulo 2^n."""
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    return op("multiply", x, op("add", y, z)), op("add", op("multiply", x, y), op("multiply", x, z)), []


@rule("multiply(subtract(x, y), z) => subtract(multiply(x, z), multiply(y, z))", family=F, dtypes=INTS)
def _distrib_sub(c):
    """Integer multiply distributes over subtract modulo 2^n."""
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    return (op("multiply", op("subtract", x, y), z),
            op("subtract", op("multiply", x, z), op("multiply", y, z)), [])


@rule("multiply(negate(x), y) => negate(multiply(x, y))", family=F, dtypes=INTS, ranks=ELEM,
      note="floats false: a NaN operand's sign (negate flips it; the reference returns the NaN operand "
           "with its own sign)")
def _neg_mul(c):
    """A negated factor can be pulled out (floats: RNE, DAZ and FTZ are sign-symmetric)."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("multiply", op("negate", x), y), op("negate", op("multiply", x, y)), []


@rule("multiply(negate(x), negate(y)) => multiply(x, y)", family=F, dtypes=INTS, ranks=ELEM,
      note="floats false: a NaN operand's sign (negate flips it; the reference returns the NaN operand "
           "with its own sign)")
def _neg_mul_neg(c):
    """Two negated factors cancel."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("multiply", op("negate", x), op("negate", y)), op("multiply", x, y), []


@rule("divide(x, 1) => x", family=F, dtypes=INTS_F16, ranks=ELEM,
      note="bf16/f16/f32 symbolic proof is near the 20 s z3 timeout (then bounded 3); f32/f64/bf16 false: DAZ reads a subnormal x as 0")
def _div_one(c):
    """Dividing by one is the identity on integers (MIN / 1 = MIN) and f16."""
    x = c.tensor("x")
    return op("divide", x, _k(c, x, 1)), x, []


@rule("remainder(x, 1) => 0", family=F, dtypes=INTS, note="floats false: fmod(inf, 1) = NaN, fmod(-3, 1) = -0")
def _rem_one(c):
    """Integer remainder by one is zero (the sign of the dividend on a zero result is lost)."""
    x = c.tensor("x")
    return op("remainder", x, _k(c, x, 1)), _k(c, x, 0), []


@rule("abs(negate(x)) => abs(x)", family=F, dtypes=SINTS + FLOATS, ranks=ELEM,
      note="unsigned false: abs is the identity there but negate wraps (abs(-1) = 255 on u8)")
def _abs_neg(c):
    """abs ignores a negation (ints: abs(MIN) = MIN = abs(-MIN); floats: sign-bit operations)."""
    x = c.tensor("x")
    return op("abs", op("negate", x)), op("abs", x), []


@rule("abs(abs(x)) => abs(x)", family=F, dtypes=NUM, ranks=ELEM)
def _abs_abs(c):
    """abs is idempotent (ints: abs(MIN) = MIN is a fixed point)."""
    x = c.tensor("x")
    return op("abs", op("abs", x)), op("abs", x), []


# --- shifts ---------------------------------------------------------------------------------------

@rule("shift-left(x, 0) => x", family=F, dtypes=INTS)
def _shl_zero(c):
    """A left shift by zero is the identity."""
    x = c.tensor("x")
    return op("shift-left", x, _k(c, x, 0)), x, []


@rule("shift-right-logical(x, 0) => x", family=F, dtypes=INTS)
def _shrl_zero(c):
    """A logical right shift by zero is the identity."""
    x = c.tensor("x")
    return op("shift-right-logical", x, _k(c, x, 0)), x, []


@rule("shift-right-arithmetic(x, 0) => x", family=F, dtypes=INTS)
def _shra_zero(c):
    """An arithmetic right shift by zero is the identity."""
    x = c.tensor("x")
    return op("shift-right-arithmetic", x, _k(c, x, 0)), x, []


@rule("shift-left(x, 1) => add(x, x)", family=F, dtypes=INTS)
def _shl_one(c):
    """A left shift by one is doubling (both wrap)."""
    x = c.tensor("x")
    return op("shift-left", x, _k(c, x, 1)), op("add", x, x), []


# --- bitwise / logical ----------------------------------------------------------------------------

@rule("not(not(x)) => x", family=F, dtypes=INTS_PRED)
def _not_not(c):
    """Double complement is the identity."""
    x = c.tensor("x")
    return op("not", op("not", x)), x, []


@rule("and(x, x) => x", family=F, dtypes=INTS_PRED)
def _and_self(c):
    """and is idempotent."""
    x = c.tensor("x")
    return op("and", x, x), x, []


@rule("or(x, x) => x", family=F, dtypes=INTS_PRED)
def _or_self(c):
    """or is idempotent."""
    x = c.tensor("x")
    return op("or", x, x), x, []


@rule("xor(x, x) => 0", family=F, dtypes=INTS_PRED)
def _xor_self(c):
    """x xor x is zero (false on pred)."""
    x = c.tensor("x")
    return op("xor", x, x), _k(c, x, 0), []


@rule("and(x, 0) => 0", family=F, dtypes=INTS_PRED)
def _and_zero(c):
    """and with zero is zero."""
    x = c.tensor("x")
    return op("and", x, _k(c, x, 0)), _k(c, x, 0), []


@rule("and(0, x) => 0", family=F, dtypes=INTS_PRED)
def _zero_and(c):
    """and with zero on the left is zero (a mask of 0 bits: Gemmini's rounding shift by 0)."""
    x = c.tensor("x")
    return op("and", _k(c, x, 0), x), _k(c, x, 0), []


@rule("and(x, not(0)) => x", family=F, dtypes=INTS_PRED)
def _and_ones(c):
    """and with all ones (not 0; true on pred) is the identity."""
    x = c.tensor("x")
    return op("and", x, op("not", _k(c, x, 0))), x, []


@rule("or(x, 0) => x", family=F, dtypes=INTS_PRED)
def _or_zero(c):
    """or with zero is the identity."""
    x = c.tensor("x")
    return op("or", x, _k(c, x, 0)), x, []


@rule("xor(x, 0) => x", family=F, dtypes=INTS_PRED)
def _xor_zero(c):
    """xor with zero is the identity."""
    x = c.tensor("x")
    return op("xor", x, _k(c, x, 0)), x, []


@rule("xor(xor(x, y), y) => x", family=F, dtypes=INTS_PRED)
def _xor_cancel(c):
    """xor with the same value twice cancels."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("xor", op("xor", x, y), y), x, []


@rule("and(x, y) => and(y, x)", family=F, dtypes=INTS_PRED)
def _and_comm(c):
    """and is commutative."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("and", x, y), op("and", y, x), []


@rule("or(x, y) => or(y, x)", family=F, dtypes=INTS_PRED)
def _or_comm(c):
    """or is commutative."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("or", x, y), op("or", y, x), []


@rule("not(and(x, y)) => or(not(x), not(y))", family=F, dtypes=INTS_PRED)
def _de_morgan_and(c):
    """De Morgan: the complement of a conjunction."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("not", op("and", x, y)), op("or", op("not", x), op("not", y)), []


@rule("not(or(x, y)) => and(not(x), not(y))", family=F, dtypes=INTS_PRED)
def _de_morgan_or(c):
    """De Morgan: the complement of a disjunction."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("not", op("or", x, y)), op("and", op("not", x), op("not", y)), []


@rule("and(x, or(x, y)) => x", family=F, dtypes=INTS_PRED)
def _absorb_and(c):
    """Absorption: x and (x or y) is x."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("and", x, op("or", x, y)), x, []


@rule("add(x, y) => or(x, y) on pred", family=F, dtypes=("pred",))
def _pred_add_or(c):
    """add on pred is logical or (XLA's measured behaviour)."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("add", x, y), op("or", x, y), []


@rule("not(x) => subtract(negate(x), 1)", family=F, dtypes=INTS)
def _not_as_neg(c):
    """Two's complement: ~x = -x - 1 (with wraparound, also on unsigned types)."""
    x = c.tensor("x")
    return op("not", x), op("subtract", op("negate", x), _k(c, x, 1)), []
