"""XLA's algebraic-simplifier rewrites as TensorRight (POPL'25) restated them
(rewrite_rules/xla_simplifier.txt), proved over machine types, each refutation replayed on the
reference interpreter and on XLA itself; the table of docs/rules.md.

Every one of the 118 rules TensorRight's repository implements (:data:`TR_RULES`, by its id
``directory/ruleNN``) is either a rule line of the file ending ``# TR <id> [const NAME...]`` or a
comment ``# TR <id>: not expressible: <reason>``; lines tagged ``# XLA`` are further simplifier
rewrites. TensorRight's 175 are those 118, 3 more its DSL expresses but its artifact does not
implement, and 54 it cannot express; its artifact names none of those 57.

    python bench/xla_simplifier.py --prove [--jobs 2]   # accv prove + XLA replay -> results JSON, docs
    python bench/xla_simplifier.py --xla                # counterexamples filled, XLA replay of the results JSON, docs
    python bench/xla_simplifier.py                      # docs/rules.md from the results JSON

``--prove`` runs ``accv prove rewrite_rules/xla_simplifier.txt --jobs N --rlimit 5000000 --json
OUT`` (every refutation in it was replayed on the interpreter by the prover), proves again one
refuted instantiation of each (rewrite, dtype) whose refutation came from the proof cache without a
counterexample, then runs bench/xla_simplifier_replay.py, and records each rule's TensorRight id, the file's
not-expressible entries and TensorRight's counts. The table replaces the part of docs/rules.md
between ``<!-- table:xla_simplifier -->`` and ``<!-- /table -->`` (bench/docs_tables.py renders
it too).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RULE_FILE = ROOT / "rewrite_rules" / "xla_simplifier.txt"
RESULTS = ROOT / "bench" / "results" / "xla_simplifier.json"
BEGIN, END = "<!-- table:xla_simplifier -->", "<!-- /table -->"   # bench/docs_tables.py renders it too
ORDER = ("error", "refuted", "unknown", "bounded", "proved")
RLIMIT = 5_000_000

#: the rules TensorRight's repository implements and runs (rules/xla/<directory>/Main.hs, the
#: ``verify`` calls of each ``main``): directory -> rule numbers
TR_RULES: dict[str, tuple[int, ...]] = {
    "add": (1, 2, 3, 4), "broadcast": tuple(range(1, 9)), "clamp": (1, 2, 3), "compare": tuple(range(1, 7)),
    "concat": tuple(range(1, 8)), "conv": (0, 1, 3), "divmod": tuple(range(1, 9)), "dot": tuple(range(1, 7)),
    "dyslice": tuple(range(1, 6)), "dyupslice": (1, 2, 3, 4), "iota": (1,), "logical": tuple(range(1, 12)),
    "max": (1, 2), "mul": tuple(range(1, 11)), "not": (1, 2), "pad": (1, 2, 3, 4), "reduce": tuple(range(1, 9)),
    "relabel": (1, 2), "reverse": (1, 2, 3, 4), "select": (1, 2, 3, 4), "slice": tuple(range(1, 14)),
    "sub": (0, 1, 2)}
TR_IDS = [f"{d}/rule{n:02d}" for d, ns in TR_RULES.items() for n in ns]
#: TensorRight's own counts (its paper and artifact README)
TR_COUNTS = {"simplifier_rules": 175, "expressible": 121, "implemented": 118, "verified": 115}

_TAG = re.compile(r"#\s*TR\s+([a-z]+/rule\d\d)\b(.*)$")
_XLA = re.compile(r"#\s*XLA\b(.*)$")


class RuleFileError(ValueError):
    """rewrite_rules/xla_simplifier.txt does not account for TensorRight's rules as stated."""


def rule_meta(path: Path = RULE_FILE) -> dict[str, Any]:
    """The file's rule lines (``rule``: the name accv prove gives it, ``source``: a TensorRight id
    or ``XLA``, ``consts``) and its not-expressible entries (``id``, ``reason``)."""
    lines: list[dict[str, Any]] = []
    missing: list[dict[str, str]] = []
    for k, line in enumerate(path.read_text().splitlines(), start=1):
        code, _, comment = line.partition("#")
        comment = "#" + comment if comment else ""
        m, x = _TAG.search(comment), _XLA.search(comment)
        if not code.strip():
            if m and m.group(2).startswith(":"):
                reason = m.group(2)[1:].strip()
                if not reason.startswith("not expressible: "):
                    raise RuleFileError(f"{path.name}:{k}: expected '# TR <id>: not expressible: <reason>'")
                missing.append({"id": m.group(1), "reason": reason[len("not expressible: "):]})
            continue
        if not m and not x:
            raise RuleFileError(f"{path.name}:{k}: a rule line ends '# TR <id>' or '# XLA'")
        rest = (m or x).group(2 if m else 1).split()   # type: ignore[union-attr]
        consts = rest[1:] if rest[:1] == ["const"] else []
        if rest and not consts:
            raise RuleFileError(f"{path.name}:{k}: after the tag only 'const NAME...'")
        lines.append({"rule": " ".join(code.split()), "source": m.group(1) if m else "XLA", "consts": consts,
                      "line": k})
    ids = [d["source"] for d in lines if d["source"] != "XLA"] + [d["id"] for d in missing]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup or sorted(ids) != sorted(TR_IDS):
        raise RuleFileError(f"{path.name}: TensorRight ids repeated {dup}, missing "
                            f"{sorted(set(TR_IDS) - set(ids))}, unknown {sorted(set(ids) - set(TR_IDS))}")
    return {"rules": lines, "not_expressible": missing}


