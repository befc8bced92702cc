#!/usr/bin/env python3
"""Mutation testing of the harness: plant each of a list of realistic bugs of the project's own
(scripts/mutants.json) in a copy of the working tree and see whether a fixed-seed campaign finds it.

For each mutant: the files of HEAD (as it was when the script started; ``git archive``) are
copied to ``build/mutate/<id>/`` (the Verilator build cache
``build/rtl`` is shared: it is keyed by the design's content hash, so a mutated design gets a build
of its own), the one replacement is applied, and ``accv fuzz`` runs there (``PYTHONPATH`` = the
copy) on the mutant's targets with a fixed seed, ``--minutes M`` and ``--stop-at-failure``. The
mutant is **killed** when the campaign records a failure (the oracle is the failing case's stage:
``compare.rtl``, ``canary.sim``, ``run.emulated``, ``compile``, ...) and **survives** otherwise. The
unmutated tree runs first (the baseline): a failure there makes every verdict meaningless, and the
script stops.

    python scripts/mutate.py [--minutes 10] [--only M01,M07] [--json build/mutate/result.json]

prints one row per mutant and the score, and writes the rows as JSON. docs/mutation.md has the
table of the last full run. Exit 0 when the score is at least ``--goal`` (default 95%), else 1.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTANTS = ROOT / "scripts" / "mutants.json"
FAILURES = ("mismatch", "compile-crash", "backend-crash", "timeout", "crash")


def load_mutants(path: Path = MUTANTS) -> list[dict]:
    """The mutant list, each checked to apply exactly once."""
    out = json.loads(path.read_text())
    for m in out:
        text = (ROOT / m["file"]).read_text()
        n = text.count(m["old"])
        if n != 1:
            raise SystemExit(f"{path.name}: mutant {m['id']}: its text occurs {n} times in {m['file']} (must be once)")
    return out


def head() -> str:
    """The commit every copy is made from (fixed when the script starts: later edits of the working
    tree do not reach a run in progress)."""
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.strip()


def copy_tree(dest: Path, commit: str) -> None:
    """The files of ``commit`` into ``dest`` (``git archive``); the RTL build cache linked."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    (dest / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "rtl").mkdir(parents=True, exist_ok=True)
    os.symlink(ROOT / "build" / "rtl", dest / "build" / "rtl")


def campaign(tree: Path, targets: list[str], minutes: float, seed: int) -> dict:
    """Run the fixed-seed campaign in ``tree``; its first failure (or none) and its counts."""
    db = tree / "build" / "mutate.sqlite"
    for p in tree.glob("build/mutate.sqlite*"):
        p.unlink()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "accv", "fuzz", "--target", ",".join(targets), "--seed", str(seed),
                        "--minutes", str(minutes), "--workers", "2", "--db", str(db), "--no-reduce", "--no-report",
                        "--stop-at-failure", "--no-warm-up"], cwd=tree, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    if not db.exists():
        return {"killed": True, "oracle": "campaign did not start", "detail": (r.stderr or r.stdout)[-300:],
                "cases": 0, "seconds": seconds}
    con = sqlite3.connect(db)
    q = ",".join(f"'{o}'" for o in FAILURES)
    first = con.execute(f"SELECT target, seed, generator, outcome, stage, symptom FROM cases WHERE outcome IN ({q}) "
                        "ORDER BY done LIMIT 1").fetchone()
    cases = con.execute("SELECT COUNT(*) FROM cases").fetchone()[0]
    con.close()
    if first is None:
        return {"killed": False, "oracle": "-", "detail": "", "cases": cases, "seconds": seconds}
    t, s, g, outcome, stage, symptom = first
    return {"killed": True, "oracle": f"{outcome} at {stage}" if stage else outcome,
            "detail": f"{t} seed {s} ({g}): {symptom}"[:200], "cases": cases, "seconds": seconds}


def markdown(result: dict) -> str:
    """The rows of a result JSON as the Markdown table of docs/mutation.md."""
    rows = result["rows"]
    killed = sum(r["killed"] for r in rows)
    out = ["| id | area | bug | campaign | verdict | oracle that caught it | first failing case |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['id']} | {r['area']} | {r['what']} ({r['file']}) | {','.join(r['targets'])} | "
                   f"{r['verdict']} | {r['oracle']} | {r['detail'] or '-'} |".replace("\n", " "))
    out.append("")
    out.append(f"Score: {killed} of {len(rows)} killed ({100.0 * killed / max(len(rows), 1):.1f}%), each by a "
               f"fixed-seed (seed {result['seed']}) campaign of at most {result['minutes']:g} minutes, at commit "
               f"{result.get('commit', '?')[:7]}.")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="each mutant's campaign (default 10)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="comma-separated mutant ids")
    ap.add_argument("--goal", type=float, default=95.0, help="the score to meet, in percent (default 95)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the unmutated campaign")
    ap.add_argument("--json", default=str(ROOT / "build" / "mutate" / "result.json"))
    ap.add_argument("--table", metavar="RESULT.json", help="print a result's Markdown table and exit")
    a = ap.parse_args(argv)
    if a.table:
        print(markdown(json.loads(Path(a.table).read_text())))
        return 0
    mutants = load_mutants()
    if a.only:
        keep = set(a.only.split(","))
        mutants = [m for m in mutants if m["id"] in keep]
    work = ROOT / "build" / "mutate"
    work.mkdir(parents=True, exist_ok=True)
    commit = head()
    from tqdm import tqdm

    rows = []
    if not a.no_baseline:
        tree = work / "baseline"
        copy_tree(tree, commit)
        targets = sorted({t for m in mutants for t in m["targets"]})
        base = campaign(tree, targets, a.minutes, a.seed)
        print(f"baseline ({','.join(targets)}): {base['cases']} cases in {base['seconds']:.0f} s, "
              f"{'FAILED: ' + base['oracle'] + ' ' + base['detail'] if base['killed'] else 'no failure'}", flush=True)
        if base["killed"]:
            return 2
        shutil.rmtree(tree)
    print(f"{'id':4} {'area':28} {'verdict':9} {'oracle':26} {'cases':>5} {'s':>5}  what", flush=True)
    for m in tqdm(mutants, unit="mutant", file=sys.stderr, disable=not sys.stderr.isatty()):
        tree = work / m["id"]
        copy_tree(tree, commit)
        f = tree / m["file"]
        text = f.read_text()
        if text.count(m["old"]) != 1:
            raise SystemExit(f"mutant {m['id']}: its text does not occur once in {m['file']} at {commit[:7]}")
        f.write_text(text.replace(m["old"], m["new"], 1))
        r = campaign(tree, m["targets"], a.minutes, a.seed)
        row = {**{k: m[k] for k in ("id", "area", "file", "what", "targets")}, **r,
               "verdict": "killed" if r["killed"] else "survived"}
        rows.append(row)
        print(f"{m['id']:4} {m['area'][:28]:28} {row['verdict']:9} {r['oracle'][:26]:26} {r['cases']:5} "
              f"{r['seconds']:5.0f}  {m['what']}", flush=True)
        shutil.rmtree(tree)
        Path(a.json).write_text(json.dumps({"minutes": a.minutes, "seed": a.seed, "commit": commit, "rows": rows},
                                           indent=1))
    killed = sum(r["killed"] for r in rows)
    score = 100.0 * killed / max(len(rows), 1)
    print(f"score: {killed}/{len(rows)} killed ({score:.1f}%); goal {a.goal:g}%; rows in {a.json}")
    return 0 if score >= a.goal else 1


if __name__ == "__main__":
    sys.exit(main())
