"""A campaign's RTL code coverage (``accv fuzz --rtl-coverage``): where its files go and its table.

While a campaign collects coverage, every worker process runs the rtl backend on the designs'
coverage builds (:mod:`rtl_harness.coverage`) and, after each case, writes its running tally to
``<db>.cov/campaign-<id>/<design>-<pid>-<token>.npz``. When the campaign stops, :func:`record` merges the
folder's files per design and stores the figure in the campaign database:

- ``rtl_coverage``: one row per (campaign, design, kind) with kind ``line`` (Verilator line
  coverage: statement blocks and branch arms) or ``toggle``, ``covered`` and ``total`` points, and
  ``files`` (how many per-process files were merged). A resumed campaign's files stay in its folder,
  so the figure it records covers every run of the campaign.

The table lives in the campaign database beside :mod:`fuzz.store`'s tables; only the coordinating
process writes it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

__all__ = ["folder", "read", "record"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS rtl_coverage (
    campaign INTEGER NOT NULL,
    design TEXT NOT NULL,
    kind TEXT NOT NULL,
    covered INTEGER NOT NULL,
    total INTEGER NOT NULL,
    files INTEGER NOT NULL,
    PRIMARY KEY (campaign, design, kind)
);
"""


def folder(db: str | Path, campaign: int) -> Path:
    """The coverage folder of ``campaign`` in the database ``db``."""
    return Path(f"{db}.cov") / f"campaign-{campaign}"


def record(db: sqlite3.Connection, campaign: int, where: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """Merge the tallies in ``where`` per design and store the figure of ``campaign`` (replacing
    an earlier one of the same campaign); returns design -> kind -> (covered, total)."""
    from rtl_harness.coverage import folder_summary

    figures = folder_summary(where) if where.is_dir() else {}
    files = {d: len(list(where.glob(f"{d}-*.npz"))) for d in figures}
    db.executescript(_SCHEMA)
    with db:
        for design, kinds in figures.items():
            for kind, (covered, total) in kinds.items():
                db.execute("INSERT INTO rtl_coverage (campaign, design, kind, covered, total, files) "
                           "VALUES (?,?,?,?,?,?) ON CONFLICT(campaign, design, kind) DO UPDATE SET "
                           "covered = excluded.covered, total = excluded.total, files = excluded.files",
                           (campaign, design, kind, covered, total, files[design]))
    return figures


def read(db: sqlite3.Connection, campaign: int) -> dict[str, dict[str, tuple[int, int]]]:
    """The stored figure of ``campaign``: design -> kind -> (covered, total) ({} when none)."""
    db.executescript(_SCHEMA)
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for design, kind, covered, total in db.execute(
            "SELECT design, kind, covered, total FROM rtl_coverage WHERE campaign = ? ORDER BY design, kind",
            (campaign,)):
        out.setdefault(design, {})[kind] = (int(covered), int(total))
    return out
