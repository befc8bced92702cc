"""maximum / minimum / clamp identities.

Float ``maximum``/``minimum`` read subnormal operands as zero (DAZ; bf16 through f32), propagate NaN
and order ``-0.0 < +0.0`` (docs/semantics.md). Consequences, each reflected in the dtype claims:

* ``maximum(x, x) = x`` is FALSE for f32/f64/bf16 (a subnormal ``x`` comes back as a zero) but true
  for f16 (every f16 value is an f32 normal) and all integers.
* Commutativity holds for every type up to NaN payloads (the project's equality: any NaN equals
  any NaN; the signed-zero rule is symmetric).
* Absorption ``maximum(x, minimum(x, y)) = x`` and the clamp-with-equal-bounds rule fail for all
  floats (a NaN ``y`` propagates) and hold for integers (a total order).
* ``maximum(x, y) = negate(minimum(negate(x), negate(y)))`` holds for every float (negate is a sign
  flip and the orders, including ``-0 < +0`` and DAZ, are mirror images) but is FALSE for signed
  integers (``negate(MIN) = MIN``) and unsigned ones (negate wraps).
* ``clamp(lo, x, hi)`` is by definition ``minimum(maximum(lo, x), hi)``; that rule holds for every
  numeric type. Clamp bounds are tensors of the operand's shape (or broadcast scalars): a clamp
  with rank-0 bounds is marked ill-formed by the symbolic encoder (verif/symbolic.py uses args[0]
  as the shape reference), which would make such a rule vacuously "proved"; the rule
  "clamp(lo_scalar, x, hi_scalar) => clamp(broadcast(lo), x, broadcast(hi))" is left out for that reason.

Rules with a float claim are stated at rank 1 (elementwise: the encoding is the same scalar
formula at any rank; the float proofs are the expensive ones).
"""

from __future__ import annotations

from .dsl import INTS, NUM, SINTS, UINTS, broadcast, clamp, compare, convert, full, op, rule, select

F = "minmax"
ELEM = (1,)
INTS_F16 = INTS + ("f16",)

__all__: list[str] = []


def _mx(a, b):
    return op("maximum", a, b)


def _mn(a, b):
    return op("minimum", a, b)


@rule("maximum(x, x) => x", family=F, dtypes=INTS_F16, ranks=ELEM,
      note="f32/f64/bf16 false: DAZ turns a subnormal x into a zero")
def _max_self(c):
    """maximum is idempotent on integers and f16."""
    x = c.tensor("x")
    return _mx(x, x), x, []


@rule("minimum(x, x) => x", family=F, dtypes=INTS_F16, ranks=ELEM,
      note="f32/f64/bf16 false: DAZ turns a subnormal x into a zero")
def _min_self(c):
    """minimum is idempotent on integers and f16."""
    x = c.tensor("x")
    return _mn(x, x), x, []


@rule("maximum(x, y) => maximum(y, x)", family=F, dtypes=INTS,
      note="floats false: which NaN (and its sign) the reference returns for two NaN operands depends on the order")
def _max_comm(c):
    """maximum is commutative on integers."""
    x, y = c.tensor("x"), c.tensor("y")
    return _mx(x, y), _mx(y, x), []


@rule("minimum(x, y) => minimum(y, x)", family=F, dtypes=INTS,
      note="floats false: which NaN (and its sign) the reference returns for two NaN operands depends on the order")
def _min_comm(c):
    """minimum is commutative on integers."""
    x, y = c.tensor("x"), c.tensor("y")
    return _mn(x, y), _mn(y, x), []


@rule("maximum(maximum(x, y), z) => maximum(x, maximum(y, z))", family=F, dtypes=INTS)
def _max_assoc(c):
    """maximum is associative on integers."""
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    return _mx(_mx(x, y), z), _mx(x, _mx(y, z)), []


@rule("minimum(minimum(x, y), z) => minimum(x, minimum(y, z))", family=F, dtypes=INTS)
def _min_assoc(c):
    """minimum is associative on integers."""
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    return _mn(_mn(x, y), z), _mn(x, _mn(y, z)), []


