"""The table of XLA algebraic-simplifier rewrites (rewrite_rules/xla_simplifier.txt, the rule set
TensorRight verified over ideal integers and reals) proved over machine types, for docs/rules.md.

Reads the JSON that ``accv prove rewrite_rules/xla_simplifier.txt --json
bench/results/xla_simplifier.json`` writes (every refutation in it was replayed on the reference
interpreter by the prover) and replaces the part of docs/rules.md between the markers
``<!-- table:xla_simplifier -->`` and its ``<!-- /table -->`` (the table bench/docs_tables.py
checks and renders).

    python bench/xla_simplifier.py [--json bench/results/xla_simplifier.json] [--doc docs/rules.md]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- table:xla_simplifier -->", "<!-- /table -->"   # bench/docs_tables.py renders it too
ORDER = ("error", "refuted", "unknown", "bounded", "proved")


def _values(v: object) -> str:
    """A JSON value list of a counterexample as text: floats as value (bits), bf16 included."""
    import numpy as np

    if isinstance(v, dict):
        bits = np.asarray(v["bits"], dtype=np.uint64)
        if v["dtype"] == "bfloat16":
            vals = (bits.astype(np.uint32) << 16).view(np.float32)
            w = 4
        else:
            w = np.dtype(v["dtype"]).itemsize * 2
            vals = bits.astype(f"u{w // 2}").view(v["dtype"])
        flat = [f"{float(x)!r}(0x{int(b):0{w}X})" for x, b in zip(vals.reshape(-1), bits.reshape(-1), strict=True)]
        return "[" + ", ".join(flat[:6]) + (" ...]" if len(flat) > 6 else "]")
    flat = np.asarray(v).reshape(-1).tolist()
    return str(flat[:6])[:-1] + (" ...]" if len(flat) > 6 else "]")


def refutations(data: dict) -> list[str]:
    """One replayed counterexample per refuted rewrite (its first refuted dtype that carries one)."""
    out = []
    for r in data["rules"]:
        cex = next((i for i in r["instantiations"] if i["verdict"] == "refuted" and "counterexample" in i), None)
        if cex is None:
            continue
        c = cex["counterexample"]
        ins = ", ".join(f"{k} = {_values(v)}" for k, v in c["inputs"].items())
        outs = (f"lhs {_values(c['lhs_out'])} vs rhs {_values(c['rhs_out'])}" if c.get("lhs_hlo") and c.get("rhs_hlo")
                else c["reason"])
        out.append(f"- `{r['rule']}` ({cex['dtype']}, sizes {c['sizes']}): {ins} -> {outs}")
    return out


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
    cex = refutations(data)
    tail = ("\n\nEach refutation's counterexample, replayed on the reference interpreter (the two sides' "
            "outputs differ there; `accv prove` writes the HLO pair and inputs under `--cex-dir`):\n\n" +
            "\n".join(cex)) if cex else ""
    return head + "\n\n" + "\n".join(rows) + tail


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
        text = re.sub(re.escape(BEGIN) + r"\n.*?" + re.escape(END), lambda _: block, text, count=1, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(text)
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
