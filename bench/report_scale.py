"""How long `accv report` takes on a large campaign database, and how big its page is.

    python bench/report_scale.py [--config 300000x7 --config 100000x1] [--trials 3]
        [--json bench/results/report_scale.json]

For each ``--config CASESxCAMPAIGNS`` it synthesises a campaign database (the store's own schema,
fuzz/store.py) of CASES cases over CAMPAIGNS nightly campaigns with the distributions a real campaign shows (bench/results/
fuzz_throughput.json: mostly exit 3, a quarter passing, a few percent failures in a few dozen buckets,
log-normal compile times split over M1-M6, sim and RTL cycles), then times the whole `accv report`
command (a fresh process: imports, SQL aggregation, rendering, writing the page and the Markdown
summary) over the newest campaign with the trends of all: cold (no trend cache: every campaign's rows
aggregated) and warm (the finished campaigns' totals read from RUN.sqlite.report-cache.json, as on every
night after the first), as wall and CPU seconds of the command's process (wall time depends on the
machine's load; the JSON records the load average). It also times the page's opening in headless
Chromium (navigation to load event) where Chromium and selenium are installed.
:func:`synthesize` is also what the report's tests build their databases with.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._meta import RESULTS, run_meta  # noqa: E402
from check.verdict import signature  # noqa: E402
from fuzz.store import Store  # noqa: E402

__all__ = ["synthesize", "main"]

TARGETS = {
    "gemmini": {"dtypes": ["s8", "s32", "f32"], "backends": ["sim", "stream", "rtl"],
                "instructions": {"mvin_spad": ["rows", "cols", "stride", "scale"], "mvin_acc": ["rows", "cols", "accumulate"],
                                 "mvout_spad": ["rows", "cols", "stride"], "mvout_acc_raw": ["rows", "cols", "stride"],
                                 "preload": ["rows", "cols"], "compute_preloaded": ["a_rows", "b_cols"],
                                 "config_ex": ["act", "shift"]}},
    "qkv": {"dtypes": ["bf16", "f32"], "backends": ["sim", "rtl"],
            "instructions": {"load_q": ["rows"], "load_kv": ["rows"], "attention": ["seq", "scale"], "store": ["rows"]}},
    "amx": {"dtypes": ["s8", "s32", "bf16", "f32"], "backends": ["sim", "emulated"],
            "instructions": {"tileloadd": ["rows", "colsb"], "tilestored": ["rows", "colsb"], "tdpbssd": ["m", "n", "k"],
                             "tdpbf16ps": ["m", "n", "k"], "vpaddd": ["n"], "vmovdqu8_store": ["n"],
                             "vbroadcastss": ["n"], "vmaxps": ["n"]}},
}
OPS = ["add", "subtract", "multiply", "maximum", "minimum", "negate", "clamp", "dot", "reduce", "broadcast",
       "transpose", "reshape", "slice", "concatenate", "convert", "exponential", "divide", "compare", "select",
       "reverse", "abs", "pad", "iota", "sqrt", "tanh"]
OUTCOMES = [("unsupported", 0.64), ("pass", 0.26), ("degenerate", 0.03), ("gen-error", 0.01), ("mismatch", 0.025),
            ("compile-crash", 0.012), ("backend-crash", 0.006), ("timeout", 0.004), ("crash", 0.003)]
PARTS = {"M1": 0.01, "M2": 0.05, "M3": 0.45, "M4": 0.01, "M5": 0.12, "M6": 0.01, "gen": 0.3}
KERNEL = """HloModule reduced_{n}

