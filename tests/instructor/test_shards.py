"""`course grade --shard K/N` and `course gradebook merge`: a class graded in three shards is the class graded once."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from class_helpers import SOLUTION, STUB, WRONG, class_course, honest_class, write_folder
from course.cli import app
from course.instructor import grade as grading
from course.registry import load_course


def _grade(cli: CliRunner, *args: str) -> tuple[int, dict]:
    """`course grade ... --json` in-process: the exit code and the summary."""
    done = cli.invoke(app, ["grade", *args, "--json"])
    assert done.stdout.strip(), done.output
    return done.exit_code, json.loads(done.stdout)


def _report(path: Path) -> str:
    """A report with its date blanked: the one thing a merge may not share with a single run."""
    return re.sub(r"Graded [0-9T:.\-+Z]+ ·", "Graded DATE ·", path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def klass(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A class with every kind of entry: (course, submissions)."""
    root = tmp_path_factory.mktemp("klass")
    course, subs = class_course(root), root / "subs"
    honest_class(subs)
    write_folder(subs / "erin", {"ex_pass.py": STUB, "ex_fail.py": WRONG})
    write_folder(subs, {"stray.txt": "not a submission"})
    write_folder(subs / "frank", {"ex_pass.py": SOLUTION, "ex_fail.py": WRONG})
    return course, subs


def test_three_shards_merge_to_the_gradebook_summary_and_report_of_one_run(klass: tuple, tmp_path: Path,
                                                                           cli: CliRunner) -> None:
    """Each shard grades every third entry; merged, they give the same files as the single run."""
    course, subs = klass
    code, single = _grade(cli, str(subs), "--out", str(tmp_path / "one"), "--course", str(course), "--seed", "7")
    shards = tmp_path / "shards"
    seen = []
    for k in (1, 2, 3):
        shard_code, summary = _grade(cli, str(subs), "--out", str(shards / f"shard-{k}"), "--course", str(course),
                                     "--shard", f"{k}/3", "--seed", "7")
        seen.append(summary["students"] + len(summary["bad_entries"]))
        assert shard_code in (0, 2)
    assert seen == [3, 2, 2]  # six students and one stray file, round robin in name order
    done = cli.invoke(app, ["gradebook", "merge", *(str(shards / f"shard-{k}") for k in (1, 2, 3)),
                            "--course", str(course), "--json"])
    assert done.exit_code == code == 2, done.output  # the stray file is named in both, and exits 2
    merged = json.loads(done.stdout)
    assert merged == single
    one, joined = tmp_path / "one", shards
    assert (joined / "gradebook.csv").read_text(encoding="utf-8") == (one / "gradebook.csv").read_text(encoding="utf-8")
    assert json.loads((joined / "summary.json").read_text(encoding="utf-8")) == single
    assert _report(joined / "report.html") == _report(one / "report.html")


def test_shards_without_a_seed_agree_on_one(klass: tuple, tmp_path: Path) -> None:
    """Shards given no --seed derive the same seed from the class (so they can be merged), and keep it."""
    course, subs = klass
    found = load_course(course)
    plans = [grading.prepare(found, subs, tmp_path / f"s{k}", shard=(k, 2)) for k in (1, 2)]
    assert plans[0].seed == plans[1].seed
    assert {s.entry.label for s in plans[0].students}.isdisjoint(s.entry.label for s in plans[1].students)
    again = grading.prepare(found, subs, tmp_path / "s1", shard=(1, 2))
    assert again.seed == plans[0].seed


def test_merge_refuses_shards_it_cannot_join(klass: tuple, tmp_path: Path, cli: CliRunner) -> None:
    """Two seeds, one student twice, or a folder that is no shard: one sentence, exit 2, nothing written."""
    course, subs = klass
    for k, seed in ((1, "7"), (2, "8")):
        _grade(cli, str(subs), "--out", str(tmp_path / f"m{k}"), "--course", str(course), "--shard", f"{k}/2",
               "--seed", seed, "--only", "ex_pass")
    cases = {"different seeds": [tmp_path / "m1", tmp_path / "m2"], "in both": [tmp_path / "m1", tmp_path / "m1"],
             "summary.json": [tmp_path / "subs"]}
    for phrase, folders in cases.items():
        done = cli.invoke(app, ["gradebook", "merge", *map(str, folders), "--course", str(course),
                                "--out", str(tmp_path / "merged")])
        assert done.exit_code == 2 and phrase in done.output, done.output
    assert not (tmp_path / "merged").exists()


@pytest.mark.parametrize("text", ["0/3", "4/3", "1-3", "a/b"])
def test_a_bad_shard_is_a_usage_error(tmp_path: Path, cli: CliRunner, text: str) -> None:
    """--shard must be K/N with 1 <= K <= N."""
    course, subs = class_course(tmp_path), tmp_path / "subs"
    honest_class(subs)
    done = cli.invoke(app, ["grade", str(subs), "--out", str(tmp_path / "o"), "--course", str(course), "--shard", text])
    assert done.exit_code == 2 and "K/N" in done.output, done.output