def annotate(data: dict[str, Any], meta: dict[str, Any]) -> None:
    """Records in ``data`` (accv prove's JSON) each rule's source and constants and the file's
    not-expressible entries with TensorRight's counts."""
    by_name = {d["rule"]: d for d in meta["rules"]}
    for r in data["rules"]:
        name = r["rule"]
        d = by_name.get(name)
        if d is None:
            raise RuleFileError(f"results name a rule the file lacks: {name}")
        r["source"], r["consts"] = d["source"], d["consts"]
    data["tensorright"] = {**TR_COUNTS, "not_expressible": meta["not_expressible"]}


def prove(jobs: int, out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "accv", "prove", str(RULE_FILE.relative_to(ROOT)), "--jobs", str(jobs),
           "--rlimit", str(RLIMIT), "--quiet", "--json", str(out)]
    p = subprocess.run(cmd, cwd=ROOT, check=False)
    if p.returncode not in (0, 1, 3, 4, 5, 6):
        print(f"accv prove exited {p.returncode}", file=sys.stderr)
    return json.loads(out.read_text())


def _prove_one(line: str, dtype: str, rank: int, bound: int) -> dict[str, Any] | None:
    """Worker: one instantiation of the rule ``line`` proved again; its counterexample as JSON."""
    from rewrite_rules.text import parse_rule
    from verif.prover import prove

    res = prove(parse_rule(line), dtype, rank, None, bound, RLIMIT)
    return res.counterexample.to_json() if res.verdict == "refuted" and res.counterexample else None


def fill_counterexamples(data: dict[str, Any], meta: dict[str, Any], jobs: int) -> int:
    """A counterexample for each refuted (rewrite, dtype) that has none (a refutation answered from
    the proof cache carries none; accv prove fills one per rewrite): its first refuted
    instantiation proved again, on ``jobs`` processes. Returns how many were filled."""
    from concurrent.futures import ProcessPoolExecutor

    lines = RULE_FILE.read_text().splitlines()
    text = {d["rule"]: lines[d["line"] - 1] for d in meta["rules"]}
    todo = []
    for r in data["rules"]:
        have = {i["dtype"] for i in r["instantiations"] if "counterexample" in i}
        for i in r["instantiations"]:
            if i["verdict"] == "refuted" and i["dtype"] not in have:
                have.add(i["dtype"])
                todo.append(i | {"_line": text[r["rule"]], "_inst": i})
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as ex:
        futs = [ex.submit(_prove_one, t["_line"], t["dtype"], t["rank"], data.get("size_bound", 3)) for t in todo]
        filled = 0
        for t, f in zip(todo, futs, strict=True):
            cex = f.result()
            if cex is not None:
                t["_inst"]["counterexample"] = cex
                filled += 1
    return filled


# -- the table -----------------------------------------------------------------------------------

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


def _xla_short(x: dict[str, Any]) -> str:
    o = x["outcome"]
    if o.startswith("applied"):
        where = ("StableHLO import" if "StableHLO" in o else "algsimp" if "algebraic simplifier" in o
                 else "not algsimp")
        return f"applied (rhs), {where}"
    if o.startswith("not applied"):
        return "not applied (lhs)"
    return "neither side"


def _xla_cell(r: dict[str, Any]) -> str:
    parts = [f"{i['dtype']}: {_xla_short(i['xla'])}" for i in r["instantiations"] if "xla" in i]
    return "; ".join(sorted(parts))


def refutations(data: dict[str, Any]) -> list[str]:
    """One replayed counterexample per refuted rewrite (its first refuted dtype that carries one),
    with what XLA computes for it."""
    out = []
    for r in data["rules"]:
        cex = next((i for i in r["instantiations"] if i["verdict"] == "refuted" and "counterexample" in i), None)
        if cex is None:
            continue
        c = cex["counterexample"]
        ins = ", ".join(f"{k} = {_values(v)}" for k, v in c["inputs"].items())
        outs = (f"lhs {_values(c['lhs_out'])} vs rhs {_values(c['rhs_out'])}" if c.get("lhs_hlo") and c.get("rhs_hlo")
                else c["reason"])
        x = cex.get("xla")
        on_xla = ""
        if x:
            const = f" (constants {', '.join(x['constants'])})" if x["constants"] else ""
            on_xla = f"; on XLA{const}: {x['outcome']}" + ("" if x["interpreter_replayed"] else " (interpreter replay FAILED)")
        tag = r.get("source", "")
        out.append(f"- {tag} `{r['rule']}` ({cex['dtype']}, sizes {c['sizes']}): {ins} -> {outs}{on_xla}")
    return out