ENTRY main {{
  p0 = s8[4,4]{{1,0}} parameter(0)
  p1 = s8[4,4]{{1,0}} parameter(1)
  d = s32[4,4]{{1,0}} dot(p0, p1), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}
  ROOT c = s32[4,4]{{1,0}} clamp(d, d, d)
}}
"""


def _graph(rng: random.Random, i: int) -> str:
    """HLO text of a realistic length (the demo campaign's graphs: 600 characters on average, up to 2,300)."""
    lines = [f"HloModule case_{i}", "", "ENTRY main {"]
    for k in range(max(2, min(40, int(rng.lognormvariate(2.2, 0.5))))):
        lines.append(f"  v{k} = s32[4,14]{{1,0}} {rng.choice(OPS)}(v{max(k - 1, 0)}, v{max(k - 2, 0)})")
    return "\n".join(lines) + "\n}\n"


def _signature(rng: random.Random, target: str, outcome: str, k: int) -> tuple[str, str]:
    b = TARGETS[target]["backends"]
    if outcome == "mismatch":
        be = b[k % len(b)]
        return f"compare.{be}", f"{be} differs on output of {OPS[k % len(OPS)]}"
    if outcome == "backend-crash":
        be = b[-1]
        return f"run.{be}", f"RuntimeError at {be}.py:run"
    if outcome == "compile-crash":
        return "compile", f"{['KeyError', 'AssertionError', 'ValueError'][k % 3]} at phase2.py:schedule_{k}"
    if outcome == "timeout":
        return "timeout", "timeout"
    return "-", "killed by SIGSEGV"


def synthesize(path: str | Path, cases: int = 300_000, campaigns: int = 7, seed: int = 0, minutes: float | None = None,
               repro_dir: str | Path | None = None) -> Path:
    """Write a campaign database of ``cases`` cases over ``campaigns`` finished campaigns at ``path``
    (replaced when present). Each campaign runs ``minutes`` (default: enough for ~90 cases a minute);
    bucket reproducer folders (``kernel.hlo``) go under ``repro_dir`` (default ``path + '.repro'``)."""
    path = Path(path)
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    repro = Path(repro_dir) if repro_dir else Path(str(path) + ".repro")
    rng = random.Random(seed)
    store = Store(path)
    db = store.db
    per = cases // campaigns
    t_start = 1_790_000_000.0
    names, weights = zip(*OUTCOMES, strict=True)
    for c in range(campaigns):
        mins = minutes if minutes is not None else per / 90.0
        started = t_start + c * 86400
        args = {"targets": list(TARGETS), "minutes": round(mins, 1), "seed": c * 100_000, "workers": 2, "night": c}
        cid = int(db.execute("INSERT INTO campaigns (args, seed, started, finished) VALUES (?, ?, ?, ?)",
                             (json.dumps(args, sort_keys=True), c * 100_000, started, started + mins * 60)).lastrowid)
        live = set(range(max(0, c * 3 - 4), c * 3 + 12))      # bucket ids this night can hit: some vanish, some are new
        rows, buckets = [], {}
        n = per if c < campaigns - 1 else cases - per * (campaigns - 1)
        for i in range(n):
            target = list(TARGETS)[i % 3]
            spec = TARGETS[target]
            outcome = rng.choices(names, weights)[0]
            done = started + mins * 60 * (i + rng.random()) / n
            timings: dict[str, float] = {"gen": round(rng.lognormvariate(-4, 1), 6)}
            cov: dict = {}
            cycles: dict = {}
            stage = symptom = reason = bucket = None
            if outcome != "gen-error":
                k = rng.randint(1, 5)
                cov["ops"] = sorted({f"{rng.choice(OPS[:8 + c])}:{rng.choice(spec['dtypes'])}" for _ in range(k)})
                comp = rng.lognormvariate(math.log(0.08 if target != "gemmini" else 0.4), 1.3)
                timings["compile"] = round(comp, 6)
            if outcome in ("pass", "degenerate", "mismatch", "backend-crash"):
                for p, share in PARTS.items():
                    timings[f"compile.{p}"] = round(comp * share * rng.uniform(0.5, 1.5) / 1.15, 6)
                timings["compile.solver"] = round(timings["compile.M5"] * rng.uniform(0.3, 0.9), 6)
                timings["compile.proofs"] = 0.0
                instr = rng.sample(list(spec["instructions"]), rng.randint(1, min(4, len(spec["instructions"]))))
                cov["instructions"] = {x: rng.randint(1, 6) for x in instr}
                cov["alpha"] = sorted({f"{x}.{a}={rng.choice([1, 2, 4, 8, 14, 16, 32, 56, 64])}" for x in instr
                                       for a in spec["instructions"][x]})
                size = rng.lognormvariate(3, 1.2)
                for b in spec["backends"]:
                    timings[f"run.{b}"] = round(rng.lognormvariate(-3 if b != "rtl" else -1, 1), 6)
                    cycles[b] = (int(size * rng.uniform(0.8, 1.6)) + 2 if b == "sim" else
                                 int(size * rng.uniform(5, 12)) + 20 if b == "rtl" else None)
            elif outcome == "unsupported":
                cov["unsupported"] = rng.choice(OPS[:12])
                stage, reason = "compile", f"no rule computes {cov['unsupported']} on {target}"
            if outcome in ("mismatch", "compile-crash", "backend-crash", "timeout", "crash"):
                k = rng.choice(sorted(live))
                stage, symptom = _signature(rng, target, outcome, k)
                reason = (f"input set scaled: {symptom}: first difference at output 0 index (1, {k % 4}): 12 != 13"
                          if outcome == "mismatch" else f"{symptom}: synthetic failure {k}")
                bucket = signature(target, outcome, stage, symptom)
                buckets.setdefault(bucket, (target, c * 100_000 + i, done))
            timings["total"] = round(sum(v for key, v in timings.items() if "." not in key), 6)
            graph = None if outcome == "gen-error" else _graph(rng, i)
            rows.append((cid, target, c * 100_000 + i, ["nnsmith", "gen"][i % 2], graph, outcome, stage, symptom,
                         reason, json.dumps(timings), json.dumps(cycles), rng.random() if outcome == "pass" else 0.0,
                         json.dumps(cov), bucket, done))
        db.execute("BEGIN")
        db.executemany("INSERT INTO cases (campaign, target, seed, generator, graph, outcome, stage, symptom, reason, "
                       "timings, cycles, informative, coverage, bucket, done) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                       rows)
        for sig, (target, s, first) in buckets.items():
            if store.add_bucket(sig, cid, target, s):
                folder = repro / hashlib.sha256(sig.encode()).hexdigest()[:12]
                folder.mkdir(parents=True, exist_ok=True)
                (folder / "kernel.hlo").write_text(KERNEL.format(n=folder.name))
                db.execute("UPDATE buckets SET first_seen = ?, reproducer = ?, replay = ? WHERE signature = ?",
                           (first, str(folder), f"accv fuzz --replay {folder}", sig))
        db.execute("COMMIT")
    store.close()
    return path


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one command in a fresh process."""
    c0 = os.times()
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    c1 = os.times()
    return time.perf_counter() - t0, (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)


def _open_ms(page: Path) -> float | None:
    """Milliseconds from navigation to the load event of ``page`` in headless Chromium (None without it)."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    if not chromium or not driver:
        return None
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(executable_path=driver), options=opts)
    try:
        times = []
        for _ in range(3):
            d.get(page.as_uri())
            times.append(d.execute_script("const t = performance.getEntriesByType('navigation')[0]; "
                                          "return t.loadEventEnd - t.startTime;"))
        return round(statistics.median(times), 1)
    finally:
        d.quit()


def _config(text: str) -> tuple[int, int]:
    cases, _, camps = text.partition("x")
    return int(cases), int(camps or 1)


def measure(cases: int, campaigns: int, trials: int, env: dict[str, str]) -> dict:
    """Synthesise one database and time `accv report` on it, cold and warm (module docstring)."""
    tmp = Path(tempfile.mkdtemp(prefix="report_scale-"))
    try:
        db = tmp / "run.sqlite"
        t0 = time.perf_counter()
        synthesize(db, cases, campaigns)
        synth_s = time.perf_counter() - t0
        page = tmp / "report.html"
        cmd = [sys.executable, "-m", "accv", "report", str(db), "-o", str(page), "--md", str(tmp / "s.md")]
        cache = Path(str(db) + ".report-cache.json")
        runs: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
        for _ in range(trials):
            cache.unlink(missing_ok=True)
            runs["cold"].append(_run(cmd, env))       # every campaign aggregated; writes the cache
            runs["warm"].append(_run(cmd, env))       # the finished campaigns' totals from the cache
        per_night = cases // campaigns
        return {"cases": cases, "campaigns": campaigns, "newest_cases": cases - per_night * (campaigns - 1),
                "db_mib": round(db.stat().st_size / 2**20, 1), "synth_s": round(synth_s, 1),
                **{f"{k}_{m}_s": round(statistics.median(r[i] for r in v), 2) for k, v in runs.items()
                   for i, m in enumerate(("wall", "cpu"))},
                "html_kib": round(page.stat().st_size / 1024, 1), "md_kib": round((tmp / "s.md").stat().st_size / 1024, 1),
                "open_ms": _open_ms(page)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", action="append", type=_config, metavar="CASESxCAMPAIGNS",
                    help="a database to synthesise (repeatable; default 300000x7 and 100000x1)")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--json", type=Path, default=RESULTS / "report_scale.json")
    args = ap.parse_args(argv)
    configs = args.config or [(300_000, 7), (100_000, 1)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    rows = [measure(c, k, args.trials, env) for c, k in configs]
    startup = [_run([sys.executable, "-c", "import accv.cli, reports.html, reports.markdown, reports.query"], env)
               for _ in range(args.trials)]
    res = {"command": "python bench/report_scale.py " + " ".join(f"--config {c}x{k}" for c, k in configs)
                      + f" --trials {args.trials}",
           **run_meta(), "load_avg": round(os.getloadavg()[0], 1),
           "startup_cpu_s": round(statistics.median(c for _, c in startup), 2), "configs": rows}
    print(f"{'cases':>8} {'campaigns':>9} {'newest':>7} {'DB MiB':>7} {'cold wall s':>11} {'cold CPU s':>10} "
          f"{'warm wall s':>11} {'warm CPU s':>10} {'HTML KiB':>9} {'opens (ms)':>10}")
    for r in rows:
        print(f"{r['cases']:>8} {r['campaigns']:>9} {r['newest_cases']:>7} {r['db_mib']:>7} {r['cold_wall_s']:>11} "
              f"{r['cold_cpu_s']:>10} {r['warm_wall_s']:>11} {r['warm_cpu_s']:>10} {r['html_kib']:>9} "
              f"{r['open_ms'] if r['open_ms'] is not None else '-':>10}")
    print(f"(the interpreter and imports alone: {res['startup_cpu_s']} s CPU; load average {res['load_avg']})")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(res, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
