"""compare / select identities.

``select`` does no arithmetic, so its laws hold for every type. Float ``compare`` applies DAZ to
both operands, treats NaN as unordered (only NE is true) and -0.0 == +0.0; hence:

* swapping operands with the mirrored direction (``LT(a, b) = GT(b, a)``) holds for every type;
* ``compare(x, x, EQ) = true`` and ``not(LT) = GE`` fail for floats (NaN) and are claimed for
  integers and pred only; ``not(EQ) = NE`` holds for every type (NE is exactly "not EQ");
* ``select(compare(a, b, EQ), a, b) = b`` fails for floats (+0 == -0);
* ``LT(negate(a), negate(b)) = LT(b, a)`` holds for floats but not for signed integers (MIN).
"""

from __future__ import annotations

from .dsl import ALL, INTS, NUM, broadcast, compare, const, convert, full, op, rule, select

F = "compare_select"
ELEM = (1,)
INTS_PRED = ("pred",) + INTS
MIRROR = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}
NEG = {"LT": "GE", "LE": "GT", "GT": "LE", "GE": "LT", "EQ": "NE", "NE": "EQ"}

__all__: list[str] = []


@rule("select(broadcast(true), a, b) => a", family=F, dtypes=ALL)
def _sel_true(c):
    """A constant-true predicate picks the first branch."""
    a, b = c.tensor("a"), c.tensor("b")
    return select(full(True, a.shape, "pred"), a, b), a, []


@rule("select(broadcast(false), a, b) => b", family=F, dtypes=ALL)
def _sel_false(c):
    """A constant-false predicate picks the second branch."""
    a, b = c.tensor("a"), c.tensor("b")
    return select(full(False, a.shape, "pred"), a, b), b, []


@rule("select(true, a, b) => a (scalar predicate)", family=F, dtypes=ALL)
def _sel_true_scalar(c):
    """A scalar constant-true predicate picks the first branch."""
    a, b = c.tensor("a"), c.tensor("b")
    return select(const(True, "pred"), a, b), a, []


@rule("select(p, a, a) => a", family=F, dtypes=ALL)
def _sel_same(c):
    """Equal branches make the predicate irrelevant."""
    a, p = c.tensor("a"), c.tensor("p", dtype="pred")
    return select(p, a, a), a, []


@rule("select(not(p), a, b) => select(p, b, a)", family=F, dtypes=ALL)
def _sel_not(c):
    """A negated predicate swaps the branches."""
    a, b, p = c.tensor("a"), c.tensor("b"), c.tensor("p", dtype="pred")
    return select(op("not", p), a, b), select(p, b, a), []


@rule("select(p, select(p, a, b), d) => select(p, a, d)", family=F, dtypes=ALL)
def _sel_nested_then(c):
    """An inner select on the same predicate in the true branch takes its true branch."""
    a, b, d, p = c.tensor("a"), c.tensor("b"), c.tensor("d"), c.tensor("p", dtype="pred")
    return select(p, select(p, a, b), d), select(p, a, d), []


@rule("select(p, a, select(p, b, d)) => select(p, a, d)", family=F, dtypes=ALL)
def _sel_nested_else(c):
    """An inner select on the same predicate in the false branch takes its false branch."""
    a, b, d, p = c.tensor("a"), c.tensor("b"), c.tensor("d"), c.tensor("p", dtype="pred")
    return select(p, a, select(p, b, d)), select(p, a, d), []


@rule("select(p_scalar, a, b) => select(broadcast(p_scalar), a, b)", family=F, dtypes=ALL)
def _sel_scalar_bcast(c):
    """A scalar predicate may be broadcast to the branches' shape."""
    a, b, p = c.tensor("a"), c.tensor("b"), c.tensor("p", rank=0, dtype="pred")
    return select(p, a, b), select(broadcast(p, a.shape, ()), a, b), []


@rule("select(p, true, false) => p", family=F, dtypes=("pred",))
def _sel_bool(c):
    """Selecting the constants true/false is the predicate itself."""
    p = c.tensor("p")
    return select(p, full(True, p.shape), full(False, p.shape)), p, []


