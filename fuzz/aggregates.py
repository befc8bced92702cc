"""Aggregate reads of the campaign database, for reports: every query groups in SQLite (``GROUP BY``
over ``json_each`` of the JSON columns) and returns small rows.

What belongs here: the SQL a report needs, as methods of :class:`Aggregates`, which
:class:`fuzz.store.Store` inherits; shaping the rows into tables and pages is :mod:`reports.query`'s.
A database of hundreds of thousands of cases is read in well under two seconds
(``python bench/report_scale.py``).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from .schema import FAILURES

__all__ = ["Aggregates", "Percentiles"]

#: group -> {"n", "p50", "p90", "max"}
Percentiles = dict[str, dict[str, float]]


def _ids(ids: list[int]) -> str:
    return ",".join(str(int(i)) for i in ids)


class Aggregates:
    """The report's queries over ``self.db`` (an open connection to a campaign database)."""

    db: sqlite3.Connection

    # -- campaigns and their totals ----------------------------------------------------------------
    def campaign_rows(self) -> list[tuple[int, dict[str, Any], float, float | None]]:
        """(id, args, started, finished) of every campaign, oldest first."""
        return [(int(i), json.loads(a), float(s), f) for i, a, s, f in
                self.db.execute("SELECT id, args, started, finished FROM campaigns ORDER BY id")]

    def has_case_column(self, name: str) -> bool:
        """Whether the ``cases`` table has column ``name`` (an old database may lack an added one)."""
        return name in {r[1] for r in self.db.execute("PRAGMA table_info(cases)")}

    def case_counts(self) -> dict[int, int]:
        """Cases per campaign (counted on the primary key's index)."""
        return {int(i): int(n) for i, n in self.db.execute("SELECT campaign, COUNT(*) FROM cases GROUP BY campaign")}

    def totals(self, ids: list[int], with_done: bool) -> list[tuple[int, int, int, int, int, float | None]]:
        """Per campaign of ``ids``: (campaign, cases, passed, failures, unsupported, last case's ``done``)."""
        fail = ",".join(f"'{o}'" for o in FAILURES)
        done = "MAX(done)" if with_done else "NULL"
        return [(int(c), int(n), int(p or 0), int(f or 0), int(u or 0), last) for c, n, p, f, u, last in self.db.execute(
            f"SELECT campaign, COUNT(*), SUM(outcome = 'pass'), SUM(outcome IN ({fail})), SUM(outcome = 'unsupported'), "
            f"{done} FROM cases WHERE campaign IN ({_ids(ids)}) GROUP BY campaign")]

    def coverage_values(self, key: str, ids: list[int]) -> list[tuple[int, str, str, int]]:
        """(campaign, target, value, cases) of the list-valued coverage entry ``key`` (``ops``, ``alpha``)."""
        return [(int(c), t, str(v), int(n)) for c, t, v, n in self.db.execute(
            "SELECT c.campaign, c.target, j.value, COUNT(*) FROM cases c, json_each(c.coverage, ?) j "
            f"WHERE c.campaign IN ({_ids(ids)}) GROUP BY 1, 2, 3", (f"$.{key}",))]

    def coverage_counts(self, key: str, ids: list[int]) -> list[tuple[int, str, str, int, int]]:
        """(campaign, target, name, cases, uses) of the counted coverage entry ``key`` (``instructions``)."""
        return [(int(c), t, str(k), int(n), int(u or 0)) for c, t, k, n, u in self.db.execute(
            "SELECT c.campaign, c.target, j.key, COUNT(*), SUM(j.value) FROM cases c, json_each(c.coverage, ?) j "
            f"WHERE c.campaign IN ({_ids(ids)}) GROUP BY 1, 2, 3", (f"$.{key}",))]

    def campaign_buckets(self, ids: list[int]) -> list[tuple[int, str]]:
        """(campaign, bucket signature) of every bucket each campaign of ``ids`` hit."""
        return [(int(c), b) for c, b in self.db.execute(
            f"SELECT DISTINCT campaign, bucket FROM cases WHERE campaign IN ({_ids(ids)}) AND bucket IS NOT NULL")]

    def generator_coverage(self, campaign: int, target: str, lo: int, hi: int) -> list[tuple[str, dict[str, Any]]]:
        """(generator, coverage) of ``target``'s cases of ``campaign`` with seeds in [lo, hi), in seed
        order (what fuzz/guide.py scores)."""
        return [(str(g), json.loads(c) if c else {}) for g, c in self.db.execute(
            "SELECT generator, coverage FROM cases WHERE campaign = ? AND target = ? AND seed >= ? AND seed < ? "
            "ORDER BY seed", (campaign, target, lo, hi))]

    # -- one campaign -------------------------------------------------------------------------------
    def outcome_stages(self, campaign: int) -> list[tuple[str, str, str | None, int]]:
        """(target, outcome, stage, cases) of ``campaign``."""
        return [(t, o, s, int(n)) for t, o, s, n in self.db.execute(
            "SELECT target, outcome, stage, COUNT(*) FROM cases WHERE campaign = ? GROUP BY 1, 2, 3", (campaign,))]

    def outcome_counts(self, campaign: int) -> dict[str, dict[str, int]]:
        """target -> outcome -> cases of ``campaign``, targets and outcomes in name order."""
        out: dict[str, dict[str, int]] = {}
        for t, o, n in self.db.execute("SELECT target, outcome, COUNT(*) FROM cases WHERE campaign = ? "
                                       "GROUP BY target, outcome ORDER BY target, outcome", (campaign,)):
            out.setdefault(t, {})[o] = int(n)
        return out

    def finished_per_minute(self, campaign: int, started: float) -> list[tuple[int, str, int]]:
        """(minute since ``started``, target, cases finished in it) of ``campaign``."""
        return [(int(m), t, int(n)) for m, t, n in self.db.execute(
            "SELECT CAST((done - ?) / 60 AS INTEGER), target, COUNT(*) FROM cases WHERE campaign = ? AND done IS NOT "
            "NULL GROUP BY 1, 2 ORDER BY 1", (started, campaign))]

    def unsupported_operators(self, campaign: int) -> list[tuple[str, str, int]]:
        """(target, the operator the compiler gave up on, cases) of ``campaign``'s unsupported cases, most first."""
        return [(t, str(v), int(n)) for t, v, n in self.db.execute(
            "SELECT target, json_extract(coverage, '$.unsupported') u, COUNT(*) FROM cases WHERE campaign = ? AND "
            "outcome = 'unsupported' AND u IS NOT NULL GROUP BY 1, 2 ORDER BY 3 DESC", (campaign,))]

    def placement_totals(self, campaign: int) -> list[tuple[str, int, int, int, int, int, int]]:
        """Per target, over ``campaign``'s compiled cases: (target, cases, partitioned cases, MACs on
        the accelerator, all MACs, operators on the accelerator, all operators)."""
        return [(str(t), int(n), int(k or 0), int(ma or 0), int(mt or 0), int(oa or 0), int(ot or 0))
                for t, n, k, ma, mt, oa, ot in self.db.execute(
                    "WITH p AS (SELECT target, json_extract(coverage, '$.placement') AS j FROM cases "
                    "WHERE campaign = ? AND j IS NOT NULL) SELECT target, COUNT(*), "
                    "SUM(json_extract(j, '$.host_steps') > 0), SUM(json_extract(j, '$.macs_acc')), "
                    "SUM(json_extract(j, '$.macs_total')), SUM(json_extract(j, '$.ops_acc')), "
                    "SUM(json_extract(j, '$.ops_total')) FROM p GROUP BY 1", (campaign,))]

    def placement_ops(self, campaign: int) -> list[tuple[str, str, int, int]]:
        """(target, operator, instances on the accelerator, instances on the host) over ``campaign``'s
        compiled cases."""
        acc = self.db.execute(
            "SELECT target, e.key, SUM(e.value) FROM cases, json_each(json_extract(coverage, '$.placement.acc_ops')) e "
            "WHERE campaign = ? GROUP BY 1, 2", (campaign,)).fetchall()
        host = self.db.execute(
            "SELECT target, json_extract(e.value, '$.op'), COUNT(*) FROM cases, "
            "json_each(json_extract(coverage, '$.placement.host')) e WHERE campaign = ? GROUP BY 1, 2",
            (campaign,)).fetchall()
        out: dict[tuple[str, str], list[int]] = {}
        for t, op, n in acc:
            out.setdefault((str(t), str(op)), [0, 0])[0] = int(n)
        for t, op, n in host:
            out.setdefault((str(t), str(op)), [0, 0])[1] = int(n)
        return [(t, op, a, h) for (t, op), (a, h) in sorted(out.items())]

    def host_reasons(self, campaign: int, limit: int = 30) -> list[tuple[str, str, str, int]]:
        """(target, operator, why it ran on the host, instances) of ``campaign``, most first."""
        return [(str(t), str(op), str(w), int(n)) for t, op, w, n in self.db.execute(
            "SELECT target, json_extract(e.value, '$.op'), json_extract(e.value, '$.why'), COUNT(*) FROM cases, "
            "json_each(json_extract(coverage, '$.placement.host')) e WHERE campaign = ? GROUP BY 1, 2, 3 "
            "ORDER BY 4 DESC LIMIT ?", (campaign, limit))]

    def compile_bins(self, campaign: int, edges: list[float], parts: tuple[str, ...]) -> list[tuple[Any, ...]]:
        """Per (target, bin of the compile time below each of ``edges``, the last bin above them): (target,
        bin, cases, seconds, cases with a module breakdown, their seconds, then each of ``parts``' seconds
        (timing keys ``compile.PART``)). Named keys are read with json_extract (SQLite reuses one parse of a
        row's JSON for all of them)."""
        arms = " ".join(f"WHEN c < {e!r} THEN {i}" for i, e in enumerate(edges))
        sums = ", ".join(f"SUM(json_extract(timings, '$.\"compile.{k}\"'))" for k in parts)
        return self.db.execute(
            "WITH t AS MATERIALIZED (SELECT target, timings, json_extract(timings, '$.compile') AS c, "
            "json_extract(timings, '$.\"compile.M1\"') IS NOT NULL AS p FROM cases WHERE campaign = ?) "
            f"SELECT target, CASE {arms} ELSE {len(edges)} END, COUNT(*), SUM(c), SUM(p), SUM(CASE WHEN p THEN c END), "
            f"{sums} FROM t WHERE c IS NOT NULL GROUP BY 1, 2", (campaign,)).fetchall()

    def cycle_backends(self, campaign: int) -> set[tuple[str, str]]:
        """(target, backend) of every backend that reported cycles (a number or null) in ``campaign``."""
        return {(t, str(k)) for t, k in self.db.execute(
            "SELECT DISTINCT c.target, j.key FROM cases c, json_each(c.cycles) j WHERE c.campaign = ?", (campaign,))}

    def backend_runs(self, campaign: int, target: str, backends: list[str]) -> dict[str, tuple[int, float]]:
        """backend -> (runs, seconds) of ``target``'s cases in ``campaign`` (timing keys ``run.BACKEND``)."""
        if not backends:
            return {}
        cols = ", ".join(f"COUNT(json_extract(timings, '$.\"run.{b}\"')), SUM(json_extract(timings, '$.\"run.{b}\"'))"
                         for b in backends)
        row = self.db.execute(f"SELECT {cols} FROM cases WHERE campaign = ? AND target = ?", (campaign, target)).fetchone()
        return {b: (int(row[2 * i] or 0), float(row[2 * i + 1] or 0)) for i, b in enumerate(backends)}

    def compile_percentiles(self, campaign: int) -> Percentiles:
        """Per target: n, p50, p90 and max of the compile time."""
        return self._percentiles("SELECT target AS g, json_extract(timings, '$.compile') AS x FROM cases "
                                 "WHERE campaign = ?", (campaign,))

    def cycle_percentiles(self, campaign: int) -> Percentiles:
        """Per ``'TARGET BACKEND'``: n, p50, p90 and max of the cycles (a backend's null cycles drop out)."""
        return self._percentiles("SELECT c.target || ' ' || j.key AS g, j.value AS x FROM cases c, "
                                 "json_each(c.cycles) j WHERE c.campaign = ?", (campaign,))

    def _percentiles(self, source: str, params: tuple[Any, ...]) -> Percentiles:
        """n, p50, p90 and max of ``x`` per group ``g`` of the query ``source`` (window functions: SQLite sorts,
        Python sees three rows a group)."""
        out: Percentiles = {}
        for g, x, rn, n in self.db.execute(
                f"WITH s AS MATERIALIZED ({source}) SELECT g, x, rn, n FROM (SELECT g, x, ROW_NUMBER() OVER (PARTITION "
                "BY g ORDER BY x) AS rn, COUNT(*) OVER (PARTITION BY g) AS n FROM s WHERE x IS NOT NULL) "
                "WHERE rn = (n + 1) / 2 OR rn = MAX(1, CAST(0.9 * n AS INTEGER)) OR rn = n", params):
            d = out.setdefault(g, {"n": int(n)})
            if rn == (n + 1) // 2:
                d["p50"] = float(x)
            if rn == max(1, int(0.9 * n)):
                d["p90"] = float(x)
            if rn == n:
                d["max"] = float(x)
        return out

    def cycle_pairs(self, campaign: int, target: str, step: int, limit: int) -> list[tuple[int, int, int]]:
        """(seed, sim cycles, rtl cycles) of ``target``'s cases with both counts, every ``step``-th seed (a
        deterministic sample), at most ``limit``."""
        return [(int(s), int(a), int(b)) for s, a, b in self.db.execute(
            "SELECT seed, json_extract(cycles, '$.sim') a, json_extract(cycles, '$.rtl') b FROM cases WHERE "
            "campaign = ? AND target = ? AND json_type(cycles, '$.rtl') = 'integer' AND "
            "json_type(cycles, '$.sim') = 'integer' AND seed % ? = 0 ORDER BY seed LIMIT ?",
            (campaign, target, step, limit))]

    def bucket_summaries(self, campaign: int, limit: int) -> list[dict[str, Any]]:
        """The buckets ``campaign`` hit, newest first, at most ``limit``: signature, its cases and first seed
        here, the outcome, reason, target and generator of its first case here, and the bucket's row
        (first_campaign, target, seed, first_seen, reproducer, replay)."""
        rows = self.db.execute(
            # MIN(seed) makes SQLite take the bare columns (outcome, reason) from the bucket's first case
            "SELECT c.bucket, COUNT(*), MIN(c.seed), c.outcome, b.campaign, b.target, b.seed, b.first_seen, "
            "b.reproducer, b.replay, c.reason, c.target, c.generator FROM cases c LEFT JOIN buckets b ON "
            "b.signature = c.bucket WHERE c.campaign = ? AND c.bucket IS NOT NULL GROUP BY c.bucket "
            "ORDER BY b.first_seen DESC, c.bucket LIMIT ?", (campaign, limit)).fetchall()
        keys = ("signature", "cases", "first_seed_here", "outcome", "first_campaign", "target", "seed", "first_seen",
                "reproducer", "replay", "reason", "case_target", "generator")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def rtl_coverage_table(self, campaign: int) -> tuple[list[str], list[list[Any]]] | None:
        """The columns and ``campaign``'s rows of the ``rtl_coverage`` table; None when the database has none."""
        names = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "rtl_coverage" not in names:
            return None
        cols = [r[1] for r in self.db.execute("PRAGMA table_info(rtl_coverage)")]
        where = " WHERE campaign = ?" if "campaign" in cols else ""
        rows = self.db.execute(f"SELECT * FROM rtl_coverage{where}", (campaign,) if where else ()).fetchall()
        return cols, [list(r) for r in rows]
