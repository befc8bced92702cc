"""Documentation generated from the operator table (docs/semantics.md's operator section).

The table in docs/semantics.md between the ``BEGIN/END GENERATED OPERATOR TABLE`` markers is
exactly :func:`operator_table_markdown`; a test keeps them in sync, so the docs cannot drift from
the code (regenerate with ``accv ops > /tmp/t.md`` or ``python -m semantics.docs --write``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .ops import REGISTRY

__all__ = ["operator_table_markdown", "BEGIN", "END", "sync_docs"]

BEGIN = "<!-- BEGIN GENERATED OPERATOR TABLE (python -m semantics.docs --write) -->"
END = "<!-- END GENERATED OPERATOR TABLE -->"
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


def sync_docs(path: Path, write: bool) -> bool:
    """True when ``path`` holds the current table; with ``write``, update it in place."""
    text = path.read_text()
    i, j = text.index(BEGIN) + len(BEGIN), text.index(END)
    new = text[:i] + "\n\n" + operator_table_markdown() + "\n" + text[j:]
    if write and new != text:
        path.write_text(new)
    return new == text


if __name__ == "__main__":
    doc = Path(__file__).resolve().parents[1] / "docs" / "semantics.md"
    ok = sync_docs(doc, write="--write" in sys.argv)
    print("docs/semantics.md " + ("up to date" if ok else ("updated" if "--write" in sys.argv else "is STALE")))
