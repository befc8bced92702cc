"""A campaign's RTL code coverage (``accv fuzz --rtl-coverage``): where its files go and its table.

While a campaign collects coverage, every worker process runs the rtl backend on the designs'
coverage builds (:mod:`rtl_harness.coverage`) and, after each case, writes its running tally to
``<db>.cov/campaign-<id>/<design>-<pid>-<token>.npz``. When the campaign stops, :func:`record` merges the
folder's files per design and stores the figure in the campaign database:

- ``rtl_coverage`` (:mod:`fuzz.schema`): one row per (campaign, design, kind) with kind ``line``
  (Verilator line coverage: statement blocks and branch arms) or ``toggle``, ``covered`` and
  ``total`` points, and ``files`` (how many per-process files were merged). A resumed campaign's
  files stay in its folder, so the figure it records covers every run of the campaign.

The table lives in the campaign database beside :mod:`fuzz.store`'s tables; only the coordinating
process writes it.
"""

from __future__ import annotations

from pathlib import Path

from .store import Store

__all__ = ["folder", "record"]


def folder(db: str | Path, campaign: int) -> Path:
    """The coverage folder of ``campaign`` in the database ``db``."""
    return Path(f"{db}.cov") / f"campaign-{campaign}"


def record(store: Store, campaign: int, where: Path) -> dict[str, dict[str, tuple[int, int]]]:
    """Merge the tallies in ``where`` per design and store the figure of ``campaign`` (replacing
    an earlier one of the same campaign); returns design -> kind -> (covered, total)."""
    from rtl_harness.coverage import folder_summary

    figures = folder_summary(where) if where.is_dir() else {}
    store.put_rtl_coverage(campaign, figures, {d: len(list(where.glob(f"{d}-*.npz"))) for d in figures})
    return figures
