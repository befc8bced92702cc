"""The emulated AMX backend (compilers/targets/amx): the emitted C of every program of the AMX program
set (tests/compilers/data/amx_programs: amx_k1..k5, K1 / K2 with VNNI B, the random AMX graphs of
seeds 120-159 and 1200-1319 that compile) built against the emulation header and run on three
input sets (random, edge values, raw random bytes), the final HBM image equal to the functional
simulator's under the one comparison rule (check.policy.compare_images: the emulated backend does
not observe NaN bits as the reference models them, so a NaN output matches any NaN). A wrong emitter (a stride, a tile shape) is caught here and not by
the simulator, which never reads the C; the faults the hardware raises are raised.

The native backend runs the same programs on the host's AMX unit (marked ``native_amx``; skipped
with the reason where the host has no AMX)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import compilers.targets.amx.emit_c as amx_emit
from check.policy import Policy, compare_images, judge
from compilers.backend import BackendUnavailable
from compilers.program import Program, hbm_image, parse_asm
from compilers.simulator import SimError, simulate_image
from compilers.targets import load_target
from compilers.targets.amx.backends import EmulatedBackend, NativeBackend, native_available
from compilers.targets.amx.cbuild import RunFailure, build, run_image
from fuzz.amx_programs import graph, load_set
from semantics.compare import compare
from semantics.inputs import random_inputs
from semantics.interp import evaluate
from semantics.layout import byte_size

DATA = Path(__file__).resolve().parent / "data" / "amx_programs"
SET = load_set(DATA)
KERNELS = [n for n in SET if n.startswith("amx_k")]
RANDOM = [n for n in SET if n.startswith("rand")]
#: the random programs of the default run: every 8th (the rest run with --runslow)
SAMPLE = RANDOM[::8]

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.fixture(scope="module")
def acc():
    return load_target("amx")


def images(name: str, prog: Program, size: int) -> list[np.ndarray]:
    """Three HBM images: random inputs, edge-value inputs, and every input byte random."""
    g = graph(name)
    out = [hbm_image(prog, random_inputs(g, s, edges=bool(s % 2)), size) for s in (0, 1, 2)]
    rng = np.random.default_rng(len(name))
    for pl in prog.inputs:
        n = byte_size(pl.type)
        out[2][pl.addr:pl.addr + n] = rng.integers(0, 256, n, dtype=np.uint8)
    return out


def agree(acc, backend, name: str) -> None:  # noqa: ANN001
    prog = SET[name]
    for k, img in enumerate(images(name, prog, acc.hbm_size)):
        got = backend.run_image(prog, img)
        bad = compare_images(prog, got, simulate_image(acc, prog, img), Policy.of(prog, backend))
        assert bad is None, f"{name} input set {k}: {bad}"


def test_the_set_holds_the_kernels_and_over_100_random_programs() -> None:
    assert KERNELS == ["amx_k1", "amx_k2", "amx_k3", "amx_k4", "amx_k5", "amx_k1_vnni", "amx_k2_vnni"]
    assert len(SET["amx_k1_vnni"]) == 16 and len(SET["amx_k2_vnni"]) == 9
    assert len(RANDOM) >= 100


@pytest.mark.parametrize("name", KERNELS)
def test_kernels_agree_with_the_simulator(acc, name: str) -> None:
    agree(acc, EmulatedBackend(acc), name)


@pytest.mark.parametrize("name", SAMPLE)
def test_random_programs_agree_with_the_simulator(acc, name: str) -> None:
    agree(acc, EmulatedBackend(acc), name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in RANDOM if n not in SAMPLE])
def test_all_random_programs_agree_with_the_simulator(acc, name: str) -> None:
    agree(acc, EmulatedBackend(acc), name)


@pytest.mark.parametrize("name", ["amx_k3", "amx_k5", "amx_k2_vnni"])
def test_run_gives_the_reference_outputs(acc, name: str) -> None:
    g = graph(name)
    for seed in (0, 1):
        xs = random_inputs(g, seed, edges=bool(seed))
        r = EmulatedBackend.for_target(acc).run(SET[name], xs)
        assert r.cycles is None and any("emulated build" in line for line in r.log)
        j = judge(evaluate(g, xs), r.outputs, xs, Policy.of(SET[name], EmulatedBackend))
        assert j.ok, f"{name} seed {seed}: {j.why}"


def test_the_k1_program_of_fig43_is_wrong_on_row_major_bytes(acc) -> None:
    """Fig. 43's 16 instructions (K1 with B in VNNI layout) fed the corpus kernel's row-major B:
    the emulated C agrees with the simulator, and both differ from the reference."""
    from dataclasses import replace

    corpus, prog = graph("amx_k1"), SET["amx_k1_vnni"]
    as_corpus = replace(prog, inputs=tuple(replace(x, type=t) for x, t in
                                           zip(prog.inputs, corpus.param_types, strict=True)))
    xs = random_inputs(corpus, 0)
    r = EmulatedBackend(acc).run(as_corpus, xs)
    assert not compare(evaluate(corpus, xs), r.outputs).ok
    img = hbm_image(as_corpus, xs, acc.hbm_size)
    assert compare_images(as_corpus, EmulatedBackend(acc).run_image(as_corpus, img),
                          simulate_image(acc, as_corpus, img), Policy.of(as_corpus, EmulatedBackend)) is None


# -------------------------------------------------------------------------------------------------
# a wrong emitter is caught by the emulated backend, not by the simulator
# -------------------------------------------------------------------------------------------------

def caught(acc, name: str) -> tuple[bool, bool]:  # noqa: ANN001
    """(the simulator equals the reference, the emulated C equals the simulator) on input set 0."""
    g, prog = graph(name), SET[name]
    xs = random_inputs(g, 0)
    img = hbm_image(prog, xs, acc.hbm_size)
    sim = simulate_image(acc, prog, img)
    from compilers.program import read_outputs

    sim_ok = compare(evaluate(g, xs), read_outputs(prog, sim)).ok
    try:
        emu_ok = compare_images(prog, EmulatedBackend(acc).run_image(prog, img), sim,
                                Policy.of(prog, EmulatedBackend)) is None
    except RunFailure:
        emu_ok = False
    return sim_ok, emu_ok


def test_a_wrong_stride_is_caught(acc, monkeypatch: pytest.MonkeyPatch) -> None:
    assert caught(acc, "amx_k1") == (True, True)
    wrong = amx_emit.TEMPLATES["tileloadd"].replace("${stride})", "${stride} + 4)")
    assert wrong != amx_emit.TEMPLATES["tileloadd"]
    monkeypatch.setitem(amx_emit.TEMPLATES, "tileloadd", wrong)
    assert caught(acc, "amx_k1") == (True, False)


def test_a_wrong_tile_shape_is_caught(acc, monkeypatch: pytest.MonkeyPatch) -> None:
    assert caught(acc, "amx_k5") == (True, True)
    right = amx_emit.tile_config

    def one_row_short(program: Program) -> list[tuple[int, int]]:
        cfg = right(program)
        t = next(i for i, (r, _) in enumerate(cfg) if r > 1)
        cfg[t] = (cfg[t][0] - 1, cfg[t][1])
        return cfg

    monkeypatch.setattr(amx_emit, "tile_config", one_row_short)
    assert caught(acc, "amx_k5") == (True, False)


# -------------------------------------------------------------------------------------------------
# faults, crashes, hangs, the cache, availability
# -------------------------------------------------------------------------------------------------

def test_a_tile_row_width_the_hardware_rejects_is_sigill(acc) -> None:
    """TILELOADD with colsb 6 (not a multiple of 4): SIGILL on a Sapphire Rapids host, SIGILL
    here; the simulator rejects the program (colsb is outside the description's domain)."""
    prog = parse_asm(".target amx\ntileloadd(rows=2, colsb=6, stride=8, t=0, addr=0)\n"
                     "tilestored(rows=2, colsb=6, stride=8, t=0, addr=64)\n")
    img = np.zeros(acc.hbm_size, np.uint8)
    with pytest.raises(RunFailure, match="SIGILL") as e:
        EmulatedBackend(acc).run_image(prog, img)
    assert e.value.signal_name == "SIGILL" and "colsb 6 is not a multiple of 4" in e.value.stderr
    with pytest.raises(SimError, match="colsb=6"):
        simulate_image(acc, prog, img)
    ok = parse_asm(".target amx\ntileloadd(rows=2, colsb=8, stride=8, t=0, addr=0)\n"
                   "tilestored(rows=2, colsb=8, stride=8, t=0, addr=64)\n")
    img[:16] = np.arange(1, 17)
    assert EmulatedBackend(acc).run_image(ok, img)[64:80].tolist() == list(range(1, 17))


def test_an_invalid_tile_configuration_is_sigsegv(acc, monkeypatch: pytest.MonkeyPatch) -> None:
    """LDTILECFG of 17 rows: #GP, which Linux delivers as SIGSEGV."""
    monkeypatch.setattr(amx_emit, "tile_config", lambda p: [(17, 64)] + [(0, 0)] * 7)
    prog = parse_asm(".target amx\ntilezero(t=0)\n")
    with pytest.raises(RunFailure, match="SIGSEGV"):
        EmulatedBackend(acc).run_image(prog, np.zeros(acc.hbm_size, np.uint8))


def test_mismatched_tmul_shapes_are_sigill(acc, monkeypatch: pytest.MonkeyPatch) -> None:
    """TDPBUSD whose A has more columns than B has rows: #UD."""
    monkeypatch.setattr(amx_emit, "tile_config", lambda p: [(4, 16), (4, 16), (3, 16)] + [(0, 0)] * 5)
    prog = parse_asm(".target amx\ntdpbusd(m=4, k=4, n=4, c=0, a=1, b=2)\n")
    with pytest.raises(RunFailure, match="SIGILL") as e:
        EmulatedBackend(acc).run_image(prog, np.zeros(acc.hbm_size, np.uint8))
    assert "colsb of tmm1 (16) / 4 != rows of tmm2 (3)" in e.value.stderr


UNIT = "#include <immintrin.h>\n#include <stdint.h>\n#include <signal.h>\nint main(void) { BODY; return 0; }\n"


def test_a_crash_or_a_hang_is_a_failure_not_a_hang(tmp_path: Path) -> None:
    crash = build(UNIT.replace("BODY", "raise(SIGSEGV)"), cache=tmp_path)
    with pytest.raises(RunFailure, match="SIGSEGV"):
        run_image(crash.exe, np.zeros(16, np.uint8))
    hang = build(UNIT.replace("BODY", "for (;;) {}"), cache=tmp_path)
    with pytest.raises(RunFailure, match="no answer within 0.5 s"):
        run_image(hang.exe, np.zeros(16, np.uint8), timeout=0.5)
    short = build(UNIT.replace("BODY", "(void)0"), cache=tmp_path)
    with pytest.raises(RunFailure, match="wrote 0 bytes"):
        run_image(short.exe, np.zeros(16, np.uint8))


def test_builds_are_cached_by_content(tmp_path: Path) -> None:
    a = build(UNIT.replace("BODY", "(void)1"), cache=tmp_path)
    assert not a.cached and a.seconds > 0
    b = build(UNIT.replace("BODY", "(void)1"), cache=tmp_path)
    assert b.cached and b.exe == a.exe
    c = build(UNIT.replace("BODY", "(void)2"), cache=tmp_path)
    assert not c.cached and c.key != a.key
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([a.exe.name, c.exe.name])


def test_every_intrinsic_the_emitter_uses_is_emulated() -> None:
    header = (Path(amx_emit.__file__).parent / "emulation.h").read_text()
    used = set(re.findall(r"\b(_(?:mm512|mm|tile)_\w+)\(", "\n".join(amx_emit.TEMPLATES.values())))
    assert len(used) > 30
    for name in used:
        assert re.search(rf"\b{name}\b", header), f"{name} is not emulated"


def test_availability_is_stated(acc, tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="target amx only"):
        EmulatedBackend.for_target(load_target("gemmini"))
    assert EmulatedBackend.available() == (True, "")
    fake = tmp_path / "cpuinfo"
    fake.write_text("processor : 0\nflags : fpu sse2 avx2\n")
    ok, why = native_available(str(fake))
    assert not ok and "amx_tile" in why
    if not native_available()[0]:
        with pytest.raises(BackendUnavailable, match="no native AMX"):
            NativeBackend.for_target(acc)


# -------------------------------------------------------------------------------------------------
# native (where the host has AMX)
# -------------------------------------------------------------------------------------------------

@pytest.mark.native_amx
@pytest.mark.skipif(not native_available()[0], reason=native_available()[1] or "native AMX available")
@pytest.mark.parametrize("name", KERNELS + SAMPLE)
def test_native_agrees_with_the_simulator(acc, name: str) -> None:
    agree(acc, NativeBackend.for_target(acc), name)


@pytest.mark.parametrize("name", ["vpaddsb", "vpmaxsb", "vpmovdb"])
def test_the_middle_ends_lane_instructions_agree_with_numpy(acc, name: str) -> None:
    """The tile-only lane instructions (no random program draws them): simulator and emulated C
    against numpy on every pair of extreme bytes and random ones (saturation at both ends)."""
    from compilers.program import Concrete, Placement
    from semantics.dtypes import DTYPES
    from semantics.types import TensorType

    ends = np.array([-128, -127, -1, 0, 1, 126, 127], dtype=np.int8)
    rng = np.random.default_rng(7)
    a = np.concatenate([np.repeat(ends, 7), rng.integers(-128, 128, 15)]).astype(np.int8)
    b = np.concatenate([np.tile(ends, 7), rng.integers(-128, 128, 15)]).astype(np.int8)
    ins = [Concrete("vmovdqu8_load", (("n", 64), ("dst", 1), ("addr", 64))),
           Concrete("vmovdqu8_load", (("n", 64), ("dst", 2), ("addr", 128)))]
    ins.append(Concrete(name, (("dst", 3), ("src", 2))) if name == "vpmovdb" else
               Concrete(name, (("dst", 3), ("a", 1), ("b", 2))))
    ins.append(Concrete("vmovdqu8_store", (("n", 64), ("src", 3), ("addr", 192))))
    s8 = DTYPES["s8"]
    prog = Program("amx", tuple(ins), (Placement(0, 64, TensorType(s8, (64,))), Placement(1, 128, TensorType(s8, (64,)))),
                   (Placement(0, 192, TensorType(s8, (64,))),), ())
    wide_a, wide_b = a.astype(np.int32), b.astype(np.int32)
    want = {"vpaddsb": np.clip(wide_a + wide_b, -128, 127), "vpmaxsb": np.maximum(wide_a, wide_b),
            "vpmovdb": np.concatenate([b.view(np.uint32).astype(np.uint8).view(np.int8), np.zeros(48, np.int8)])}[name]
    img = np.zeros(acc.hbm_size, np.uint8)
    img[64:128], img[128:192] = a.view(np.uint8), b.view(np.uint8)
    sim = simulate_image(acc, prog, img)
    assert np.array_equal(sim[192:256].view(np.int8), want.astype(np.int8))
    try:
        got = EmulatedBackend(acc).run_image(prog, img)
    except BackendUnavailable as e:
        pytest.skip(str(e))
    assert np.array_equal(got[192:256], sim[192:256])
