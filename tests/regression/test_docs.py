"""docs/regression.md's worked example, run as written: its files (the blocks under a
``<!-- file: PATH -->`` comment) in a fresh folder, its ``pytest`` commands, and the output lines
shown under ``<!-- output of: COMMAND -->`` (in order; ``*`` stands for the timings)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from .test_plugin import PLUGIN, _warm  # noqa: F401 - the module-scoped warm-up fixture

DOC = Path(__file__).resolve().parents[2] / "docs" / "regression.md"
_BLOCK = r"\n```[a-z]*\n(.*?)```"


def _files() -> dict[str, str]:
    return dict(re.findall(r"<!-- file: (\S+) -->" + _BLOCK, DOC.read_text(), re.S))


def _outputs() -> dict[str, list[str]]:
    return {cmd: text.splitlines() for cmd, text in re.findall(r"<!-- output of: (.+?) -->" + _BLOCK, DOC.read_text(),
                                                                re.S)}


def _commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(), re.S)
    return [line for b in blocks for line in b.splitlines() if line.startswith("pytest")]


def test_the_doc_shows_files_commands_and_their_outputs():
    assert set(_files()) == {"pyproject.toml", "kernels/gemmini_add.hlo", "kernels/gemmini_mac.hlo"}
    assert set(_outputs()) == set(_commands()) and len(_commands()) == 3


@pytest.mark.parametrize("command", [pytest.param(c, marks=[] if ("not rtl" in c or "collect" in c) else
                                                  [pytest.mark.slow, pytest.mark.rtl]) for c in _commands()])
def test_worked_example(pytester, command):
    for rel, text in _files().items():
        (pytester.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (pytester.path / rel).write_text(text)
    res = pytester.runpytest(*shlex.split(command)[1:], *PLUGIN)
    # each shown line, in order, within a printed line ("[" taken literally; the summary line is framed by "=")
    res.stdout.fnmatch_lines(["*" + line.replace("[", "[[]") + "*" for line in _outputs()[command]])
