"""The public rule API: write rewrite rules in Python and prove them with ``accv prove FILE.py``.

    from rewrite_rules.api import rule, op, reverse, INTS

    @rule("reverse(reverse(x)) => x", dtypes=INTS)
    def _(c):
        x = c.tensor("x")
        return reverse(reverse(x, (0,)), (0,)), x, []

A rule is a function of a :class:`RuleCtx` ``c`` returning ``(lhs, rhs, preconditions)``; it is
called once per claimed dtype and rank (docs/rules.md, "Writing a rule", describes the builders,
which are :mod:`rewrite_rules.dsl`'s). :func:`rule` registers into the module being loaded (never
the project's library); :func:`text_rule` adds a rule in the plain-text form
(:mod:`rewrite_rules.text`). :func:`load_file` reads a ``.py`` or text rule file.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from semantics.errors import InputError, SourceLoc

from . import dsl
from .dsl import (
    ALL,
    FLOATS,
    INTS,
    NUM,
    SINTS,
    UINTS,
    Node,
    Rule,
    RuleCtx,
    bitcast,
    broadcast,
    clamp,
    compare,
    concat,
    const,
    convert,
    copy,
    dot,
    dslice,
    dus,
    full,
    iota,
    op,
    pad,
    reduce,
    reshape,
    reverse,
    select,
    slice_,
    transpose,
    vadd,
    vsub,
)
from .text import RuleSyntaxError, parse_rule, parse_rules

__all__ = [
    "rule", "text_rule", "load_file", "Rule", "RuleCtx", "Node", "RuleSyntaxError", "ALL", "FLOATS", "INTS", "NUM",
    "SINTS", "UINTS", "bitcast", "broadcast", "clamp", "compare", "concat", "const", "convert", "copy", "dot",
    "dslice", "dus", "full", "iota", "op", "pad", "reduce", "reshape", "reverse", "select", "slice_", "transpose",
    "vadd", "vsub",
]

#: rules registered while a user module loads (load_file collects them)
_LOADING: list[dict[str, Rule]] = []


def _registry() -> dict[str, Rule]:
    if not _LOADING:
        _LOADING.append({})
    return _LOADING[-1]


def rule(name: str, *, dtypes: Sequence[str], family: str = "user", ranks: Sequence[int] | None = (1, 2, 3),
         desc: str = "") -> Callable[[dsl.BuildFn], Rule]:
    """Register ``build`` as the rule ``name`` (reads as the equation), claimed for ``dtypes`` at
    ``ranks``."""
    return dsl.rule(name, family=family, dtypes=dtypes, ranks=ranks, desc=desc, registry=_registry())


def text_rule(text: str, *, family: str = "user") -> Rule:
    """Register a rule written in the text form (``"add(x, 0) => x  for INTS"``)."""
    return parse_rule(text, family=family, registry=_registry())


def load_file(path: str | Path) -> list[Rule]:
    """The rules of a rule file: ``.py`` (a module using this API) or text (any other suffix).

    Raises:
        InputError: unreadable file; RuleSyntaxError: ``file:line:col: reason``.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    if p.suffix != ".py":
        return parse_rules(p.read_text(), file=str(path), family=p.stem)
    modname = f"accv_user_rules_{abs(hash(str(p.resolve())))}"
    spec = importlib.util.spec_from_file_location(modname, p)
    if spec is None or spec.loader is None:
        raise InputError(f"{path}: not a Python module")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    _LOADING.append({})
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        raise RuleSyntaxError(e.msg, SourceLoc(str(path), e.lineno or 1, e.offset or 1)) from None
    except RuleSyntaxError:
        raise
    except Exception as e:  # noqa: BLE001 - a user's module: report where it failed, in one line
        tb = e.__traceback__
        line = 1
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == str(p):
                line = tb.tb_lineno
            tb = tb.tb_next
        raise RuleSyntaxError(f"{type(e).__name__}: {e}", SourceLoc(str(path), line, 1)) from None
    finally:
        reg = _LOADING.pop()
    if not reg:
        raise RuleSyntaxError("defines no rule (use @rewrite_rules.api.rule or text_rule)", SourceLoc(str(path), 1, 1))
    import dataclasses

    return [dataclasses.replace(r, family=p.stem) if r.family == "user" else r for r in reg.values()]
