"""The Gemmini-ISA RTL agrees with StreamMachine: random valid commands of every kind at DIM 4 and
the description's DIM (whole DRAM / scratchpad / accumulator / PE state compared), random multi-command programs
(hypothesis), the cocotb testbench on a sample, the paper programs against StreamMachine and the
reference interpreter, the fp32 scale lane against numpy, and (slow) other DIMs and mutants of the
RTL that these checks must kill."""

from __future__ import annotations

import json
import shutil
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from check.backends import get_backend
from compilers.program import read_asm
from compilers.targets import load_target
from compilers.targets.gemmini import stream as gs
from compilers.targets.gemmini.description import ACC_ROWS, DIM, HBM_SIZE, SPAD_ROWS
from rtl_harness.gemmini import driver as g
from rtl_harness import verilate
from rtl_harness.gemmini import cases as gc
from tests.paths import PAPER

pytestmark = [pytest.mark.rtl,
              pytest.mark.skipif(verilate.available() is not None, reason=f"RTL toolchain: {verilate.available()}")]

ROOT = Path(__file__).resolve().parents[2]
# (SP_ROWS, ACC_ROWS, DRAM bytes) of the random cases; the description's DIM runs the default-size design
SIZES = {4: (256, 64, 4096), DIM: (SPAD_ROWS, ACC_ROWS, 8192)}
PER_KIND = 200


@cache
def rtl(dim: int) -> g.GemminiRtl:
    sp, ac, dram = SIZES[dim]
    return g.GemminiRtl(dim, sp, ac, dram)


def _cases(m: g.GemminiRtl, cases: list[gc.Case]) -> list[str]:
    fails = []
    for case in cases:
        _, diff, cycles = gc.run_case(m, case)
        assert cycles > 0
        if diff is not None:
            fails.append(f"{diff}\n{case.describe()}")
    return fails


@pytest.mark.parametrize("kind", gc.KINDS)
@pytest.mark.parametrize("dim", (4, DIM))
def test_random_cases(dim: int, kind: str) -> None:
    """PER_KIND random cases of one command kind, each from its own random starting state."""
    sp, ac, dram = SIZES[dim]
    cases = [gc.make_case(kind, dim, s, sp, ac, dram) for s in range(PER_KIND)]
    fails = _cases(rtl(dim), cases)
    assert not fails, f"{len(fails)}/{PER_KIND} {kind} cases differ at DIM {dim}; first: {fails[0]}"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kinds=st.lists(st.sampled_from(gc.KINDS), min_size=1, max_size=14), seed=st.integers(0, 2**32 - 1),
       dim=st.sampled_from([4, DIM]))
def test_random_programs(kinds: list[str], seed: int, dim: int) -> None:
    """Random multi-command programs (several kinds in one stream, reconfigurations in between)."""
    sp, ac, dram = SIZES[dim]
    case = gc.random_program(seed, dim, kinds, sp, ac, dram)
    fails = _cases(rtl(dim), [case])
    assert not fails, fails[0]


