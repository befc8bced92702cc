"""`accv report` as a user runs it: the commands of docs/report.md on a small campaign database made
here, the page's self-containment, and the one-line errors."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from accv.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _doc_commands() -> list[str]:
    """The `accv report` lines of docs/report.md's ```sh blocks."""
    text = (ROOT / "docs" / "report.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    return [ln.strip() for b in blocks for ln in b.splitlines() if ln.strip().startswith("accv report ")]


def test_the_docs_commands_write_the_page_and_summary(campaign_db: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cmds = _doc_commands()
    assert cmds, "docs/report.md has no accv report command in a sh block"
    (tmp_path / "build" / "fuzz").mkdir(parents=True)
    shutil.copy(campaign_db, tmp_path / "build" / "fuzz" / "run.sqlite")
    shutil.copytree(str(campaign_db) + ".repro", tmp_path / "build" / "fuzz" / "run.sqlite.repro")
    monkeypatch.chdir(tmp_path)
    for cmd in cmds:
        argv = shlex.split(cmd)
        assert main(argv[1:]) == 0, cmd
        out = argv[argv.index("-o") + 1]
        page = (tmp_path / out).read_text()
        assert "accv campaign 2" in page and "accv fuzz --replay " in page
        # self-contained: nothing fetched, no script
        assert "<script" not in page and not re.search(r"""(src|href)=["']?(https?:)?//""", page)
        if "--md" in argv:
            md = (tmp_path / argv[argv.index("--md") + 1]).read_text()
            assert md.startswith("# accv campaign 2") and "## Failure buckets" in md and "`accv fuzz --replay " in md
    assert "accv report: campaign 2" in capsys.readouterr().out


def test_an_older_campaign_and_no_cache(campaign_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "run.sqlite"
    shutil.copy(campaign_db, db)
    assert main(["report", str(db), "--campaign", "1", "--no-cache", "--md", str(tmp_path / "s.md")]) == 0
    assert (tmp_path / "run.html").is_file() and not Path(str(db) + ".report-cache.json").exists()
    md = (tmp_path / "s.md").read_text()
    assert md.startswith("# accv campaign 1") and "against campaign" not in md


@pytest.mark.parametrize("argv, message", [
    (["report", "nope.sqlite"], "accv: nope.sqlite: no such file"),
    (["report", "{db}", "--campaign", "7"], "no campaign 7 (campaigns: 1, 2)"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], message: str, campaign_db: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main([a.format(db=campaign_db) for a in argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_campaign_without_cases_yet(campaign_db: Path, tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "run.sqlite"
    shutil.copy(campaign_db, db)
    con = sqlite3.connect(db)
    con.execute("INSERT INTO campaigns (args, seed, started) VALUES ('{\"targets\": [\"gemmini\"]}', 0, 2e9)")
    con.commit()
    con.close()
    assert main(["report", str(db), "--md", str(tmp_path / "s.md")]) == 0
    assert "No case of this campaign has finished yet." in (tmp_path / "run.html").read_text()
    assert (tmp_path / "s.md").read_text().startswith("# accv campaign 3\n\n0 cases")
