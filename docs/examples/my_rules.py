"""accv prove docs/examples/my_rules.py   (docs/rules.md, "Rule files")."""

from rewrite_rules.api import INTS, broadcast, op, reverse, rule, text_rule, transpose


@rule("transpose(transpose(x)) => x", dtypes=("s8", "f32"), ranks=(2,))
def _transpose_twice(c):
    """Two transposes of a matrix cancel."""
    x = c.tensor("x")
    return transpose(transpose(x, (1, 0)), (1, 0)), x, []


@rule("multiply(x, broadcast(1)) => x", dtypes=INTS)
def _times_one(c):
    """One is the multiplicative identity (integers)."""
    x = c.tensor("x")
    one = broadcast(op("constant", value=1), x.shape, ())
    return op("multiply", x, one), x, []


@rule("reverse(add(x, y)) => add(reverse(x), reverse(y))", dtypes=("u8", "bf16"), ranks=(1,))
def _reverse_add(c):
    """reverse commutes with elementwise operators."""
    x, y = c.tensor("x"), c.tensor("y")
    return reverse(op("add", x, y), (0,)), op("add", reverse(x, (0,)), reverse(y, (0,))), []


text_rule("negate(negate(x)) => x  for INTS f32")
