"""The trend totals of finished campaigns, kept beside the database so a nightly report reads only
the newest campaign's rows.

What belongs here: reading and writing ``RUN.sqlite.report-cache.json``. A finished campaign is
never reopened (fuzz/store.py), so its totals (cases, outcomes, distinct coverage items, bucket
signatures) cannot change; an entry is used only while its key (id, start, finish, case count) still
matches the database, and a cache that cannot be read or written is simply not used.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

__all__ = ["TrendCache", "FIELDS"]

#: the CampaignRow fields an entry keeps (``buckets`` as a sorted list)
FIELDS = ("cases", "passed", "failures", "unsupported", "last_done", "ops", "instructions", "alpha", "buckets")
VERSION = 1


class TrendCache:
    """Entries for the finished campaigns of the database at ``db``."""

    def __init__(self, db: str | Path) -> None:
        self.path = Path(str(db) + ".report-cache.json")
        self.entries: dict[str, dict[str, Any]] = {}
        self.changed = False
        try:
            d = json.loads(self.path.read_text())
            if d.get("version") == VERSION:
                self.entries = d["campaigns"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            self.entries = {}

    @staticmethod
    def key(c: Any) -> list:
        return [c.id, c.started, c.finished, c.cases]

    def fill(self, c: Any) -> bool:
        """Set ``c``'s totals from its entry; False when there is none for its current key."""
        e = self.entries.get(str(c.id))
        if c.finished is None or not e or e.get("key") != self.key(c):
            return False
        for f in FIELDS:
            setattr(c, f, set(e[f]) if f == "buckets" else e[f])
        return True

    def put(self, c: Any) -> None:
        """Remember a finished campaign's totals."""
        if c.finished is None:
            return
        self.entries[str(c.id)] = {"key": self.key(c), **{f: sorted(getattr(c, f)) if f == "buckets" else
                                                          getattr(c, f) for f in FIELDS}}
        self.changed = True

    def save(self) -> None:
        """Write the file when something changed (atomically; nothing when the folder is not writable)."""
        if not self.changed:
            return
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps({"version": VERSION, "campaigns": self.entries}))
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)