@rule("maximum(x, minimum(x, y)) => x", family=F, dtypes=INTS, note="floats false: NaN y, DAZ")
def _absorb_max(c):
    """Absorption of minimum by maximum (integers)."""
    x, y = c.tensor("x"), c.tensor("y")
    return _mx(x, _mn(x, y)), x, []


@rule("minimum(x, maximum(x, y)) => x", family=F, dtypes=INTS, note="floats false: NaN y, DAZ")
def _absorb_min(c):
    """Absorption of maximum by minimum (integers)."""
    x, y = c.tensor("x"), c.tensor("y")
    return _mn(x, _mx(x, y)), x, []


@rule("maximum(x, minimum(y, z)) => minimum(maximum(x, y), maximum(x, z))", family=F, dtypes=INTS)
def _max_distrib(c):
    """maximum distributes over minimum (integers: a total order is a distributive lattice)."""
    x, y, z = c.tensor("x"), c.tensor("y"), c.tensor("z")
    return _mx(x, _mn(y, z)), _mn(_mx(x, y), _mx(x, z)), []


@rule("maximum(maximum(x, y), y) => maximum(x, y)", family=F, dtypes=INTS)
def _max_repeat(c):
    """Taking the maximum with the same operand twice is once."""
    x, y = c.tensor("x"), c.tensor("y")
    return _mx(_mx(x, y), y), _mx(x, y), []


@rule("maximum(x, MIN) => x", family=F, dtypes=INTS)
def _max_bottom(c):
    """The smallest value of the type is the identity of maximum."""
    x = c.tensor("x")
    lo = -(1 << (c.dtype.bits - 1)) if c.dtype.is_signed else 0
    return _mx(x, full(lo, x.shape)), x, []


@rule("minimum(x, MAX) => x", family=F, dtypes=INTS)
def _min_top(c):
    """The largest value of the type is the identity of minimum."""
    x = c.tensor("x")
    hi = (1 << (c.dtype.bits - 1)) - 1 if c.dtype.is_signed else (1 << c.dtype.bits) - 1
    return _mn(x, full(hi, x.shape)), x, []


@rule("maximum(x, MAX) => MAX", family=F, dtypes=INTS)
def _max_top(c):
    """maximum with the largest value of the type is that value."""
    x = c.tensor("x")
    hi = (1 << (c.dtype.bits - 1)) - 1 if c.dtype.is_signed else (1 << c.dtype.bits) - 1
    return _mx(x, full(hi, x.shape)), full(hi, x.shape), []


@rule("maximum(x, y) => select(compare(x, y, GE), x, y)", family=F, dtypes=INTS,
      note="floats false: NaN, -0.0 and DAZ")
def _max_select(c):
    """Integer maximum is a compare and select (unsigned types compare unsigned)."""
    x, y = c.tensor("x"), c.tensor("y")
    return _mx(x, y), select(compare(x, y, "GE"), x, y), []


@rule("minimum(x, y) => select(compare(x, y, LE), x, y)", family=F, dtypes=INTS,
      note="floats false: NaN, -0.0 and DAZ")
def _min_select(c):
    """Integer minimum is a compare and select."""
    x, y = c.tensor("x"), c.tensor("y")
    return _mn(x, y), select(compare(x, y, "LE"), x, y), []


@rule("maximum(x, y) => negate(minimum(negate(x), negate(y)))", family=F, dtypes=("f64",), ranks=ELEM,
      note="integers false (negate(MIN) = MIN; unsigned negate wraps); believed true for bf16/f16/f32 "
           "but z3 times out on two free operands there")
def _max_dual(c):
    """Float maximum is the mirror image of minimum (sign flips commute with DAZ and the -0 < +0 order)."""
    x, y = c.tensor("x"), c.tensor("y")
    return _mx(x, y), op("negate", _mn(op("negate", x), op("negate", y))), []


@rule("abs(x) => maximum(x, negate(x))", family=F, dtypes=SINTS, ranks=ELEM,
      note="floats false: abs clears a NaN's sign, maximum of a NaN and its negation need not (f32/f64/bf16 "
           "also: abs keeps a subnormal, maximum flushes it, DAZ); unsigned false")
def _abs_max(c):
    """abs is the maximum of x and -x on signed integers (abs(MIN) = MIN)."""
    x = c.tensor("x")
    return op("abs", x), _mx(x, op("negate", x)), []