def test_generator_covers_the_edges() -> None:
    """The random cases reach what they claim to: both dataflows, transposes, GARBAGE operands,
    accumulate and raw bits (C_stride 0 accumulating included), zero-address loads, block strides
    that overlap,
    special scales (NaN, inf, subnormal), OS shifts above 20 and DRAM latencies from 1."""
    seen: set[str] = set()
    for kind in gc.KINDS:
        for s in range(PER_KIND):
            c = gc.make_case(kind, 4, s, *SIZES[4])
            seen.add(f"latency{c.latency}")
            ex = ld = None
            for cmd in c.commands:
                d = gs.decode(cmd)
                op = d["op"]
                if op == "CONFIG_EX":
                    ex = d
                    seen.add(f"df{d['dataflow']}-at{d['a_transpose']}-bt{d['b_transpose']}")
                    if d["dataflow"] == gs.OS and int(d["sys_shift"]) > 20:
                        seen.add("os-shift>20")
                elif op == "CONFIG_LD":
                    ld = d
                    scale = int(d["scale"])
                    if (scale >> 23) & 0xFF == 0xFF:
                        seen.add("nan" if scale & 0x7FFFFF else "inf")
                    elif (scale >> 23) & 0xFF == 0 and scale & 0x7FFFFF:
                        seen.add("subnormal")
                elif op in ("MVIN", "MVIN2", "MVIN3"):
                    if d["dram"] == 0:
                        seen.add("zero-load")
                    if int(d["cols"]) > 4 and ld is not None and int(ld["block_stride"]) < int(d["rows"]):
                        seen.add("overlapping-blocks")
                    if int(d["addr"]) & gs.ACC_BIT and int(d["addr"]) & gs.ACCUMULATE_BIT:
                        seen.add("mvin-accumulate")
                elif op == "MVOUT" and int(d["addr"]) & gs.ACC_BIT:
                    seen.add("mvout-raw" if int(d["addr"]) & gs.RAW_BIT else "mvout-scaled")
                elif op == "PRELOAD":
                    if d["bd_addr"] == gs.GARBAGE_ADDR:
                        seen.add("bd-garbage")
                    if d["c_addr"] == gs.GARBAGE_ADDR:
                        seen.add("c-garbage")
                    elif int(d["c_addr"]) & gs.ACC_BIT and int(d["c_addr"]) & gs.ACCUMULATE_BIT:
                        seen.add("c-accumulate")
                        if ex is not None and ex["c_stride"] == 0 and int(d["c_rows"]) > 1:
                            seen.add("c-stride0-accumulate")
                elif op in ("COMPUTE_PRELOADED", "COMPUTE_ACCUMULATED") and ex is not None:
                    if d["a_addr"] == gs.GARBAGE_ADDR:
                        seen.add("a-garbage")
                    if d["bd_addr"] == gs.GARBAGE_ADDR:
                        seen.add("rs2-garbage")
    want = {"df0-at0-bt0", "df0-at1-bt0", "df0-at1-bt1", "df1-at0-bt0", "df1-at1-bt0", "df1-at0-bt1",
            "os-shift>20", "nan", "inf", "subnormal", "zero-load", "overlapping-blocks", "mvin-accumulate",
            "mvout-raw", "mvout-scaled", "bd-garbage", "c-garbage", "c-accumulate", "c-stride0-accumulate",
            "a-garbage", "rs2-garbage",
            "latency1", "latency13"}
    assert want <= seen, f"never generated: {sorted(want - seen)}"


def test_scale_lane_matches_numpy() -> None:
    """The fp32 lane (int32 -> fp32 RNE -> * scale RNE -> rint -> saturate int8) on ~600k vectors:
    special scales (zeros, inf, NaNs, subnormals, extremes), random bit patterns and values,
    int32 values that round when converted to fp32, and the rounding edges of
    gemmini_cases.scale_edge_vectors (fp32-multiply ties and int32 -> fp32 ties next to k + 0.5),
    against StreamMachine's numpy _scale_to_int8."""
    rng = np.random.default_rng(0)
    scales = np.array([gc.random_scale(rng) for _ in range(1000)] + list(gc.SCALE_SPECIAL)
                      + [int(v) for v in rng.integers(0, 2**32, 200)], np.uint64)
    xs = np.concatenate([rng.integers(-2**31, 2**31, 400), rng.integers(-300, 301, 100),
                         [0, 1, -1, 127, -128, 2**31 - 1, -2**31, 2**24 + 1, 2**24 + 3, -(2**24 + 1), 2**25 + 2,
                          2**25 + 6, 255, 256, -255, -256]]).astype(np.int32)
    x = np.tile(xs, len(scales))
    s = np.repeat(scales, len(xs))
    ex, es = gc.scale_edge_vectors(rng)
    x, s = np.concatenate([x, ex]), np.concatenate([s, es])
    got = g.scale_lane(x, s)
    with np.errstate(invalid="ignore"):
        want = np.concatenate([gs._scale_to_int8(xs, int(v)) for v in scales]
                              + [gs._scale_to_int8(ex[i:i + 1], int(es[i])) for i in range(ex.size)])
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (f"{bad.size} of {x.size} differ; first: x={x[bad[0]]} scale={int(s[bad[0]]):#010x} "
                           f"rtl {got[bad[0]]} numpy {want[bad[0]]}")


