"""Golden files for every printed artifact: each paper kernel's assembly, Gemmini's command words,
AMX's C, ``accv isa show``, ``accv rules list`` and a sample of ``accv prove`` lines.

Each artifact is produced through the command line (``accv.cli.main``; ``accv compile`` writes
its files with ``-o`` into a temporary folder) and compared byte for byte with ``tests/golden/``;
a missing or different file fails with a unified diff. ``pytest --update-golden`` rewrites them
all (and deletes golden files no test produces). Times never appear in a golden file: the prover's are replaced by
``<time>``, and the compile summary (which holds the compile time) is printed, not written.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from accv.cli import main
from tests.conftest import GOLDEN, Golden
from tests.paths import PAPER

KERNELS = sorted(PAPER.glob("*.hlo"))
TARGETS = ("qkv", "gemmini", "amx")

#: the files ``accv compile -o K.T.asm`` writes per target, by suffix
ARTIFACTS = {"qkv": ("asm",), "gemmini": ("asm", "stream"), "amx": ("asm", "c")}

#: a few fast rules for the ``accv prove`` sample: symbolic and bounded proofs, an x86 rule
PROVE_SAMPLE = ("abs(abs(x)) => abs(x)", "dot(a, b) with K = 0 => zeros",
                "maximum(0, y) => pandd(maxps(0, y), 0x7fffffff)")

_TIME = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?\s?m?s\b")


def target_of(kernel: Path) -> str:
    """The target a paper kernel is written for (its name's prefix; the composites are Gemmini's)."""
    prefix = kernel.stem.split("_")[0]
    return prefix if prefix in ("amx", "qkv") else "gemmini"


def compiled_name(kernel: Path, suffix: str) -> str:
    return f"{kernel.stem}.{target_of(kernel)}.{suffix}"


def expected_goldens() -> set[str]:
    """Every file under tests/golden/ some test here compares with."""
    return ({f"compile/{compiled_name(k, s)}" for k in KERNELS for s in ARTIFACTS[target_of(k)]}
            | {f"isa/{t}.txt" for t in TARGETS} | {"rules_list.txt", "prove_sample.txt"})


def test_paper_corpus_present() -> None:
    assert len(KERNELS) == 18, f"expected the 18 paper kernels under {PAPER}"


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda p: p.stem)
def test_compiled_artifacts(kernel: Path, tmp_path: Path, golden: Golden) -> None:
    """The assembly (and Gemmini's command words / AMX's C) of each paper kernel, compiled once
    with ``accv compile -o``; every differing artifact is reported, not only the first."""
    tgt = target_of(kernel)
    asm = tmp_path / compiled_name(kernel, "asm")
    rc = main(["compile", str(kernel), "--target", tgt, "--check", "0", "-o", str(asm)])
    assert rc == 0, f"accv compile {kernel.name} --target {tgt} exited {rc}"
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(compiled_name(kernel, s) for s in ARTIFACTS[tgt]), \
        f"accv compile wrote {written}: update ARTIFACTS here if a target prints a new artifact"
    # the assembly's header names the source file: the corpus-relative path, not this machine's
    whys = [golden.diff(f"compile/{name}", (tmp_path / name).read_text().replace(str(kernel), f"paper/{kernel.name}"))
            for name in written]
    if any(whys):
        pytest.fail("\n".join(w for w in whys if w), pytrace=False)


@pytest.mark.parametrize("target", TARGETS)
def test_isa_show(target: str, capsys: pytest.CaptureFixture[str], golden: Golden) -> None:
    assert main(["isa", "show", target]) == 0
    golden.check(f"isa/{target}.txt", capsys.readouterr().out)


def test_rules_list(capsys: pytest.CaptureFixture[str], golden: Golden) -> None:
    assert main(["rules", "list"]) == 0
    golden.check("rules_list.txt", capsys.readouterr().out)


def test_prove_sample(capsys: pytest.CaptureFixture[str], golden: Golden) -> None:
    """``accv prove`` on a few fast rules, proved afresh (``--no-cache``: a cached verdict could come
    from another timeout) in one worker so the lines come in task order; times become ``<time>``."""
    assert main(["prove", *PROVE_SAMPLE, "--rank", "2", "--jobs", "1", "--no-cache"]) == 0
    golden.check("prove_sample.txt", _TIME.sub("<time>", capsys.readouterr().out))


def test_no_stray_golden_files(golden: Golden) -> None:
    """Every golden file belongs to a test here (``--update-golden`` deletes the others)."""
    stray = sorted(str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*")
                   if p.is_file() and str(p.relative_to(GOLDEN)) not in expected_goldens())
    if golden.update:
        for rel in stray:
            (GOLDEN / rel).unlink()
        return
    assert not stray, f"golden files no test compares with: {stray}; run pytest --update-golden to delete them"