@rule("select(p, x, y) => or(and(p, x), and(not(p), y)) on pred", family=F, dtypes=("pred",))
def _sel_logic(c):
    """A select of predicates is a Boolean multiplexer."""
    p, x, y = c.tensor("p"), c.tensor("x"), c.tensor("y")
    return select(p, x, y), op("or", op("and", p, x), op("and", op("not", p), y)), []


@rule("convert(p, T) => select(p, 1, 0)", family=F, dtypes=NUM)
def _pred_convert(c):
    """A predicate converted to a number is 1 where true, 0 where false."""
    p = c.tensor("p", dtype="pred")
    return convert(p, c.dtype.name), select(p, full(1, p.shape), full(0, p.shape)), []


def _make_mirror(d: str) -> None:
    @rule(f"compare(a, b, {d}) => compare(b, a, {MIRROR[d]})", family=F, dtypes=ALL, ranks=ELEM,
          note="floats included: DAZ, NaN and signed-zero rules are symmetric")
    def _mirror(c):
        """Swapping the operands of a comparison mirrors its direction (every type)."""
        a, b = c.tensor("a"), c.tensor("b")
        return compare(a, b, d), compare(b, a, MIRROR[d]), []


for _d in ("LT", "LE", "EQ", "NE"):
    _make_mirror(_d)


def _make_negation(d: str) -> None:
    dtypes = ALL if d in ("EQ", "NE") else INTS_PRED

    @rule(f"not(compare(a, b, {d})) => compare(a, b, {NEG[d]})", family=F, dtypes=dtypes,
          ranks=ELEM if d in ("EQ", "NE") else None,
          note="" if d in ("EQ", "NE") else "floats false: with a NaN operand both directions are false")
    def _negation(c):
        """The negation of a comparison is the complementary comparison (orders: integers and pred only)."""
        a, b = c.tensor("a"), c.tensor("b")
        return op("not", compare(a, b, d)), compare(a, b, NEG[d]), []


for _d in ("LT", "LE", "GT", "GE", "EQ", "NE"):
    _make_negation(_d)


@rule("compare(x, x, EQ) => true", family=F, dtypes=INTS_PRED, note="floats false: NaN != NaN")
def _eq_refl(c):
    """Every integer equals itself."""
    x = c.tensor("x")
    return compare(x, x, "EQ"), full(True, x.shape, "pred"), []


@rule("compare(x, x, LT) => false", family=F, dtypes=ALL, ranks=ELEM)
def _lt_irrefl(c):
    """Nothing is less than itself (floats too: NaN compares false)."""
    x = c.tensor("x")
    return compare(x, x, "LT"), full(False, x.shape, "pred"), []


@rule("compare(x, x, EQ, TOTALORDER) => true", family=F, dtypes=ALL, ranks=ELEM)
def _eq_total_refl(c):
    """Under IEEE totalOrder every value (NaN and signed zeros included) equals itself."""
    x = c.tensor("x")
    return compare(x, x, "EQ", total=True), full(True, x.shape, "pred"), []


@rule("or(compare(a, b, LT), compare(a, b, EQ)) => compare(a, b, LE)", family=F, dtypes=ALL, ranks=ELEM)
def _lt_or_eq(c):
    """LE is LT or EQ (floats too: with NaN all three are false)."""
    a, b = c.tensor("a"), c.tensor("b")
    return op("or", compare(a, b, "LT"), compare(a, b, "EQ")), compare(a, b, "LE"), []


@rule("select(compare(a, b, EQ), a, b) => b", family=F, dtypes=INTS_PRED, note="floats false: +0 == -0")
def _sel_eq(c):
    """Where a equals b, picking a is picking b (integers)."""
    a, b = c.tensor("a"), c.tensor("b")
    return select(compare(a, b, "EQ"), a, b), b, []


@rule("compare(negate(a), negate(b), LT) => compare(b, a, LT)", family=F, dtypes=("f64", "f32"), ranks=ELEM,
      note="signed integers false: negate(MIN) = MIN; bf16/f16 believed true (z3 slow)")
def _lt_neg(c):
    """Negating both float operands mirrors the order."""
    a, b = c.tensor("a"), c.tensor("b")
    return compare(op("negate", a), op("negate", b), "LT"), compare(b, a, "LT"), []