@pytest.mark.parametrize("name", ("gemmini_gemm", "gemmini_add", "gemmini_mac"))
def test_paper_programs(name: str) -> None:
    """The assembled paper programs: RTL outputs == StreamMachine's == the reference interpreter's."""
    from semantics.hlo_parser import parse_file
    from semantics.inputs import random_inputs
    from semantics.interp import evaluate

    program = read_asm(ROOT / "compilers" / "programs" / f"{name}.asm")
    graph = parse_file(PAPER / f"{name}.hlo")
    for seed in range(3):
        x = random_inputs(graph, seed, edges=seed == 1)
        ref = evaluate(graph, x)
        stream = get_backend(load_target("gemmini"), "stream").run(program, x).outputs
        res = get_backend(load_target("gemmini"), "rtl").run(program, x)
        outs, cycles = res.outputs, res.cycles
        assert cycles is not None and cycles > 0
        for r, s_, o in zip(ref, stream, outs, strict=True):
            assert np.array_equal(s_, r) and np.array_equal(o, r), f"{name} seed {seed}"


def test_default_sizes() -> None:
    """The default design (the description's DIM, scratchpad and accumulator rows, DRAM bytes): the
    1,000-instruction benchmark GEMM, then commands at the top rows and the DRAM's last bytes."""
    from compilers.targets.gemmini import bench_program

    p = bench_program()
    rng = np.random.default_rng(3)
    x = [rng.integers(-128, 128, pl.type.shape).astype(np.int8) for pl in p.inputs]
    gem = load_target("gemmini")
    ref = get_backend(gem, "stream").run(p, x).outputs
    res = get_backend(gem, "rtl").run(p, x)
    assert np.array_equal(res.outputs[0], ref[0]) and res.cycles is not None and res.cycles > 0

    D = DIM
    row = 4 * D     # DRAM row stride: one 4-block int8 mvin row (Gemmini's MAX_BYTES at DIM 16)
    top_sp, top_acc, end = SPAD_ROWS - D, ACC_ROWS - D, HBM_SIZE
    one = 0x3F800000
    cmds = [gs.config_ld(0, row, one, block_stride=4), gs.config_ld(1, row, one), gs.config_st(row, 1, 0x3E000000),
            gs.config_ex(gs.OS, sys_shift=2),
            gs.Command(gs.MVIN, end - D * row, gs.operand(D, row, top_sp - 12)),     # 4 blocks, block stride 4
            gs.Command(gs.MVIN2, end - D * row, gs.operand(D, D, gs.ACC_BIT | gs.ACCUMULATE_BIT | top_acc)),
            gs.Command(gs.PRELOAD, gs.operand(D, D, top_sp), gs.operand(D, D, gs.ACC_BIT | gs.ACCUMULATE_BIT | top_acc)),
            gs.Command(gs.COMPUTE_PRELOADED, gs.operand(D, D, top_sp), gs.operand(D, D, top_sp - 12)),
            gs.Command(gs.MVOUT, end - D * row, gs.operand(D, D, gs.ACC_BIT | top_acc)),
            gs.Command(gs.MVOUT, end - (D - 1) * row - row, gs.operand(D - 1, D, gs.ACC_BIT | gs.RAW_BIT | (top_acc + 1)))]
    dram = rng.integers(0, 256, end, dtype=np.uint8)
    spad = rng.integers(-128, 128, (SPAD_ROWS, D)).astype(np.int8)
    acc = rng.integers(-2**31, 2**31, (ACC_ROWS, D)).astype(np.int32)
    s = gs.StreamMachine(D)
    s.dram[:], s.spad[:], s.acc[:] = dram, spad, acc
    s.run(cmds)
    state, _ = g.run_commands(cmds, dram, spad=spad, acc=acc)
    assert gc.first_difference(s, state.dram, state.spad, state.acc, state.pe) is None