@rule("minimum(x, 0) => subtract(x, maximum(x, 0))", family=F, dtypes=SINTS)
def _min_zero(c):
    """The negative part of a signed integer through the ReLU: min(x, 0) = x - max(x, 0)."""
    x = c.tensor("x")
    return _mn(x, full(0, x.shape)), op("subtract", x, _mx(x, full(0, x.shape))), []


# --- clamp ---------------------------------------------------------------------------------------

@rule("clamp(lo, x, hi) => minimum(maximum(lo, x), hi)", family=F, dtypes=NUM, ranks=ELEM)
def _clamp_def(c):
    """clamp is maximum with the lower bound, then minimum with the upper bound (its definition)."""
    x, lo, hi = c.tensor("x"), c.tensor("lo"), c.tensor("hi")
    return clamp(lo, x, hi), _mn(_mx(lo, x), hi), []


@rule("clamp(broadcast(lo), x, broadcast(hi)) => minimum(maximum(broadcast(lo), x), broadcast(hi))", family=F,
      dtypes=NUM, ranks=ELEM)
def _clamp_def_bcast(c):
    """clamp with broadcast scalar bounds is maximum then minimum with those bounds."""
    x, lo, hi = c.tensor("x"), c.tensor("lo", rank=0), c.tensor("hi", rank=0)
    blo, bhi = broadcast(lo, x.shape, ()), broadcast(hi, x.shape, ())
    return clamp(blo, x, bhi), _mn(_mx(blo, x), bhi), []


@rule("clamp(broadcast(a), x, broadcast(a)) => broadcast(a)", family=F, dtypes=INTS, note="floats false: a NaN x propagates")
def _clamp_equal(c):
    """A clamp with equal bounds is the bound (integers)."""
    x, a = c.tensor("x"), c.tensor("a", rank=0)
    b = broadcast(a, x.shape, ())
    return clamp(b, x, b), broadcast(a, x.shape, ()), []


@rule("clamp(lo, clamp(lo, x, hi), hi) => clamp(lo, x, hi)", family=F, dtypes=INTS)
def _clamp_idem(c):
    """clamp is idempotent (also when lo > hi: both give hi)."""
    x, lo, hi = c.tensor("x"), c.tensor("lo"), c.tensor("hi")
    return clamp(lo, clamp(lo, x, hi), hi), clamp(lo, x, hi), []


@rule("clamp(MIN, x, MAX) => x", family=F, dtypes=INTS)
def _clamp_full(c):
    """A clamp to the whole range of the type is the identity."""
    x = c.tensor("x")
    b = c.dtype.bits
    lo, hi = (-(1 << (b - 1)), (1 << (b - 1)) - 1) if c.dtype.is_signed else (0, (1 << b) - 1)
    return clamp(full(lo, x.shape), x, full(hi, x.shape)), x, []


@rule("clamp(0, x, MAX) => maximum(x, 0)", family=F, dtypes=SINTS)
def _clamp_relu(c):
    """Clamping at zero below and the type's top above is a ReLU."""
    x = c.tensor("x")
    hi = (1 << (c.dtype.bits - 1)) - 1
    return clamp(full(0, x.shape), x, full(hi, x.shape)), _mx(x, full(0, x.shape)), []


@rule("maximum(x, 0) => x on unsigned", family=F, dtypes=UINTS)
def _relu_unsigned(c):
    """ReLU is the identity on unsigned integers."""
    x = c.tensor("x")
    return _mx(x, full(0, x.shape)), x, []


@rule("negate(maximum(x, y)) => minimum(negate(x), negate(y))", family=F, dtypes=("f64",), ranks=ELEM,
      note="integers false (negate(MIN) = MIN); bf16/f16/f32 believed true but z3 times out")
def _neg_max(c):
    """Negation turns a float maximum into a minimum."""
    x, y = c.tensor("x"), c.tensor("y")
    return op("negate", _mx(x, y)), _mn(op("negate", x), op("negate", y)), []



# --- clip forms as clamp (compilers.canon) -------------------------------------------------------
# jnp.clip writes minimum(hi, maximum(lo, x)); a hand-written clip minimum(maximum(x, lo), hi). For
# integers both are clamp(lo, x, hi) for any bounds (a total order; clamp is max then min). For
# floats they differ from clamp only in the sign of a NaN result (which operand order decides),
# so the float claims are made under the requantizing conversion to s8, which maps every NaN to 0.

