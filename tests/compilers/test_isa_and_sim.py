"""The ISA description API (load-time validation), the assembly format and the functional simulator,
on the QKV target and on small hand-made descriptions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from accv.cli import main
from compilers.isa import Accelerator, IsaError
from compilers.program import AsmError, parse_asm, print_asm, read_asm
from compilers.simulator import SimError, simulate
from compilers.targets import load_target
from semantics.hlo_parser import parse_file
from semantics.inputs import random_inputs
from semantics.interp import evaluate
from tests.paths import PAPER

PROGRAMS = Path(__file__).resolve().parents[2] / "compilers" / "programs"

COPY = """
ENTRY copy {
  x = s8[`n`,4] parameter(0)
  ROOT y = s8[`n`,4] copy(x)
}"""


def tiny(**overrides: object) -> Accelerator:
    """A two-buffer toy target; ``overrides`` replace add_instruction arguments of its one instruction."""
    acc = Accelerator("toy", hbm_size=256)
    acc.add_data_model("a", access=[8], elem=[4], dtype="s8")
    acc.add_data_model("b", access=[8], elem=[4], dtype="s8")
    kw: dict[str, object] = dict(alpha={"n": range(1, 9)}, beta=["src", "dst"], inputs=[("a", ["src"], ["n"])],
                                 output=("b", ["dst"], ["n"]), semantics=COPY, constraints=["src + n <= 8"])
    kw.update(overrides)
    acc.add_instruction("cp", **kw)  # type: ignore[arg-type]
    return acc


def test_fig10b_program_matches_the_reference_bit_for_bit() -> None:
    acc = load_target("qkv")
    prog = read_asm(PROGRAMS / "qkv_fig10b.asm")
    assert len(prog) == 9
    g = parse_file(PAPER / "qkv_attention.hlo")
    for seed in range(3):
        x = random_inputs(g, seed, edges=seed == 2)
        got = simulate(acc, prog, x).outputs[0]
        ref = evaluate(g, x)[0]
        assert got.tobytes() == ref.tobytes(), f"seed {seed}"


def test_qkv_has_the_seven_instructions_of_fig3() -> None:
    acc = load_target("qkv")
    assert list(acc.instructions) == ["load_rm", "load_cm", "store_rm", "store_cm", "mov", "gemm", "softmax"]
    assert acc.buffers["d1"].shape == (128, 64) and acc.buffers["d2"].shape == (64, 64)


def test_asm_round_trip() -> None:
    prog = read_asm(PROGRAMS / "qkv_fig10b.asm")
    assert parse_asm(print_asm(prog)) == prog


@pytest.mark.parametrize(("override", "needle"), [
    ({"output": ("b", ["dst"], ["n + 1"])}, "output: slice b[dst:+(n + 1)] has type s8[2,4] but the semantics returns s8[1,4]"),
    ({"inputs": [("a", ["src", "0"], ["n", "4"])]}, "has 2 dimensions, buffer a has 1 access dimensions"),
    ({"constraints": ["src + m <= 8"]}, "constraint '(src + m) <= 8' uses undeclared attribute 'm'"),
    ({"inputs": [("zz", ["src"], ["n"])]}, "unknown buffer 'zz'"),
    ({"semantics": COPY.replace("copy(x)", "negate(x, x)")}, "semantics does not type-check"),
    ({"semantics": COPY.replace("s8[`n`,4] copy", "s16[`n`,4] copy")}, "semantics does not type-check"),
    ({"semantics": COPY.replace("`n`,4] parameter", "`n + dst`,4] parameter")}, "non-alpha attribute 'dst'"),
    ({"inputs": [("a", ["src"], ["dst"])]}, "lengths may depend only on alpha attributes"),
])
def test_bad_description_is_one_line_naming_instruction_and_field(override: dict, needle: str) -> None:
    acc = tiny(**override)
    with pytest.raises(IsaError) as e:
        acc.validate()
    msg = str(e.value)
    assert msg.startswith("toy.cp: ") and needle in msg and "\n" not in msg, msg


def _toy_program(body: str) -> str:
    return ".target toy\n.input 0 @0 s8[8,4]\n.output 0 @64 s8[8,4]\n" + body


def _run_toy(body: str) -> list[np.ndarray]:
    acc = tiny()
    acc.add_instruction("ld", alpha={"n": range(1, 9)}, beta=["src", "dst"], inputs=[("d0", ["src"], ["n * 4"])],
                        output=("a", ["dst"], ["n"]), semantics="""