def _c_stride0_case() -> tuple[list[gs.Command], np.ndarray, np.ndarray]:
    """WS compute of 4 rows into one accumulator row (C_stride 0, accumulate)."""
    sp, ac, _ = SIZES[4]
    spad = (np.arange(sp * 4).reshape(sp, 4) % 7 - 3).astype(np.int8)
    acc = np.full((ac, 4), 1000, np.int32)
    cmds = [gs.config_ex(gs.WS, c_stride=0),
            gs.Command(gs.PRELOAD, gs.operand(4, 4, 8), gs.operand(4, 4, gs.ACC_BIT | gs.ACCUMULATE_BIT | 5)),
            gs.Command(gs.COMPUTE_PRELOADED, gs.operand(4, 4, 0), gs.operand(4, 4, 16))]
    return cmds, spad, acc.astype(np.int32)


def test_c_stride0_accumulate_adds_every_row() -> None:
    """gemmini.md: each row i of C is added to row C_addr + C_stride*i in turn, so with stride 0
    the accumulator row gains the sum of all rows (the RTL's write-back forwards the previous
    row's write into the next read)."""
    cmds, spad, acc = _c_stride0_case()
    state, _ = g.run_commands(cmds, np.zeros(64, np.uint8), dim=4, sp_rows=SIZES[4][0], acc_rows=SIZES[4][1],
                              spad=spad, acc=acc)
    a, w, d = (spad[r:r + 4].astype(np.int64) for r in (0, 8, 16))
    res = d + a @ w
    want = acc.copy()
    want[5] = acc[5] + res.sum(axis=0)
    assert np.array_equal(state.acc, want)


def test_c_stride0_accumulate_agrees_with_streammachine() -> None:
    """StreamMachine writes C row by row too (it used to scatter with numpy, which kept only the
    last row's sum; found by this test)."""
    cmds, spad, acc = _c_stride0_case()
    s = gs.StreamMachine(4, 64, *SIZES[4][:2])
    s.spad[:], s.acc[:] = spad, acc
    s.run(cmds)
    state, _ = g.run_commands(cmds, np.zeros(64, np.uint8), dim=4, sp_rows=SIZES[4][0], acc_rows=SIZES[4][1],
                              spad=spad, acc=acc)
    assert np.array_equal(state.acc, s.acc)


def test_driver_errors() -> None:
    m = rtl(4)
    m.reset()
    cmds = [gs.config_ld(0, 4, 0x3F800000, block_stride=4), gs.Command(gs.MVIN, 64, gs.operand(4, 4, 0))]
    with pytest.raises(g.RtlTimeout, match="within 3 cycles"):
        m.run(cmds, max_cycles=3)
    with pytest.raises(g.GemminiRtlError, match="scratchpad image"):
        m.set_spad(np.zeros((3, 4), np.int8))
    with pytest.raises(g.GemminiRtlError, match="outside"):
        m.read_dram(0, m.dram_size + 1)


def test_cocotb_sample(tmp_path: Path) -> None:
    """The cocotb testbench (DRAM served from Python coroutines) on 20 cases per kind at DIM 4:
    every case equals StreamMachine, and every case takes the same cycles as under the C++ shim."""
    out = tmp_path / "cocotb.json"
    sp, ac, dram = SIZES[4]
    g.cocotb_run({"DIM": 4, "SP_ROWS": sp, "ACC_ROWS": ac},
                 {"GEMMINI_TB_DIM": "4", "GEMMINI_TB_SP_ROWS": str(sp), "GEMMINI_TB_ACC_ROWS": str(ac),
                  "GEMMINI_TB_DRAM": str(dram), "GEMMINI_TB_PER_KIND": "20", "GEMMINI_TB_OUT": str(out)},
                 testcase="random_cases")
    res = json.loads(out.read_text())
    assert res["failures"] == 0 and res["per_kind"] == 20
    m = rtl(4)
    for kind in gc.KINDS:
        mine = [gc.run_case(m, gc.make_case(kind, 4, s, sp, ac, dram))[2] for s in range(20)]
        assert res["cycles"][kind] == mine, kind


