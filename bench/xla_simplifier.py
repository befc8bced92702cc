"""The table of XLA algebraic-simplifier rewrites (rewrite_rules/xla_simplifier.txt, the rule set
TensorRight verified over ideal integers and reals) proved over machine types, for docs/rules.md.

Reads the JSON that ``accv prove rewrite_rules/xla_simplifier.txt --json
bench/results/xla_simplifier.json`` writes (every refutation in it was replayed on the reference
interpreter by the prover) and replaces the part of docs/rules.md between the markers
``<!-- xla-simplifier-table -->`` and ``<!-- /xla-simplifier-table -->``.

    python bench/xla_simplifier.py [--json bench/results/xla_simplifier.json] [--doc docs/rules.md]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- xla-simplifier-table -->", "<!-- /xla-simplifier-table -->"
ORDER = ("error", "refuted", "unknown", "bounded", "proved")


def table(data: dict) -> str:
    rows = ["| rewrite | proved | bounded | refuted (replayed) | unknown |", "|---|---|---|---|---|"]
    counts = dict.fromkeys(ORDER, 0)
    for r in data["rules"]:
        by: dict[str, set[str]] = {v: set() for v in ORDER}
        for i in r["instantiations"]:
            by[i["verdict"]].add(i["dtype"])
        counts[r["verdict"]] += 1
        cell = {v: " ".join(sorted(by[v])) for v in ORDER}
        name = r["rule"].replace("|", "\\|")
        rows.append(f"| `{name}` | {cell['proved']} | {cell['bounded']} | {cell['refuted']} | "
                    f"{(cell['unknown'] + ' ' + cell['error']).strip()} |")
    head = (f"{len(data['rules'])} rewrites: " + ", ".join(f"{counts[v]} {v}" for v in reversed(ORDER) if counts[v])
            + " (a rewrite counts under its weakest dtype; per dtype below).")
    return head + "\n\n" + "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "xla_simplifier.json"))
    ap.add_argument("--doc", default=str(ROOT / "docs" / "rules.md"))
    args = ap.parse_args(argv)
    data = json.loads(Path(args.json).read_text())
    doc = Path(args.doc)
    text = doc.read_text()
    block = f"{BEGIN}\n{table(data)}\n{END}"
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(text)
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