def _key(r: dict[str, Any]) -> tuple[int, str]:
    s = r.get("source", "XLA")
    return (TR_IDS.index(s), "") if s in TR_IDS else (len(TR_IDS), r["rule"])


def table(data: dict[str, Any]) -> str:
    rows = ["| TensorRight | rewrite | proved | bounded | refuted (replayed) | unknown | refutation on XLA |",
            "|---|---|---|---|---|---|---|"]
    tr = {v: 0 for v in ORDER}
    extra = {v: 0 for v in ORDER}
    for r in sorted(data["rules"], key=_key):
        by: dict[str, set[str]] = {v: set() for v in ORDER}
        for i in r["instantiations"]:
            by[i["verdict"]].add(i["dtype"])
        (tr if r.get("source", "XLA") != "XLA" else extra)[r["verdict"]] += 1
        cell = {v: " ".join(sorted(by[v])) for v in ORDER}
        name = r["rule"].replace("|", "\\|")
        rows.append(f"| {r.get('source', 'XLA')} | `{name}` | {cell['proved']} | {cell['bounded']} | {cell['refuted']} | "
                    f"{(cell['unknown'] + ' ' + cell['error']).strip()} | {_xla_cell(r)} |")
    info = data.get("tensorright", {})
    missing = info.get("not_expressible", [])
    for m in sorted(missing, key=lambda m: TR_IDS.index(m["id"])):
        rows.append(f"| {m['id']} | not expressible: {m['reason']} |  |  |  |  |  |")
    n_tr = sum(tr.values())
    total = info.get("simplifier_rules", TR_COUNTS["simplifier_rules"])
    implemented = info.get("implemented", TR_COUNTS["implemented"])
    unnamed = total - implemented

    def counts(c: dict[str, int]) -> str:
        return ", ".join(f"{c[v]} {v}" for v in reversed(ORDER) if c[v])

    xla = [i["xla"] for r in data["rules"] for i in r["instantiations"] if "xla" in i]
    applied = sum(x["outcome"].startswith("applied") for x in xla)
    pairs = len({(r["rule"], i["dtype"]) for r in data["rules"] for i in r["instantiations"]
                 if i["verdict"] == "refuted"})
    head = (f"TensorRight's {total} rewrites: {n_tr} restated here ({counts(tr)}); {len(missing)} of its "
            f"{implemented} implemented rules not expressible in the rule text form; {unnamed} not named by "
            f"TensorRight's artifact ({total - info.get('expressible', TR_COUNTS['expressible'])} its DSL cannot "
            f"express, {info.get('expressible', TR_COUNTS['expressible']) - implemented} expressible but not "
            f"implemented), so not restated. Besides them {sum(extra.values())} further simplifier rewrites "
            f"(`XLA`): {counts(extra)}. A rewrite counts under its weakest dtype; per dtype below. "
            f"Refuted (rewrite, dtype) pairs: {pairs}; replayed on XLA (those with a counterexample whose two "
            f"sides build): {len(xla)}, of which XLA applied the unsound rewrite in {applied}.")
    cex = refutations(data)
    tail = ("\n\nEach refutation's counterexample, replayed on the reference interpreter (the two sides' "
            "outputs differ there; `accv prove` writes the HLO pair and inputs under `--cex-dir`), and the "
            "left side with the same inputs on XLA:CPU:\n\n" + "\n".join(cex)) if cex else ""
    return head + "\n\n" + "\n".join(rows) + tail


def write_doc(data: dict[str, Any], doc: Path) -> None:
    text = doc.read_text()
    block = f"{BEGIN}\n{table(data)}\n{END}"
    if BEGIN in text:
        text = re.sub(re.escape(BEGIN) + r"\n.*?" + re.escape(END), lambda _: block, text, count=1, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    doc.write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prove", action="store_true", help="run accv prove on the rule file first (then --xla)")
    ap.add_argument("--xla", action="store_true", help="fill missing counterexamples and replay the refutations on XLA (jax) into the JSON")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json", default=str(RESULTS))
    ap.add_argument("--doc", default=str(ROOT / "docs" / "rules.md"))
    args = ap.parse_args(argv)
    out = Path(args.json)
    meta = rule_meta()
    if args.prove:
        data = prove(args.jobs, out)
    else:
        data = json.loads(out.read_text())
    if args.prove or args.xla:
        from xla_simplifier_replay import replay_all

        annotate(data, meta)
        print(f"filled {fill_counterexamples(data, meta, args.jobs)} counterexamples", file=sys.stderr)
        n = replay_all(data, {r["rule"]: r["consts"] for r in data["rules"]})
        print(f"replayed {n} refutations on XLA", file=sys.stderr)
        out.write_text(json.dumps(data, indent=1) + "\n")
    write_doc(data, Path(args.doc))
    print(table(data))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
