"""``accv fuzz``: run a differential campaign (fuzz/campaign.py), triage it, compare it with the
previous campaign in the same database, and print where the results are; ``--replay DIR`` re-runs a
reproducer folder. Exit codes: 0 no new bucket (replay: the bug is gone), 1 new buckets appeared
(replay: still failing), 2 bad usage."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from semantics.errors import InputError

__all__ = ["add_parser"]


def _list(s: str) -> tuple[str, ...]:
    return tuple(x for x in s.split(",") if x)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fuzz", help="differential campaign: random graphs on every backend vs the reference")
    p.add_argument("--target", default="gemmini,qkv,amx", help="comma-separated targets (default gemmini,qkv,amx)")
    p.add_argument("--backend", default="",
                   help="comma-separated backends and graph oracles: sim, stream, rtl, emulated, native, xla "
                        "(XLA:CPU vs the reference semantics; needs the xla extra) (default: every available one)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--minutes", type=float, help="run for this long")
    g.add_argument("--cases", type=int, help="cases per target")
    p.add_argument("--workers", type=int, default=2, help="worker processes (0: in this process, no timeouts)")
    p.add_argument("--seed", type=int, default=0, help="first seed (case i of a target has seed S+i)")
    p.add_argument("--db", default="build/fuzz/run.sqlite", help="SQLite database (default build/fuzz/run.sqlite)")
    p.add_argument("--scheduler", help="Dask scheduler address: run the cases on that cluster")
    p.add_argument("--generator", default="",
                   help="nnsmith, gen, blocks (qkv), layers, layers_os and layers_bias (gemmini), comma-separated, "
                        "used in turn (default per target: fuzz/opsets.py CAMPAIGN_GENERATORS, docs/fuzzing.md)")
    p.add_argument("--max-nodes", type=int, default=5, help="operators per generated graph (default 5)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per case before it is killed (default 120)")
    p.add_argument("--proofs", choices=("cached", "prove"), default="prove",
                   help="rule instantiations: prove a missing one at first use, as accv compile does (default; "
                        "outcomes then do not depend on what the proof cache holds), or cached proofs only")
    p.add_argument("--no-reduce", action="store_true", help="skip reducing new buckets")
    p.add_argument("--no-host", action="store_true",
                   help="no host partitioning: a graph the target cannot run whole is 'unsupported' (by default "
                        "its accelerator regions are compiled and checked, the rest runs on the host)")
    p.add_argument("--no-report", action="store_true",
                   help="do not write the campaign's HTML page and Markdown summary (RUN.html, RUN.md; accv report)")
    p.add_argument("--rtl-coverage", action="store_true",
                   help="collect Verilator line and toggle coverage of the rtl backend's runs (coverage builds of the "
                        "designs; the figure per design goes to the database and the report)")
    p.add_argument("--no-guide", action="store_true",
                   help="no coverage-guided generator choice: every case takes the fixed rotation (fuzz/guide.py)")
    p.add_argument("--no-warm-up", action="store_true",
                   help="no warm-up cases before the clock starts (scripts/mutate.py: its campaigns stop at a failure, "
                        "not at the clock)")
    p.add_argument("--stop-at-failure", action="store_true",
                   help="start no new case once a failure is recorded (the cases running finish); scripts/mutate.py")
    p.add_argument("--replay", metavar="DIR", help="re-run a reproducer folder (exit 1 while it still fails)")
    p.set_defaults(fn=cmd_fuzz)


def _need_extra(args: argparse.Namespace) -> None:
    """One line naming the extra to install where a campaign needs a module it lacks (worker
    processes, and the reducer run beside them: pebble; ``--scheduler``: dask's distributed),
    before anything runs."""
    import importlib.util

    need = []
    if args.workers > 0:
        need.append(("pebble", "fuzz"))
    if args.scheduler:
        need.append(("distributed", "dask"))
    for module, extra in need:
        if importlib.util.find_spec(module) is None:
            raise InputError(f"accv fuzz needs the '{extra}' extra ({module} is not installed): "
                             f"pip install 'accv[{extra}]' (or --workers 0: the cases in this process, without timeouts)"
                             if module == "pebble" else
                             f"accv fuzz --scheduler needs the '{extra}' extra ({module} is not installed): "
                             f"pip install 'accv[{extra}]'")


def cmd_fuzz(args: argparse.Namespace) -> int:
    if args.replay:
        from check.evaluate import replay

        if not (Path(args.replay) / "replay.json").is_file():
            raise InputError(f"{args.replay}: not a reproducer folder (no replay.json)")
        v = replay(args.replay)
        print(f"{args.replay}: {v.outcome}" + (f": {v.reason}" if v.reason else ""))
        return 1 if v.failed else 0
    _need_extra(args)
    from compilers.targets import TARGETS
    from fuzz.campaign import CampaignArgs, report_lines, run_campaign
    from fuzz.triage import compare_with_previous, triage

    targets = _list(args.target)
    for t in targets:
        if t not in TARGETS:
            raise InputError(f"--target: unknown target '{t}' (known: {', '.join(TARGETS)})")
    if args.minutes is None and args.cases is None:
        args.minutes = 2.0
    ca = CampaignArgs(targets=targets, backends=_list(args.backend), cases=args.cases, minutes=args.minutes,
                      seed=args.seed, generators=_list(args.generator), max_nodes=args.max_nodes,
                      timeout=args.timeout, proofs=args.proofs, rtl_coverage=args.rtl_coverage,
                      host=not args.no_host, guided=not args.no_guide)
    res = run_campaign(ca, args.db, workers=args.workers, scheduler=args.scheduler,
                       progress=sys.stderr.isatty(), stop_at_failure=args.stop_at_failure,
                       warm_up=False if args.no_warm_up else None, say=True)
    if not args.no_reduce:
        triage(args.db, res.campaign, ca.backends, ca.proofs, in_process=args.workers <= 0)
    cmp = compare_with_previous(args.db, res.campaign)
    what = "resumed" if res.resumed else "ran"
    print(f"accv fuzz: campaign {res.campaign} {what}: {res.new_cases} new case(s) in {res.seconds:.0f} s; "
          + ", ".join(f"{n} {o}" for o, n in sorted(res.counts.items())))
    for line in report_lines(args.db, res.campaign):
        print("  " + line)
    prev = f"campaign {cmp.previous}" if cmp.previous is not None else "no previous campaign"
    print(f"  against {prev}: {len(cmp.new)} new bucket(s), {len(cmp.vanished)} vanished")
    for s in cmp.new:
        print(f"    new: {s}")
    for s in cmp.vanished:
        print(f"    vanished: {s}")
    print(f"  results: {args.db} (tables campaigns, cases, buckets); reproducers under {args.db}.repro/")
    if not args.no_report:
        from reports.html import render_html
        from reports.markdown import render_markdown
        from reports.query import load

        data = load(args.db, res.campaign)
        page, md = Path(args.db).with_suffix(".html"), Path(args.db).with_suffix(".md")
        page.write_text(render_html(data), encoding="utf-8")
        md.write_text(render_markdown(data, page.name), encoding="utf-8")
        print(f"  report: {page} (open in a browser), summary {md}; docs/report.md")
    return 1 if cmp.new else 0
