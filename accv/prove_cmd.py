"""``accv prove``: prove library rules, rule files and ``--rule`` texts; verdicts a CI can read.

Verdicts and exit codes (docs/rules.md, "Verdicts"):
    0  every instantiation meets ``--require`` (default ``bounded``: PROVED or BOUNDED)
    1  a rule is REFUTED (counterexample replayed) or the prover failed (ERROR)
    2  bad usage, an unknown rule name, a rule file that does not parse (``file:line:col``)
    4  some instantiation is UNKNOWN (a query timed out; the line names it), none refuted
    5  ``--require proved`` and some instantiation is only BOUNDED, none refuted or unknown
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from semantics.errors import InputError

__all__ = ["add_parser", "cmd_prove", "EXIT_REFUTED", "EXIT_UNKNOWN", "EXIT_BOUNDED"]

EXIT_REFUTED = 1
EXIT_UNKNOWN = 4
EXIT_BOUNDED = 5


def add_parser(sub: Any) -> None:
    """The ``prove`` subcommand."""
    p = sub.add_parser("prove", help="prove rewrite rules with z3 (library rules, rule files, --rule texts)")
    p.add_argument("rules", nargs="*", metavar="RULE|FAMILY|FILE",
                   help="library rule names or families, or rule files (.py, or text: one rule a line)")
    p.add_argument("--all", action="store_true", help="every rule of the library")
    p.add_argument("--rule", action="append", default=[], metavar="'LHS => RHS'",
                   help="one rule in the text form (repeatable)")
    p.add_argument("--dtype", action="append", default=[], metavar="DTYPE",
                   help="the dtypes --rule texts are claimed for (repeatable; default: their 'for' clause, else NUM)")
    p.add_argument("--require", choices=("proved", "bounded"), default="bounded",
                   help="the weakest verdict that passes (default bounded: PROVED or BOUNDED n<=N)")
    p.add_argument("--rank", type=int, default=3, help="prove rank-polymorphic library rules for ranks 1..R (default 3)")
    p.add_argument("--bound", type=int, default=3, help="size bound N of bounded proofs (default 3)")
    p.add_argument("--rlimit", type=int, default=None,
                   help="z3 resource limit per query, the limit that decides UNKNOWN the same on any machine "
                        "(default: verif.limits.RLIMIT; 0: none)")
    p.add_argument("--timeout", type=float, default=None,
                   help="wall-clock safety stop per query, seconds (default: verif.limits.TIMEOUT_S)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="parallel workers")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="prove on the Dask cluster whose scheduler is at ADDRESS (e.g. tcp://10.0.0.5:8786; "
                        "needs the dask extra and this package on the workers)")
    p.add_argument("--json", metavar="OUT", help="write the results as JSON")
    p.add_argument("--junit", metavar="OUT", help="write JUnit XML, one testcase per (rule, dtype, rank)")
    p.add_argument("--cex-dir", metavar="DIR", default="build/prove",
                   help="where refutations' HLO pairs and inputs are written (default build/prove)")
    p.add_argument("--no-cache", action="store_true", help="ignore cached results (still updates the cache)")
    p.add_argument("--quiet", action="store_true", help="only the summary")
    p.add_argument("--update-lock", action="store_true",
                   help="re-prove the proof lock's stale entries (verif/proofs.lock), prove the named library rules' "
                        "instantiations it lacks, and rewrite it")
    p.set_defaults(fn=cmd_prove)


def _select(args: argparse.Namespace) -> dict:
    from rewrite_rules.api import load_file
    from rewrite_rules.text import parse_rule
    from rewrite_rules.library import load

    lib = load()
    fams = {r.family for r in lib.values()}
    chosen: dict = {}
    for n in args.rules:
        if n in lib:
            chosen[n] = lib[n]
        elif n in fams:
            chosen.update({k: r for k, r in lib.items() if r.family == n})
        elif Path(n).is_file():
            for r in load_file(n):
                chosen[r.name] = r
        elif n.endswith((".py", ".txt", ".rules")):
            raise InputError(f"{n}: no such file")
        else:
            raise InputError(f"no rule, family or file named '{n}' (see: accv rules list; "
                             "a rule of your own: accv prove --rule 'LHS => RHS')")
    for k, text in enumerate(args.rule, start=1):
        r = parse_rule(text, file=f"--rule {k}", family="rule", dtypes=args.dtype or None)
        chosen[r.name] = r
    if args.dtype and not args.rule:
        raise InputError("--dtype applies to --rule texts")
    if args.all or (not args.rules and not args.rule):
        chosen = {**lib, **chosen}
    return chosen


def cmd_prove(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from verif.cache import ProofCache
    from verif.run import run_tasks, summarize, table, tasks_for, timing

    if args.update_lock:
        return _update_lock(args)
    rules = _select(args)
    tasks = tasks_for(rules.values(), args.rank)
    cache = ProofCache()
    bar = tqdm(total=len(tasks), unit="proof", disable=not sys.stderr.isatty() or args.quiet, file=sys.stderr)

    def progress(r) -> None:  # noqa: ANN001
        bar.update(1)
        if not args.quiet:
            bar.write(r.line(), file=sys.stdout)

    results = run_tasks(rules, tasks, timeout=args.timeout, rlimit=args.rlimit, bound=args.bound, jobs=args.jobs,
                        cache=cache, progress=progress, use_cache=not args.no_cache, scheduler=args.scheduler)
    bar.close()
    _fill_counterexamples(rules, results, args)
    summaries = summarize(rules, results)
    print()
    print(table(summaries))
    t = timing(results)
    counts = {v: sum(r.verdict == v for r in results) for v in ("proved", "bounded", "refuted", "unknown", "error")}
    print(f"\n{len(summaries)} rules, {len(results)} (rule, dtype, rank) proofs: " +
          ", ".join(f"{n} {v}" for v, n in counts.items()) +
          f"; time total {t['total_s']}s, median {t['median_s']}s, max {t['max_s']}s")
    code = exit_code([r.verdict for r in results], args.require)
    if args.json:
        _write_json(Path(args.json), args, summaries, results, code)
        print(f"wrote {args.json}")
    if args.junit:
        _write_junit(Path(args.junit), rules, results, args.require)
        print(f"wrote {args.junit}")
    for s in summaries:
        if s.verdict in ("refuted", "error"):
            r = next(r for r in s.results if r.verdict == s.verdict)
            print(f"accv: rule '{s.rule}' is {s.verdict} ({r.dtype} rank {r.rank}): {r.detail}", file=sys.stderr)
            if r.counterexample is not None:
                _print_counterexample(r, Path(args.cex_dir))
    if code == EXIT_UNKNOWN:
        print(f"accv: {counts['unknown']} proof(s) UNKNOWN (see their lines)", file=sys.stderr)
    elif code == EXIT_BOUNDED:
        print(f"accv: --require proved: {counts['bounded']} proof(s) only BOUNDED (no counterexample up to "
              f"n = {args.bound}, not a proof for every size)", file=sys.stderr)
    return code


def _update_lock(args: argparse.Namespace) -> int:
    """``--update-lock``: the stale entries and the named library rules (all with ``--all``) are
    proved (the proof cache first) and the lock rewritten with every passing result."""
    from rewrite_rules.library import load
    from verif.cache import ProofCache
    from verif.lock import ProofLock, update_lock
    from verif.run import tasks_for

    lib = load()
    if args.rule:
        raise InputError("--update-lock takes library rules and families (the compiler uses no others)")
    chosen = _select(args) if (args.rules or args.all) else {}
    other = sorted(n for n, r in chosen.items() if lib.get(n) is not r)
    if other:
        raise InputError(f"--update-lock: '{other[0]}' is not a library rule (the lock is the compiler's)")
    lock = ProofLock()
    stale = lock.stale(lib)
    for e, why in stale:
        print(f"stale: {e['rule']} [{e['dtype']} r{e['rank']}]: {why}")
    wanted = [(t.rule, t.dtype, t.rank) for t in tasks_for(chosen.values(), args.rank)]

    def progress(r) -> None:  # noqa: ANN001
        if not args.quiet:
            print(r.line())

    up = update_lock(lock, lib, wanted, bound=args.bound, jobs=args.jobs,
                     cache=None if args.no_cache else ProofCache(), timeout=args.timeout, rlimit=args.rlimit,
                     progress=progress, scheduler=args.scheduler)
    for d in up.dropped:
        print(f"dropped: {d}")
    print(f"{lock.path}: {up.written} entries ({len(up.results)} proved or read from the proof cache now, "
          f"{up.kept} current entries kept, {len(up.dropped)} dropped)")
    return exit_code([r.verdict for r in up.results], "bounded")


def exit_code(verdicts: list[str], require: str = "bounded") -> int:
    """The exit status of a list of verdicts (see the module docstring)."""
    from verif.run import worst

    w = worst(verdicts)
    if w in ("refuted", "error"):
        return EXIT_REFUTED
    if w == "unknown":
        return EXIT_UNKNOWN
    if w == "bounded" and require == "proved":
        return EXIT_BOUNDED
    return 0


def _fill_counterexamples(rules: dict, results: list, args: argparse.Namespace) -> None:
    """Refutations answered from the cache carry no counterexample: prove one of each rule again."""
    from verif.prover import prove

    done: set[str] = set()
    for k, r in enumerate(results):
        if r.verdict == "refuted" and r.counterexample is None and r.rule not in done:
            done.add(r.rule)
            again = prove(rules[r.rule], r.dtype, r.rank, args.timeout, args.bound, args.rlimit)
            if again.verdict == "refuted":
                again.seconds = r.seconds
                results[k] = again


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")[:60] or "rule"


def _print_counterexample(r: Any, root: Path) -> None:
    """The counterexample as an HLO pair and .npy inputs, with the ``accv run`` lines to replay it."""
    from semantics.npyio import save_output

    cex = r.counterexample
    d = root / f"{_slug(r.rule)}_{r.dtype}_r{r.rank}"
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for k, (name, a) in enumerate(cex.inputs.items()):
        p = d / f"input{k}_{_slug(name)}.npy"
        save_output(p, a)
        paths.append(str(p))
    print(f"  counterexample ({cex.reason}): sizes/attributes {cex.sizes}", file=sys.stderr)
    for name, a in cex.inputs.items():
        print(f"    {name} = {_show(a)}", file=sys.stderr)
    sides = [("lhs", cex.lhs_hlo, cex.lhs_out), ("rhs", cex.rhs_hlo, cex.rhs_out)]
    inputs = f" --inputs {','.join(paths)}" if paths else ""
    for side, text, out in sides:
        if not text:
            print(f"    {side}: not a valid graph", file=sys.stderr)
            continue
        p = d / f"{side}.hlo"
        p.write_text(text)
        print(f"    {side} -> {_show(out)}", file=sys.stderr)
        print(f"    accv run {p}{inputs} --out {d / side}", file=sys.stderr)
    for side, text, _ in sides:
        if text:
            print(f"  --- {side}.hlo ---\n" + "".join(f"  {ln}\n" for ln in text.rstrip().splitlines()), file=sys.stderr,
                  end="")


def _show(a: Any) -> str:
    import numpy as np

    a = np.asarray(a)
    if a.dtype.kind in "fV":
        u = a.view(f"u{a.dtype.itemsize}")
        vals = [f"{float(v)!r}(0x{int(b):0{a.dtype.itemsize * 2}X})" for v, b in
                zip(a.astype(np.float64).reshape(-1), u.reshape(-1), strict=True)]
        return f"{a.dtype}{list(a.shape)} [" + ", ".join(vals[:16]) + (" ...]" if len(vals) > 16 else "]")
    return f"{a.dtype}{list(a.shape)} {a.reshape(-1).tolist()[:16]}"


def _write_json(path: Path, args: argparse.Namespace, summaries: list, results: list, code: int) -> None:
    from verif.run import timing

    out = {"rank_bound": args.rank, "size_bound": args.bound, "require": args.require, "exit_code": code,
           "timing": timing(results),
           "rules": [{"rule": s.rule, "family": s.family, "verdict": s.verdict, "status": s.status,
                      "generality": s.generality, "seconds": round(s.seconds, 3),
                      "dtypes": sorted({r.dtype for r in s.results}),
                      "instantiations": [r.to_json() for r in s.results]} for s in summaries]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")


def _write_junit(path: Path, rules: dict, results: list, require: str) -> None:
    """JUnit XML: one testsuite per family, one testcase per (rule, dtype, rank); REFUTED and
    (under ``--require proved``) BOUNDED are failures, UNKNOWN a failure of type unknown, ERROR an
    error; the verdict line is the testcase's system-out."""
    by_fam: dict[str, list] = {}
    for r in sorted(results, key=lambda r: (rules[r.rule].family, r.rule, r.dtype, r.rank)):
        by_fam.setdefault(rules[r.rule].family, []).append(r)
    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    fails = sum(exit_code([r.verdict], require) != 0 and r.verdict != "error" for r in results)
    errors = sum(r.verdict == "error" for r in results)
    lines.append(f'<testsuites name="accv prove" tests="{len(results)}" failures="{fails}" errors="{errors}">')
    for fam, rs in by_fam.items():
        f = sum(exit_code([r.verdict], require) != 0 and r.verdict != "error" for r in rs)
        e = sum(r.verdict == "error" for r in rs)
        t = sum(r.seconds for r in rs)
        lines.append(f'  <testsuite name={quoteattr(fam)} tests="{len(rs)}" failures="{f}" errors="{e}" time="{t:.3f}">')
        for r in rs:
            name = quoteattr(f"{r.rule} [{r.dtype} r{r.rank}]")
            lines.append(f'    <testcase classname={quoteattr("accv.prove." + fam)} name={name} time="{r.seconds:.3f}">')
            msg = quoteattr(f"{r.tag()}: {r.detail}" if r.detail else r.tag())
            if r.verdict == "error":
                lines.append(f"      <error message={msg}/>")
            elif exit_code([r.verdict], require) != 0:
                lines.append(f'      <failure type={quoteattr(r.verdict)} message={msg}/>')
            lines.append(f"      <system-out>{escape(r.line())}</system-out>")
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
