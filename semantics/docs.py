"""Documentation generated from the operator table (docs/semantics.md's operator section and its
table of XLA:CPU's approximation bounds).

The table in docs/semantics.md between the ``BEGIN/END GENERATED OPERATOR TABLE`` markers is
exactly :func:`operator_table_markdown`, the one between ``BEGIN/END GENERATED XLA BOUNDS``
:func:`xla_bounds_markdown`; a test keeps them in sync, so the docs cannot drift from the code
(regenerate with ``python -m semantics.docs --write``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .ops import REGISTRY

__all__ = ["operator_table_markdown", "xla_bounds_markdown", "BEGIN", "END", "sync_docs"]

BEGIN = "<!-- BEGIN GENERATED OPERATOR TABLE (python -m semantics.docs --write) -->"
END = "<!-- END GENERATED OPERATOR TABLE -->"
BEGIN_BOUNDS = "<!-- BEGIN GENERATED XLA BOUNDS (python -m semantics.docs --write) -->"
END_BOUNDS = "<!-- END GENERATED XLA BOUNDS -->"
_ORDER = ("structural", "elementwise", "conversion", "contraction", "random", "extension")


def operator_table_markdown() -> str:
    lines = []
    for cat in _ORDER:
        ops = sorted((o for o in REGISTRY.values() if o.category == cat), key=lambda o: o.name)
        lines.append(f"### {cat.capitalize()} operators\n")
        if cat == "extension":
            lines.append("accv extensions: no HLO opcode exists for these; the interpreter and the SMT "
                         "encoding define them, and XLA never sees them (not in `semantics.gen`'s "
                         "default operator set).\n")
        lines.append("| operator | operands | attributes | dtype rule | XLA CPU behaviour reproduced | SMT |")
        lines.append("|---|---|---|---|---|---|")
        for o in ops:
            lo, hi = o.arity
            ar = str(lo) if lo == hi else (f"{lo}+" if hi is None else f"{lo}-{hi}")
            attrs = ", ".join(a.name + ("" if a.required else "?") for a in o.attrs) or "-"
            smt = "uninterpreted function" if o.uninterpreted else ("yes" if o.smt is not None else "no")
            lines.append(f"| `{o.name}` | {ar} | {attrs} | {o.dtypes} | {o.xla} | {smt} |")
        lines.append("")
    return "\n".join(lines)


def xla_bounds_markdown() -> str:
    """The operators XLA:CPU approximates and their bounds (each one's ``xla_bound``)."""
    lines = ["| operator | f32 | f64 | bf16 | f16 | also | operands |", "|---|---|---|---|---|---|---|"]
    for o in sorted((o for o in REGISTRY.values() if o.xla_bound is not None), key=lambda o: o.name):
        b = o.xla_bound
        assert b is not None
        cells = [str(b.ulps.get(d, "-")) for d in ("f32", "f64", "bf16", "f16")]
        also = f"{b.near_one} ulps of 1.0 absolute" if b.near_one else "-"
        lines.append(f"| `{o.name}` | " + " | ".join(cells) + f" | {also} | {'ordinary' if b.ordinary else 'all'} |")
    return "\n".join(lines) + "\n"


def sync_docs(path: Path, write: bool) -> bool:
    """True when ``path`` holds the current tables; with ``write``, update it in place."""
    text = path.read_text()
    new = text
    for begin, end, fn in ((BEGIN, END, operator_table_markdown), (BEGIN_BOUNDS, END_BOUNDS, xla_bounds_markdown)):
        i, j = new.index(begin) + len(begin), new.index(end)
        new = new[:i] + "\n\n" + fn() + "\n" + new[j:]
    if write and new != text:
        path.write_text(new)
    return new == text


if __name__ == "__main__":
    doc = Path(__file__).resolve().parents[1] / "docs" / "semantics.md"
    ok = sync_docs(doc, write="--write" in sys.argv)
    print("docs/semantics.md " + ("up to date" if ok else ("updated" if "--write" in sys.argv else "is STALE")))