@pytest.mark.slow
@pytest.mark.parametrize("dim", (2, 8))
def test_other_dims(dim: int) -> None:
    """DIM is a parameter: 100 random cases per kind at DIM 2 and DIM 8 (128 / 32 rows)."""
    m = g.GemminiRtl(dim, 128, 32, 4096)
    fails = _cases(m, [gc.make_case(kind, dim, s, 128, 32, 4096) for kind in gc.KINDS for s in range(100)])
    assert not fails, f"{len(fails)} cases differ at DIM {dim}; first: {fails[0]}"


# --------------------------------------------------------------------------------------------
# mutants: each is one plausible RTL bug; the random cases must notice every one
# --------------------------------------------------------------------------------------------

MUTANTS = {
    "f2i8 rounds ties up": ("gemmini_fp.sv", "r  = ip + {8'd0, g & (st | ip[0])};", "r  = ip + {8'd0, g};"),
    "fmul rounds ties down": ("gemmini_fp.sv", "inc = g & (st | den[24]);", "inc = g & st;"),
    "i2f truncates": ("gemmini_fp.sv", "inc  = norm[23] & ((|norm[22:16]) | norm[24]);", "inc  = 1'b0;"),
    "fmul overflow to NaN": ("gemmini_fp.sv", "else if (be >= 12'sd255)", "else if (be >= 12'sd256)"),
    "NaN saturates": ("gemmini_fp.sv", "if (e == 8'hFF && f[22:0] != 23'd0) q = 8'd0;",
                      "if (e == 8'hFF && f[22:0] != 23'd0) q = 8'h7F;"),
    "shift rounds ties up": ("gemmini_ex.sv", "y      = q + {31'd0, half & (sticky | q[0])};",
                             "y      = q + {31'd0, half};"),
    "A transpose inverted": ("gemmini_ex.sv", "r_colw[0] <= cfg_ws ? !cfg_at : cfg_at;",
                             "r_colw[0] <= cfg_ws ? cfg_at : !cfg_at;"),
    "C stride ignored": ("gemmini_ex.sv", "ins_ptr + 29'(d_cstride[in_set])", "ins_ptr + 29'(1)"),
    "shift not clamped": ("gemmini_ex.sv", "((cfg_sys_shift > 32'd24) ? 6'd24 : 6'(cfg_sys_shift))",
                          "6'(cfg_sys_shift)"),
    "mvout ReLU missing": ("gemmini_store.sv", "bytes[l*8 +: 8] = (relu && scl_q[l*8 + 7]) ? 8'd0 : scl_q[l*8 +: 8];",
                           "bytes[l*8 +: 8] = scl_q[l*8 +: 8];"),
    "write-back no forwarding": ("gemmini_ex.sv", "old_row[l*32 +: 32] = (fwd_v && fwd_addr",
                                 "old_row[l*32 +: 32] = (1'b0 && fwd_addr"),
    "mvin no forwarding": ("gemmini_load.sv", "old_row[l*32 +: 32] = (fwd_v && fwd_addr",
                           "old_row[l*32 +: 32] = (1'b0 && fwd_addr"),
    "block stride off by one": ("gemmini_load.sv", "prow  <= pblk + bstride;", "prow  <= pblk + bstride + RW'(1);"),
    "zero loads hang": ("gemmini_load.sv", "zero_mode <= rs1 == 64'd0;", "zero_mode <= 1'b0;"),
    "PE keeps 21 bits": ("gemmini_pe.sv", "c_q <= c_q + prod;", "c_q <= c_q + prod + {19'd0, c_q[19] & prod[19]};"),
    # the decoupled execution: each dependency rule, the stream spacing, the weight double buffer
    "queue misses read after write": ("gemmini_queue.sv", "hz = raw_sp || ovsp(", "hz = ovsp("),
    "queue misses write after read": ("gemmini_queue.sv",
                                      "for (int p = 0; p < 3; p++) hz = hz | ovsp(spr_lo[o][p]",
                                      "for (int p = 0; p < 0; p++) hz = hz | ovsp(spr_lo[o][p]"),
    "queue misses accumulator writes": ("gemmini_queue.sv",
                                        "|| ovac(acw_lo[o], acw_hi[o], c_acr_lo[u], c_acr_hi[u])", ""),
    "computes ignore scratchpad RAW": ("gemmini_queue.sv", "hz = (2'(u) == U_EX) && raw_sp;", "hz = 1'b0;"),
    "streams too close": ("gemmini_ex.sv", "sl_t[sl_last] >= TW'(DIM - 1)", "sl_t[sl_last] >= TW'(DIM - 2)"),
    "shadow reloaded early": ("gemmini_ex.sv", "flip_age >= TW'(2 * DIM - 2)", "flip_age >= TW'(DIM - 1)"),
    "flip not kept": ("gemmini_pe.sv", "else if (ws && f_in)    c_q <= s_q;", ""),
    "zero load beside another": ("gemmini_load.sv", "assign ready = !issuing && !(active && (zero_mode || n_v));",
                                 "assign ready = !issuing && !(active && n_v);"),
    "next load's rows lost": ("gemmini_load.sv", "prow <= n_row0;  pblk <= n_row0;", "prow <= '0;  pblk <= '0;"),
    "deskew off by one": ("gemmini_ex.sv", "w1_row[j*20 +: 20] = dsk[j][DIM - 2 - j];",
                          "w1_row[j*20 +: 20] = dsk[j][DIM - 1 - j];"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutants_are_killed(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fname, old, new = MUTANTS[name]
    src = tmp_path / "rtl"
    src.mkdir()
    for p in g.SOURCES:
        shutil.copy(p, src / p.name)
    text = (src / fname).read_text()
    assert text.count(old) == 1, f"mutation site not found once in {fname}: {old}"
    (src / fname).write_text(text.replace(old, new))
    monkeypatch.setenv("ACCV_RTL_BUILD", str(tmp_path / "build"))
    if fname == "gemmini_fp.sv":   # the scale lane's own vectors first (test_scale_lane_matches_numpy's)
        lane = verilate.build_model("gemmini_scale_lane", [src / fname], {}, g.LANE_SHIM)
        x, sb = gc.scale_edge_vectors(np.random.default_rng(0))
        with np.errstate(invalid="ignore"):
            want = np.concatenate([gs._scale_to_int8(x[i:i + 1], int(sb[i])) for i in range(x.size)])
        if not np.array_equal(g.scale_lane(x, sb, lib=lane), want):
            return
    lib = verilate.build_model(g.TOP, [src / p.name for p in g.SOURCES],
                               {"DIM": 4, "SP_ROWS": SIZES[4][0], "ACC_ROWS": SIZES[4][1]}, g.SHIM)
    m = g.GemminiRtl(4, SIZES[4][0], SIZES[4][1], SIZES[4][2], lib=lib)
    for s in range(60):
        for kind in gc.KINDS:
            case = gc.make_case(kind, 4, s, *SIZES[4])
            try:
                _, diff, _ = gc.run_case(m, case)
            except g.GemminiRtlError:
                return   # a hang counts as noticed
            if diff is not None:
                return
    for s in range(60):
        try:
            _, diff, _ = gc.run_case(m, gc.concurrent_program(s, 4, *SIZES[4]))
        except g.GemminiRtlError:
            return
        if diff is not None:
            return
    pytest.fail(f"mutant '{name}' survived {60 * len(gc.KINDS)} random cases and 60 concurrent programs")
