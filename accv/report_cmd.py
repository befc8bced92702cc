"""``accv report``: the HTML page (and Markdown summary) of a fuzzing campaign's database
(reports/, docs/report.md). Exit codes: 0 written, 2 bad input (no such file, not a campaign
database, unknown campaign)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

__all__ = ["add_parser"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="HTML page and Markdown summary of a fuzzing campaign database")
    p.add_argument("db", metavar="RUN.sqlite", help="the campaign database (accv fuzz --db)")
    p.add_argument("-o", "--output", help="the HTML file to write (default: RUN.html beside the database)")
    p.add_argument("--campaign", type=int, help="the campaign to report on (default: the newest)")
    p.add_argument("--md", metavar="SUMMARY.md", help="also write the Markdown summary here")
    p.add_argument("--no-cache", action="store_true",
                   help="neither read nor write the finished campaigns' totals in RUN.sqlite.report-cache.json")
    p.set_defaults(fn=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from reports.html import render_html
    from reports.markdown import render_markdown
    from reports.query import load

    t0 = time.perf_counter()
    data = load(args.db, args.campaign, cache=not args.no_cache)
    out = Path(args.output) if args.output else Path(args.db).with_suffix(".html")
    out.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(data)
    out.write_text(page, encoding="utf-8")
    written = [f"{out} ({len(page.encode()) / 1024:.0f} KiB)"]
    if args.md:
        md = Path(args.md)
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(render_markdown(data, out.name if md.parent.resolve() == out.parent.resolve() else str(out)),
                      encoding="utf-8")
        written.append(str(md))
    c = data.campaign
    print(f"accv report: campaign {c.id} ({c.cases:,} cases, {len(c.buckets)} bucket(s)) -> {', '.join(written)} "
          f"in {time.perf_counter() - t0:.2f} s")
    return 0
