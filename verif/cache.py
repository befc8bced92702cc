"""The proof cache: results keyed by a rule's content hash (its name, claims and source text), the
dtype, the rank and the prover version, stored as JSON lines under ``build/proofs/``.

What a rule instantiation needs from it to be used is :class:`verif.gate.ProofGate`'s to say.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rewrite_rules.dsl import Rule

from .prover import PROVER_VERSION, ProofResult

__all__ = ["ProofCache", "default_cache_dir"]


def default_cache_dir() -> Path:
    return Path(os.environ.get("ACCV_PROOF_CACHE", Path.cwd() / "build" / "proofs"))


class ProofCache:
    def __init__(self, directory: Path | None = None) -> None:
        self.dir = directory or default_cache_dir()
        self.path = self.dir / f"proofs-v{PROVER_VERSION}.jsonl"
        self._data: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                    self._data[rec["key"]] = rec
                except (json.JSONDecodeError, KeyError):
                    continue  # a torn line from an interrupted run: ignore it

    @staticmethod
    def key(rule: Rule, dtype: str, rank: int, bound: int) -> str:
        return f"{rule.content_hash()}:{dtype}:r{rank}:n{bound}"

    def get(self, rule: Rule, dtype: str, rank: int, bound: int) -> dict[str, Any] | None:
        return self._data.get(self.key(rule, dtype, rank, bound))

    def put(self, rule: Rule, res: ProofResult, bound: int) -> None:
        if res.status not in ("proved", "refuted"):
            return  # unknowns are retried next time
        rec = res.to_json() | {"key": self.key(rule, res.dtype, res.rank, bound)}
        self._data[rec["key"]] = rec
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(rec) + "\n")
