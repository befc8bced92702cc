"""The figures in docs/, rendered from the benchmarks' JSON under ``bench/results/``.

A table in a Markdown file sits between two markers::

    <!-- table:compile_time_paper -->
    ... (generated: do not edit) ...
    <!-- /table -->

and its text is exactly what the renderer of that name (:data:`TABLES`) makes of the JSON it reads.
``tests/test_docs_figures.py`` fails when a table differs from its rendering, so a figure in the docs
is the figure of the committed JSON. After a benchmark run, regenerate the tables:

    python bench/compile_time.py --set paper --trials 3   # writes bench/results/compile_time_paper.json
    python bench/docs_tables.py --write                   # updates every marked table in docs/ and README.md
    python bench/docs_tables.py                           # checks only; exit 1 naming the stale tables

Times depend on the machine and its load (each table says which machine, date and commit measured
it); instruction counts, outcomes and bytes are deterministic.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
DOCS = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

__all__ = ["TABLES", "DocsTableError", "render", "sync_file", "stale_tables", "main"]

_OPEN = re.compile(r"<!-- table:([a-z0-9_]+) -->")
_CLOSE = "<!-- /table -->"


class DocsTableError(Exception):
    """A marker without its end, an unknown table name, or a missing results file (one line)."""


def _load(name: str) -> dict:
    path = RESULTS / name
    if not path.exists():
        raise DocsTableError(f"{path.relative_to(ROOT)} is missing: run the benchmark that writes it")
    return json.loads(path.read_text())


def _ms(x: float) -> str:
    return f"{x:.1f}"


def _provenance(d: dict) -> str:
    return (f"Measured by `{d['command']}` on {d['machine']}, {d['date']}, at commit {d['commit']}.")


def _calibration(d: dict) -> str:
    c = d["calibration_ms"]
    r = d.get("calibration_rounds_ms") or []
    between = (f", {min(r):.1f}-{max(r):.1f} ms between rounds" if r else "")
    return (f"Machine speed during the run (a fixed Python workload, best of 5; lower is faster): "
            f"{c[0]:.1f} ms before{between}, {c[-1]:.1f} ms after.")


_MODULES = ("M1", "M2", "M3", "M4", "M5", "solver", "M6")


def _compile_table(recs: list[dict]) -> list[str]:
    lines = ["| kernel | target | instructions | checked | final best ms | final mean ms | compile best ms "
             "| compile mean ms | first ms | M1 | M2 | M3 | M4 | M5 | of which CP-SAT | M6 |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in recs:
        if r["outcome"] != "compiled":
            lines.append(f"| {r['kernel']} | {r['target']} | exit 3 | - | - | - | - | - | - |"
                         + " - |" * len(_MODULES))
            continue
        m = r["modules_ms"]
        chk = "yes" if r.get("checked") else ("**no**" if "checked" in r else "-")
        lines.append(f"| {r['kernel']} | {r['target']} | {r['instructions']} | {chk} | {_ms(r['final_best_ms'])} "
                     f"| {_ms(r['final_mean_ms'])} | {_ms(r['total_ms'])} | {_ms(r['mean_ms'])} | {_ms(r['first_ms'])} | "
                     + " | ".join(_ms(m[k]) for k in _MODULES) + " |")
    return lines


def _stat(recs: list[dict], key: str) -> str:
    xs = [r[key] for r in recs]
    top = max(recs, key=lambda r: r[key])
    return (f"median {_ms(statistics.median(xs))}, mean {_ms(statistics.mean(xs))}, "
            f"max {_ms(top[key])} ms ({top['kernel']})")


def compile_time_paper() -> str:
    """The paper kernels: instructions, check, time to the selected program, whole compile, M1-M6."""
    d = _load("compile_time_paper.json")
    recs = d["kernels"]
    ok = [r for r in recs if r["outcome"] == "compiled"]
    checked = sum(1 for r in ok if r.get("checked"))
    n = d["trials"]
    out = _compile_table(recs)
    out += ["", f"{len(ok)} of {len(recs)} compile, {checked} check bit-exact on the simulator. "
            f"Time to the selected program (final.time), mean of trials 2-{n}: {_stat(ok, 'final_mean_ms')}; "
            f"best of {n}: {_stat(ok, 'final_best_ms')}. Whole compile, mean of trials 2-{n}: "
            f"{_stat(ok, 'mean_ms')}.",
            "", _provenance(d) + " " + _calibration(d)]
    return "\n".join(out)


def compile_time_vnni() -> str:
    """K1 and K2 with B in VNNI layout."""
    d = _load("compile_time_vnni.json")
    out = _compile_table(d["kernels"]) + ["", _provenance(d) + " " + _calibration(d)]
    return "\n".join(out)


def compile_time_stress() -> str:
    """The 391-node QKV stress kernel."""
    d = _load("compile_time_stress.json")
    out = _compile_table(d["kernels"]) + ["", _provenance(d) + " " + _calibration(d)]
    return "\n".join(out)


def fuzz_outcome() -> str:
    """The act-gemmini-fuzz corpus: which kernels compile, the exit-3 reasons with their kernels."""
    d = _load("compile_time_fuzz.json")
    recs = d["kernels"]
    ok = [r for r in recs if r["outcome"] == "compiled"]
    no = [r for r in recs if r["outcome"] != "compiled"]
    out = ["| outcome | kernels | which |", "|---|---:|---|"]
    out.append(f"| compiled and checked | {sum(1 for r in ok if r.get('checked'))} | "
               + ", ".join(f"{r['kernel']} ({r['instructions']} instructions)" for r in ok if r.get("checked")) + " |")
    bad = [r for r in ok if not r.get("checked")]
    if bad:
        out.append(f"| compiled, **check failed** | {len(bad)} | " + ", ".join(r["kernel"] for r in bad) + " |")
    reasons: dict[tuple[str, str], list[str]] = {}
    for r in no:
        label = "exit 3" if r["outcome"] == "unsupported" else "**compiler error**"
        reasons.setdefault((label, r.get("reason", r["outcome"])), []).append(r["kernel"])
    for (label, why), ks in sorted(reasons.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        out.append(f"| {label}: `{why}` | {len(ks)} | {', '.join(k.removeprefix('fuzz_') for k in ks)} |")
    secs = [r["seconds"] for r in no if "seconds" in r]
    if secs:
        out += ["", f"Time to the exit-3 answer (one compile each in one process, first-use pattern "
                f"generation and proofs included): median {statistics.median(secs):.2f} s, max {max(secs):.2f} s."]
    out += ["", _provenance(d) + " " + _calibration(d)]
    return "\n".join(out)


def _seed_span(keys: list[str]) -> str:
    xs = sorted(int(k) for k in keys)
    return f"{xs[0]}-{xs[-1]}" if xs == list(range(xs[0], xs[-1] + 1)) else ", ".join(map(str, xs))


def _reason_label(key: str) -> str:
    """The operator an exit-3 reason names, or a short name for a reason that names none (the
    campaign keeps such a reason's first 60 characters as its key)."""
    if " " not in key:
        return key
    if key.startswith("no program found"):
        return "search bounds"
    return f"other (`{key}...`)"


def random_campaigns() -> str:
    """Every ``bench/results/random_*.json``: outcome counts, slowest answer, exit-3 reasons."""
    files = sorted(RESULTS.glob("random_*.json"))
    if not files:
        raise DocsTableError("no bench/results/random_*.json: run bench/random_campaign.py")
    out = ["| target | seeds | operator list | max operators | compiled and checked | exit 3 | crashed | wrong "
           "| slowest answer | exit-3 reasons by operator |",
           "|---|---|---|---:|---:|---:|---:|---:|---|---|"]
    prov = []
    for f in files:
        d = json.loads(f.read_text())
        res = d["results"]
        c = d["counts"]
        seed, slow = max(res.items(), key=lambda kv: kv[1]["seconds"])
        reasons = ", ".join(f"{_reason_label(op)} {n}" for op, n in d["exit3_by_operator"].items())
        out.append(f"| {d['target']} | {_seed_span(list(res))} | {d['ops_list']} | {d['max_ops']} | {c['ok']} "
                   f"| {c['exit3']} | {c['crash']} | {c['mismatch']} | {slow['seconds']:.1f} s (seed {seed}) "
                   f"| {reasons} |")
        prov.append(f"- {d['target']}: `{d['command']}` on {d['machine']}, {d['date']}, at commit {d['commit']}.")
    return "\n".join(out + [""] + prov)


def composite_movement() -> str:
    """Composite kernels against the Gemmini library-call sequence: instructions, bytes, cycles."""
    d = _load("composite_movement.json")
    rows = d["composites"]
    out = ["| kernel | calls | library instr | Act instr | library bytes | Act bytes | saved | library cycles "
           "| Act cycles | checked |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lib, act = r["library"], r["act"]
        out.append(f"| {r['kernel']} | {'+'.join(r['calls'])} | {lib['instructions']} | {act['instructions']} "
                   f"| {lib['bytes']} | {act['bytes']} | {r['bytes_saved']:.1%} | {lib['cycles']:g} "
                   f"| {act['cycles']:g} | {'yes' if r['checked'] else '**no**'} |")
    saved = [r["bytes_saved"] for r in rows]
    out += ["", f"Data movement saved: mean {statistics.mean(saved):.1%}, max {max(saved):.1%} over "
            f"{len(rows)} composites.", "", _provenance(d)]
    return "\n".join(out)


def amx_emulated() -> str:
    """The AMX emulated backend's speed and its agreement with the simulator (bench/amx_emulated.py)."""
    d = _load("amx_emulated.json")
    out = [f"`python bench/amx_emulated.py`, {d['date']}, {d['cpu']}, {d['gcc']}, the {d['programs']} programs "
           f"({d['distinct_units']} distinct units, {d['instructions']} instructions); "
           f"{d['agree_with_simulator']} of {d['programs']} agree with the simulator:", "",
           "| measure | value |", "|---|---|",
           f"| build, cold (gcc): mean / median / total | {d['build_cold_s_mean']:.2f} s / "
           f"{d['build_cold_s_median']:.2f} s / {d['build_cold_s_total']:.0f} s |",
           f"| build, cached (hash + lookup): mean | {d['build_cached_ms_mean']:.2f} ms |",
           f"| run from a cached build (emit the C, look it up, run, read the image back) | "
           f"{d['run_programs_per_s_end_to_end']:.0f} programs/s |",
           f"| the process alone | {d['run_programs_per_s_process']:.0f} programs/s |",
           f"| the functional simulator on the same programs and images | {d['simulator_programs_per_s']:.0f} programs/s |"]
    return "\n".join(out)


def fuzz_throughput() -> str:
    """An `accv fuzz` campaign's throughput per target, stage breakdown, outcomes and coverage
    (bench/fuzz_throughput.py)."""
    d = _load("fuzz_throughput.json")
    out = [_provenance(d) + f" {d['workers']} workers, {d['wall_seconds']:.0f} s: "
           f"{d['cases']} cases, {d['cases_per_min']} cases/min in all.", "",
           "| target | cases/min | outcomes | seconds per stage (sum over cases) | RTL share | operators seen | "
           "instructions used | alpha values | exit 3 by operator |", "|---|---|---|---|---|---|---|---|---|"]
    for t, r in d["targets"].items():
        st = ", ".join(f"{k} {v:g}" for k, v in r["stage_seconds"].items() if not k.startswith("compile."))
        m = ", ".join(f"{k[8:]} {v:g}" for k, v in r["stage_seconds"].items()
                      if k.startswith("compile.") and v >= 0.01)
        out.append(f"| {t} | {r['cases_per_min']} | " + ", ".join(f"{n} {o}" for o, n in sorted(r["outcomes"].items()))
                   + f" | {st} (compile: {m or '-'}) | {r['rtl_share']:.0%} | {len(r['operators'])} | "
                   f"{len(r['instructions'])} | {len(r['alpha_values'])} | "
                   + (", ".join(f"{k} {v}" for k, v in list(r["unsupported_by_operator"].items())[:5]) or "-") + " |")
    cov = d.get("rtl_coverage") or {}
    if cov:
        out += ["", "| design | line points covered | toggle points covered |", "|---|---|---|"]
        for design, kinds in cov.items():
            out.append(f"| {design} | " + " | ".join(
                f"{kinds[k]['covered']} / {kinds[k]['total']} ({kinds[k]['covered'] / max(kinds[k]['total'], 1):.1%})"
                for k in ("line", "toggle")) + " |")
    return "\n".join(out)


def report_scale() -> str:
    """`accv report` on large synthesised campaign databases, cold and with the trend cache
    (bench/report_scale.py)."""
    d = _load("report_scale.json")
    out = [_provenance(d) + f" Load average {d['load_avg']} while it ran (the machine is shared), so wall "
           f"seconds exceed CPU seconds; the interpreter and imports alone take {d['startup_cpu_s']} s CPU.", "",
           "| cases | campaigns | newest campaign | DB MiB | cold: wall s / CPU s | warm: wall s / CPU s | HTML KiB | "
           "opens in Chromium |", "|---:|---:|---:|---:|---|---|---:|---:|"]
    for r in d["configs"]:
        opens = f"{r['open_ms']:.0f} ms" if r["open_ms"] is not None else "-"
        out.append(f"| {r['cases']:,} | {r['campaigns']} | {r['newest_cases']:,} | {r['db_mib']:.0f} | "
                   f"{r['cold_wall_s']:.2f} / {r['cold_cpu_s']:.2f} | {r['warm_wall_s']:.2f} / {r['warm_cpu_s']:.2f} | "
                   f"{r['html_kib']:.0f} | {opens} |")
    return "\n".join(out)


def prove_library() -> str:
    """Proof time of a library sample before and after the prover's speed-ups, and of the whole
    library cold now (bench/prove_library.py)."""
    rows = [("sample, before", _load("prove_library_before.json")), ("sample, now", _load("prove_library.json")),
            ("whole library, now", _load("prove_library_full.json"))]
    out = ["| run | rules | proofs | wall s | CPU s | per-rule CPU median / max | per-rule wall median / max "
           "| proved | bounded | unknown | refuted |",
           "|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|"]
    for label, d in rows:
        s = d["summary"]
        cpu, wall, v = s["per_rule_cpu_s"], s["per_rule_wall_s"], s["verdicts"]
        out.append(f"| {label} | {s['rules']} | {s['instantiations']} | {s['elapsed_wall_s']:.0f} | {cpu['total']:.1f} "
                   f"| {cpu['median']:.2f} / {cpu['max']:.1f} s | {wall['median']:.2f} / {wall['max']:.1f} s "
                   f"| {v['proved']} | {v['bounded']} | {v['unknown']} | {v['refuted'] + v['error']} |")
    out.append("")
    out += [f"- {label}: `{d['summary']['command']}`" for label, d in rows]
    return "\n".join(out)


def xla_simplifier() -> str:
    """The XLA algebraic-simplifier rewrites proved over machine types (bench/xla_simplifier.py)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from xla_simplifier import table

    return table(_load("xla_simplifier.json"))


def tiling_random() -> str:
    """Random GEMM layer shapes through the middle end, checked on the Gemmini and AMX simulators."""
    d = _load("tiling_gemm.json")
    rows = d["random"]
    out = ["| M x K x N | bias | tail | Gemmini instructions | micro-kernels | compile ms | checked "
           "| AMX instructions | micro-kernels | compile ms | checked |",
           "|---|---|---|---:|---:|---:|---|---:|---:|---:|---|"]
    for r in rows:
        cells = []
        for t in ("gemmini", "amx"):
            x = r[t]
            cells.append(f"{x['instructions']} | {x['micro_kernels']} | {_ms(x['compile_ms'])} "
                         f"| {'yes' if x['checked'] else '**no**'}")
        out.append(f"| {r['m']}x{r['k']}x{r['n']} | {'yes' if r['bias'] else 'no'} | {r['tail']} | "
                   + " | ".join(cells) + " |")
    summary = []
    for t, title in (("gemmini", "Gemmini"), ("amx", "AMX")):
        ok = sum(r[t]["checked"] for r in rows)
        ms = [r[t]["compile_ms"] for r in rows]
        summary.append(f"{title}: {ok} of {len(rows)} check bit for bit on the simulator, compile median "
                       f"{_ms(statistics.median(ms))} ms, max {_ms(max(ms))} ms")
    out += ["", "; ".join(summary) + " (one input set each, edge values on every other).", "", _provenance(d)]
    return "\n".join(out)


def tiling_layers() -> str:
    """The quantized linear layer through the middle end: the store path and the check."""
    d = _load("tiling_gemm.json")
    out = ["| M x K x N | instructions | micro-kernels | compile ms | store path | estimated cycles | checked |",
           "|---|---:|---:|---:|---|---:|---|"]
    for r in d["layers"]:
        out.append(f"| {r['m']}x{r['k']}x{r['n']} | {r['instructions']} | {r['micro_kernels']} | {_ms(r['compile_ms'])} "
                   f"| {', '.join('`' + x + '`' for x in r['store_path'])} | {r['estimate']} "
                   f"| {'yes' if r['checked'] else '**no**'} |")
    out += ["", _provenance(d)]
    return "\n".join(out)


def tiling_rtl() -> str:
    """Tiled GEMMs on the Gemmini RTL: measured cycles and the array's utilization."""
    d = _load("tiling_gemm.json")
    dim = d["dim"]
    out = ["| M x K x N | instructions | RoCC commands | compile ms | RTL cycles | utilization | Autocomp "
           "| estimated cycles | estimated utilization | checked |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in d["rtl"]:
        macs = r["m"] * r["k"] * r["n"]
        out.append(f"| {r['m']}x{r['k']}x{r['n']} | {r['instructions']} | {r['commands']} | {_ms(r['compile_ms'])} "
                   f"| {r['rtl_cycles']} | {r['utilization']:.1%} | {d['autocomp']:.0%} | {r['estimate']:.0f} "
                   f"| {macs / (r['estimate'] * dim * dim):.1%} | {'yes' if r['checked'] else '**no**'} |")
    out += ["", f"Utilization = MACs / (cycles x {dim}^2); estimated: the description's cost model.", "",
            _provenance(d)]
    return "\n".join(out)


def tiling_conv() -> str:
    """Convolution layers through the middle end on Gemmini: the simulator check and RTL cycles."""
    d = _load("tiling_conv.json")
    out = ["| layer (N x H x W x C_in * K x K x C_in x C_out, stride, pad) | bias | tail | output | instructions "
           "| micro-kernels | compile ms | estimated cycles | checked |", "|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in d["layers"]:
        out.append(f"| {r['layer']} | {'yes' if r['bias'] else 'no'} | {r['tail']} | {'x'.join(map(str, r['out']))} "
                   f"| {r['instructions']} | {r['micro_kernels']} | {_ms(r['compile_ms'])} | {r['estimate']:.0f} "
                   f"| {'yes' if r['checked'] else '**no**'} |")
    ok = sum(r["checked"] for r in d["layers"])
    out += ["", f"{ok} of {len(d['layers'])} check bit for bit on the simulator (one input set each, edge values on "
            "every other)."]
    for r in d["rtl"]:
        out += ["", f"RTL: {r['layer']} ({r['tail']}, bias): {r['cycles']} "
                f"cycles measured, utilization {r['utilization']:.1%} (MACs / (cycles x {d['dim']}^2)), "
                f"{r['instructions']} instructions, estimated {r['estimate']:.0f} cycles, "
                f"{'checked' if r['checked'] else '**wrong**'}."]
    out += ["", _provenance(d)]
    return "\n".join(out)


def real_layers() -> str:
    """Users' layers as jax writes them (bench/real_layers.py): per (layer, form, target) pair,
    compiled or exit 3's reason, the checks and the Gemmini RTL utilization."""
    d = _load("real_layers.json")
    what = {x["name"]: x["what"] for x in d["layers"]}
    out = ["| layer | form | target | result | compile s | checks | RTL utilization | reason |",
           "|---|---|---|---|---:|---|---:|---|"]
    for r in d["rows"]:
        checks = ", ".join(f"{b} {c['outcome']}" for b, c in r.get("checks", {}).items())
        util = f"{r['utilization']:.1%}" if r.get("utilization") else ""
        cs = f"{r['compile_s']:.2f}" if "compile_s" in r else ""
        reason = (r.get("reason") or "").replace("|", "\\|")
        out.append(f"| {r['layer']} ({what.get(r['layer'], '')}) | {r['form']} | {r['target']} | {r['status']} "
                   f"| {cs} | {checks} | {util} | {reason} |")
    out += ["", f"{d['passed']} of {d['pairs']} (layer, form, target) pairs compile and check bit for bit.", "",
            _provenance(d)]
    return "\n".join(out)


def tiling_bf16() -> str:
    """f32 GEMM layers of bf16 operands on AMX: the model bit for bit, the reference within the bound
    (bench/tiling_gemm_bf16.py)."""
    d = _load("tiling_gemm_bf16.json")
    out = ["| M x K x N | input set | instructions | micro-kernels | compile ms | backend | = blocked sum "
           "| reference | max ulp | share of the bound |", "|---|---|---:|---:|---:|---|---|---|---:|---:|"]
    rows = [(r, b) for r in d["random"] + d["layers"] for b in ("sim", "emulated") if b in r]
    for r, b in rows:
        x = r[b]
        ref = "bit for bit" if x["reference_identical"] else "within bound" if x["within_bound"] else "**outside**"
        out.append(f"| {r['m']}x{r['k']}x{r['n']} | {'edges' if r['edge_values'] else 'random'} | {r['instructions']} "
                   f"| {r['micro_kernels']} | {_ms(r['compile_ms'])} | {b} | {'yes' if x['model_bit_exact'] else '**no**'} "
                   f"| {ref} | {x['max_ulp']:g} | {x['bound_share']:.1%} |")
    exact = sum(r[b]["model_bit_exact"] for r, b in rows)
    inside = sum(r[b]["within_bound"] for r, b in rows)
    out += ["", f"{exact} of {len(rows)} runs equal the blocked-sum model bit for bit (a NaN matches any NaN), "
            f"{inside} of {len(rows)} are within the declared bound of the reference; share of the bound: the "
            "largest |program - reference| / bound over the finite outputs.", "", _provenance(d)]
    return "\n".join(out)


def amx_native() -> str:
    """AMX programs on an AMX host (bench/amx_native.py's bundle, run there, judged here;
    bench/results/amx_native.json when a native run has been recorded). A file of the bundle's
    earlier format (layers only, compared on the host) is rendered as it was recorded."""
    path = RESULTS / "amx_native.json"
    if not path.exists():
        return ("No native run recorded yet (bench/results/amx_native.json is written by `python bench/amx_native.py "
                "--judge OUT` from an AMX host's run: the commands above).")
    d = json.loads(path.read_text())
    head = (f"{d['date']}, {d['cpu']}, {d['gcc']}, " + ("native and emulated builds" if d["native"] else
            f"emulated builds only ({d['why_not_native']})") + f"; bundle of commit {d['bundle_commit']}")
    if d["runs"] and "native_eq_emulation" in d["runs"][0]["sets"][0]:
        return _amx_native_recorded(d, head)
    import importlib.util

    spec = importlib.util.spec_from_file_location("amx_native", ROOT / "bench" / "amx_native.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    out = [head + ":", "", "| program | kind | M x K x N | instructions | native = emulation | native | emulated |",
           "|---|---|---|---:|---|---|---|"]
    for r in d["runs"]:
        eq = ("-" if not d["native"] else "yes" if all(s.get("native_eq_emulated") for s in r["sets"]) else "**no**")
        shape = "x".join(map(str, r["shape"])) if r.get("shape") else "-"
        out.append(f"| {r['name']} | {r['kind']} | {shape} | {r['instructions']} | {eq} | {mod.verdict(r, 'native')} "
                   f"| {mod.verdict(r, 'emulated')} |")
    good = sum(r["ok"] for r in d["runs"])
    out += ["", f"{good} of {len(d['runs'])} programs as expected (each run held to its program's contract by "
            "check.policy, the whole final image to the simulator's)."]
    return "\n".join(out)


def _amx_native_recorded(d: dict, head: str) -> str:
    """A results file of the bundle's earlier format (tiled layers, judged on the host)."""
    out = [head + " (the bundle's earlier format: tiled layers, outputs compared on the host):", "",
           "| layer | M x K x N | tail | instructions | native = emulation | native vs reference | emulated vs reference "
           "| native s (per set) |", "|---|---|---|---:|---|---|---|---:|"]
    for r in d["runs"]:
        sets = r["sets"]

        def verdict(mode: str) -> str:
            if any(f"{mode}_error" in s for s in sets):
                return "**error**"
            if not any(f"{mode}_s" in s for s in sets):
                return "-"
            if r["kind"] == "int8":
                return "bit for bit" if all(s.get(f"{mode}_eq_reference") for s in sets) else "**differs**"
            model = all(s.get(f"{mode}_eq_model") for s in sets)
            bound = all(s.get(f"{mode}_within_bound") for s in sets)
            ulp = max(s.get(f"{mode}_max_ulp", 0) for s in sets)
            return (("model bit for bit" if model else "**model differs**") + ", "
                    + (f"within bound ({ulp} ulp)" if bound else "**outside the bound**"))

        eq = ("-" if not d["native"] else "yes" if all(s.get("native_eq_emulation") and s.get("native_eq_host_emulation")
                                                       for s in sets) else "**no**")
        secs = max((s.get("native_s", 0.0) for s in sets), default=0.0)
        out.append(f"| {r['name']} | {'x'.join(map(str, r['shape']))} | {r['tail']} | {r['instructions']} | {eq} "
                   f"| {verdict('native')} | {verdict('emulated')} | {secs:.3f} |")
    good = sum(r["ok"] for r in d["runs"])
    out += ["", f"{good} of {len(d['runs'])} layers as expected (a NaN matches any NaN in f32 outputs; native s: the "
            "process, including reading and writing the program's HBM image)."]
    return "\n".join(out)


def act_corpus_host() -> str:
    """Act's Gemmini fuzz corpus with host partitioning (bench/act_corpus_host.py): how the kernels
    compiled, the checks per backend, the MACs on the array."""
    d = _load("act_corpus_host.json")
    rows = d["rows"]
    out = ["| kernels | compile | whole | partitioned | " + " | ".join(f"agree on {b}" for b in d["checked"])
           + " | MACs on the array | kernels with a dot, all its MACs there | operators on the array |",
           "|---:|---:|---:|---:|" + "---:|" * len(d["checked"]) + "---:|---:|---:|"]
    agree = " | ".join(f"{d['checked'][b]} ({d['passed'][b]} pass)" for b in d["checked"])
    out.append(f"| {d['kernels']} | {d['compiled']} | {sum(r['status'] == 'whole' for r in rows)} | "
               f"{sum(r['status'] == 'partitioned' for r in rows)} | {agree} | "
               f"{d['macs_acc']:,} of {d['macs_total']:,} ({100 * d['macs_acc'] / max(d['macs_total'], 1):.1f}%) | "
               f"{d['all_macs_on_array']} of {d['kernels_with_dots']} | "
               f"{d['ops_acc']:,} of {d['ops_total']:,} ({100 * d['ops_acc'] / max(d['ops_total'], 1):.1f}%) |")
    bad = [r for r in rows if r["status"] == "unsupported" or any(
        str(r.get(b, "")) not in ("pass", "degenerate") for b in d["checked"])]
    for r in bad:
        out.append(f"\n{r['kernel']}: " + (r.get("reason") or "; ".join(f"{b} {r.get(b)}" for b in d["checked"])))
    out += ["", _provenance(d)]
    return "\n".join(out)


#: table name -> renderer (the name is what a ``<!-- table:NAME -->`` marker holds)
TABLES: dict[str, Callable[[], str]] = {f.__name__: f for f in (
    compile_time_paper, compile_time_vnni, compile_time_stress, fuzz_outcome, random_campaigns,
    composite_movement, amx_emulated, fuzz_throughput, prove_library, xla_simplifier, report_scale, tiling_random,
    tiling_layers, tiling_rtl, tiling_conv, tiling_bf16, amx_native, real_layers, act_corpus_host)}


def render(name: str) -> str:
    """The text of table ``name``, from its JSON."""
    fn = TABLES.get(name)
    if fn is None:
        raise DocsTableError(f"unknown table '{name}' (known: {', '.join(TABLES)})")
    return fn()


def _synced(text: str, where: str) -> tuple[str, list[str]]:
    """``text`` with every marked table rendered, and the names of the tables that differed."""
    out, pos, stale = [], 0, []
    for m in _OPEN.finditer(text):
        if m.start() < pos:
            raise DocsTableError(f"{where}: table '{m.group(1)}' starts inside another table")
        end = text.find(_CLOSE, m.end())
        if end < 0:
            raise DocsTableError(f"{where}: table '{m.group(1)}' has no {_CLOSE}")
        body = "\n\n" + render(m.group(1)).rstrip("\n") + "\n\n"
        if text[m.end():end] != body:
            stale.append(m.group(1))
        out += [text[pos:m.end()], body]
        pos = end
    out.append(text[pos:])
    return "".join(out), stale


def sync_file(path: Path, write: bool = False) -> list[str]:
    """The names of the tables in ``path`` that differ from their rendering; with ``write``,
    rewrite them in place."""
    text = path.read_text()
    new, stale = _synced(text, str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path))
    if write and new != text:
        path.write_text(new)
    return stale


def stale_tables(paths: list[Path] | None = None) -> dict[str, list[str]]:
    """Per file (relative to the repository), its stale tables; empty when every table is current."""
    found = {}
    for p in paths or DOCS:
        s = sync_file(p)
        if s:
            found[str(p.relative_to(ROOT))] = s
    return found


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    write = "--write" in args
    try:
        bad = {}
        for p in DOCS:
            s = sync_file(p, write=write)
            if s:
                bad[str(p.relative_to(ROOT))] = s
    except DocsTableError as e:
        print(f"docs_tables: {e}", file=sys.stderr)
        return 2
    for f, names in bad.items():
        print(f"{f}: {'updated' if write else 'stale'}: {', '.join(names)}")
    if not bad:
        print("every docs table matches bench/results")
    return 1 if bad and not write else 0


if __name__ == "__main__":
    raise SystemExit(main())