def _clip_bounds(c):
    x, lo, hi = c.tensor("x"), c.tensor("lo", rank=0), c.tensor("hi", rank=0)
    return x, broadcast(lo, x.shape, ()), broadcast(hi, x.shape, ())


@rule("minimum(hi, maximum(lo, x)) => clamp(lo, x, hi)", family=F, dtypes=INTS, ranks=ELEM)
def _clip_bound_first(c):
    """jnp.clip's nesting, bounds broadcast scalars, is clamp (integers)."""
    x, lo, hi = _clip_bounds(c)
    return _mn(hi, _mx(lo, x)), clamp(lo, x, hi), []


@rule("minimum(maximum(x, lo), hi) => clamp(lo, x, hi)", family=F, dtypes=INTS, ranks=ELEM)
def _clip_x_first(c):
    """A hand-written clip, bounds broadcast scalars, is clamp (integers)."""
    x, lo, hi = _clip_bounds(c)
    return _mn(_mx(x, lo), hi), clamp(lo, x, hi), []


@rule("convert_s8(minimum(hi, maximum(lo, x))) => convert_s8(clamp(lo, x, hi))", family=F,
      dtypes=("f32", "bf16"), ranks=ELEM,
      note="without the conversion false: a NaN x comes out with another sign")
def _clip_bound_first_s8(c):
    """jnp.clip's nesting under the conversion to s8 is clamp (floats: every NaN converts to 0)."""
    x, lo, hi = _clip_bounds(c)
    return convert(_mn(hi, _mx(lo, x)), "s8"), convert(clamp(lo, x, hi), "s8"), []


@rule("convert_s8(minimum(maximum(x, lo), hi)) => convert_s8(clamp(lo, x, hi))", family=F,
      dtypes=("f32", "bf16"), ranks=ELEM,
      note="without the conversion false: a NaN x comes out with another sign")
def _clip_x_first_s8(c):
    """A hand-written clip under the conversion to s8 is clamp (floats)."""
    x, lo, hi = _clip_bounds(c)
    return convert(_mn(_mx(x, lo), hi), "s8"), convert(clamp(lo, x, hi), "s8"), []


@rule("convert_u8(minimum(hi, maximum(lo, x))) => convert_u8(clamp(lo, x, hi))", family=F,
      dtypes=("f32", "bf16"), ranks=ELEM,
      note="without the conversion false: a NaN x comes out with another sign")
def _clip_bound_first_u8(c):
    """jnp.clip's nesting under the conversion to u8 is clamp (floats: every NaN converts to 0)."""
    x, lo, hi = _clip_bounds(c)
    return convert(_mn(hi, _mx(lo, x)), "u8"), convert(clamp(lo, x, hi), "u8"), []


@rule("convert_u8(minimum(maximum(x, lo), hi)) => convert_u8(clamp(lo, x, hi))", family=F,
      dtypes=("f32", "bf16"), ranks=ELEM,
      note="without the conversion false: a NaN x comes out with another sign")
def _clip_x_first_u8(c):
    """A hand-written clip under the conversion to u8 is clamp (floats)."""
    x, lo, hi = _clip_bounds(c)
    return convert(_mn(_mx(x, lo), hi), "u8"), convert(clamp(lo, x, hi), "u8"), []


@rule("convert_s8(clamp(-128, maximum(x, 0), 127)) => maximum(convert_s8(clamp(-128, x, 127)), 0)", family=F,
      dtypes=("f32", "bf16"), ranks=ELEM)
def _relu_out_of_clip(c):
    """A ReLU before the requantizing clip is a ReLU of the int8 result (jnp.maximum(y, 0) then
    jnp.clip(.., -128, 127).astype(int8)): both are 0 for x <= 0 (and a NaN), the clipped x else."""
    x = c.tensor("x")
    lo, hi, z = full(-128.0, x.shape), full(127.0, x.shape), full(0.0, x.shape)
    return (convert(clamp(lo, _mx(x, z), hi), "s8"),
            _mx(convert(clamp(lo, x, hi), "s8"), full(0, x.shape, "s8")), [])