ENTRY ld {
  x = u8[`n * 4`] parameter(0)
  r = u8[`n`,4] reshape(x)
  ROOT y = s8[`n`,4] bitcast-convert(r)
}""")
    acc.add_instruction("st", alpha={"n": range(1, 9)}, beta=["src", "dst"], inputs=[("b", ["src"], ["n"])],
                        output=("d0", ["dst"], ["n * 4"]), semantics="""
ENTRY st {
  x = s8[`n`,4] parameter(0)
  r = u8[`n`,4] bitcast-convert(x)
  ROOT y = u8[`n * 4`] reshape(r)
}""")
    acc.validate()
    x = np.arange(32, dtype=np.int8).reshape(8, 4)
    return simulate(acc, parse_asm(_toy_program(body), "p.asm"), [x]).outputs


def test_toy_program_runs() -> None:
    (out,) = _run_toy("ld(n=8, src=0, dst=0)\ncp(n=8, src=0, dst=0)\nst(n=8, src=0, dst=64)\n")
    assert out.tolist() == np.arange(32).reshape(8, 4).tolist()


@pytest.mark.parametrize(("body", "needle"), [
    ("ld(n=8, src=0, dst=1)\n", "p.asm:4:1: instruction 0 'ld(n=8, src=0, dst=1)': output slice a dimension 0: [1, 9) is outside [0, 8)"),
    ("cp(n=4, src=6, dst=0)\n", "p.asm:4:1: instruction 0 'cp(n=4, src=6, dst=0)': constraint (src + n) <= 8 is violated"),
    ("ld(n=1, src=0, dst=0)\nfoo(n=1)\n", "p.asm:5:1: instruction 1 'foo(n=1)': unknown instruction 'foo' for target toy"),
    ("cp(n=9, src=0, dst=0)\n", "n=9 is outside its domain [1, 8]"),
    ("cp(n=1, src=0)\n", "attribute 'dst' is missing"),
    ("st(n=8, src=0, dst=250)\n", "output slice d0 dimension 0: [250, 282) is outside [0, 256)"),
])
def test_bad_program_is_one_line_naming_instruction(body: str, needle: str) -> None:
    with pytest.raises(SimError) as e:
        _run_toy(body)
    assert needle in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize(("text", "needle"), [
    ("load_rm(n=64, addr_in=0, addr_out=0)\n", "p.asm:1:1: missing '.target NAME'"),
    (".target qkv\nload_rm(n=64 addr_in=0)\n", "p.asm:2:1: attribute n: '64 addr_in=0' is not an integer"),
    (".target qkv\nload_rm(n=x)\n", "'x' is not an integer"),
    (".target qkv\nload_rm n=1\n", "expected name(attr=value, ...)"),
    (".target qkv\n.input 0 @0 bf17[2]\n", "bad tensor type 'bf17[2]'"),
])
def test_bad_asm_text(text: str, needle: str) -> None:
    with pytest.raises(AsmError) as e:
        parse_asm(text, "p.asm")
    assert needle in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_cli_isa_show_and_sim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["isa", "show", "qkv"]) == 0
    out = capsys.readouterr().out
    assert "(7) softmax(n | addr)" in out and "d1 = ([128], bf16[64])" in out
    assert main(["sim", str(PROGRAMS / "qkv_fig10b.asm"), "--target", "qkv", "--out", str(tmp_path)]) == 0
    assert "9 instructions on qkv" in capsys.readouterr().out
    bad = tmp_path / "bad.asm"
    bad.write_text(".target qkv\n.input 0 @0 bf16[64,64]\n.output 0 @0 bf16[64,64]\nload_rm(n=64, addr_in=0, addr_out=100)\n")
    assert main(["sim", str(bad), "--target", "qkv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "instruction 0" in err and "[100, 164) is outside [0, 128)" in err
    assert main(["isa", "show", "nope"]) == 2
    assert "unknown target 'nope'" in capsys.readouterr().err
