"""Put every rule instantiation the paper kernels' compiles use into the proof lock.

Each paper kernel (``examples/regression``, the repository's copy of ``shared/corpus/paper``) is compiled for its target with a proof gate that proves
missing instantiations at first use (into the local proof cache, ``ACCV_PROOF_CACHE``); then
:func:`verif.lock.update_lock` writes every instantiation a gate was asked about, with its passing
proof, into ``verif/proofs.lock`` (re-proving the lock's stale entries too). A fresh clone then
compiles any paper kernel without first-use proofs.

    python scripts/lock_paper_kernels.py [--corpus DIR] [--jobs 2] [--kernels a,b,...]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def target_of(kernel: str) -> str:
    return "amx" if kernel.startswith("amx") else "qkv" if kernel.startswith("qkv") else "gemmini"


def asked(path: str) -> tuple[str, list[tuple[str, str, int]], float]:
    """Compile one kernel (proving at first use); the instantiations its gate was asked about."""
    from compilers.compile import compile, rules_for
    from compilers.errors import Unsupported
    from compilers.targets import load_target
    from semantics.hlo_parser import parse_file

    name = Path(path).stem
    acc = load_target(target_of(name))
    gate = rules_for(acc, "prove").gate      # this process's: it compiles this one kernel (main)
    try:
        compile(parse_file(path), acc, proofs="prove")
    except Unsupported as e:
        print(f"{name}: not compiled ({e.reason})", file=sys.stderr)
    return name, gate.asked(), gate.seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(ROOT / "examples" / "regression"))
    ap.add_argument("--kernels", default="", help="comma-separated kernel names (default: every .hlo there)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--bound", type=int, default=3)
    args = ap.parse_args(argv)

    paths = sorted(str(p) for p in Path(args.corpus).glob("*.hlo"))
    if args.kernels:
        keep = set(args.kernels.split(","))
        paths = [p for p in paths if Path(p).stem in keep]
    t0 = time.perf_counter()
    wanted: set[tuple[str, str, int]] = set()
    # one process per kernel: a target's rule instantiations are memoized per process, so a later
    # kernel in the same process would not ask the gate what an earlier one did
    with ProcessPoolExecutor(max_workers=args.jobs, max_tasks_per_child=1) as ex:
        for name, got, secs in ex.map(asked, paths):
            print(f"{name}: {len(got)} rule instantiations asked, {secs:.1f} s proving at first use", flush=True)
            wanted.update(got)

    from rewrite_rules.library import load
    from verif.cache import ProofCache
    from verif.lock import ProofLock, update_lock

    lock = ProofLock()
    up = update_lock(lock, load(), sorted(wanted), bound=args.bound, jobs=args.jobs, cache=ProofCache())
    for d in up.dropped:
        print(f"dropped: {d}")
    print(f"{lock.path}: {up.written} entries ({len(wanted)} instantiations asked by {len(paths)} kernels; "
          f"{len(up.results)} proved or read from the cache, {up.kept} kept) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
