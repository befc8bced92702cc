"""Coverage-guided generator choice: a campaign biases its draw toward what it has not covered yet.

Cases of a target come in batches of :data:`BATCH` (case ``i`` is in batch ``i // BATCH``). In
batch ``b >= 2`` the odd positions keep the target's fixed rotation (fuzz/opsets.py), and the even
ones draw a generator by its **rarity score** over the cases of batches ``< b - 1`` of the same
campaign and target: per case, the sum over the coverage items it hit (instructions, α classes,
operators run on the accelerator; what ran on the host or did not compile counts nothing) of one over the number of cases that hit that item, averaged over the
generator's cases (as AFL favours inputs that reach rare edges). A generator whose cases reach what
few others reach is drawn more; each keeps a floor of a fifth of the mean score, so none starves.

Deterministic: the draw is a function of the campaign's seed, the target, the batch and the rows of
batches ``< b - 1``, and the executors start a case of batch ``b`` only when every case of those
batches has its row (:func:`ready`); with two batches of slack, the workers rarely wait.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .aggregates import Aggregates

__all__ = ["BATCH", "guided_generator", "ready", "scores"]

#: cases per batch and target
BATCH = 10


def ready(i: int, done_below: int) -> bool:
    """Whether case ``i`` may start when the target's cases ``0 .. done_below - 1`` all have rows."""
    b = i // BATCH
    return b < 2 or done_below >= (b - 1) * BATCH


def scores(rows: list[tuple[str, dict]]) -> dict[str, float]:
    """Rarity score per generator over ``rows`` of (generator, coverage) (module doc)."""
    items = [(g, _items(c)) for g, c in rows]
    count = Counter(x for _, its in items for x in its)
    per: dict[str, list[float]] = {}
    for g, its in items:
        per.setdefault(g, []).append(sum(1.0 / count[x] for x in its))
    return {g: float(np.mean(v)) for g, v in per.items()}


def _items(cov: dict) -> set[str]:
    out = {f"i:{k}" for k in (cov.get("instructions") or {})}
    out |= {f"a:{k}" for k in cov.get("alpha_class") or ()}
    out |= {f"o:{k}" for k in ((cov.get("placement") or {}).get("acc_ops") or {})}
    return out


def guided_generator(store: Aggregates, campaign: int, target: str, seed0: int, i: int,
                     generators: tuple[str, ...]) -> str:
    """The generator of case ``i`` (seed ``seed0 + i``) of ``target`` (module doc)."""
    b = i // BATCH
    if b < 2 or i % 2 == 1 or len(set(generators)) < 2:
        return generators[i % len(generators)]
    rows = store.generator_coverage(campaign, target, seed0, seed0 + (b - 1) * BATCH)
    names = list(dict.fromkeys(generators))
    sc = scores(rows)
    mean = float(np.mean(list(sc.values()))) if sc else 1.0
    w = np.array([max(sc.get(g, mean), mean / 5) for g in names], dtype=float)
    rng = np.random.default_rng([seed0, b, i, sum(map(ord, target))])
    return names[int(rng.choice(len(names), p=w / w.sum()))]
