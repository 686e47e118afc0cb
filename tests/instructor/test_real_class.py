"""A class as it comes off real platforms, graded in full: the bad entries named, everyone else graded.

One submissions folder holds what a term's export really holds: honest students in folders and
zips, a zip cut short in the download, the `submission_metadata.yml` that Gradescope's export
puts at the top, a Moodle-named folder, a student who handed back the untouched stub, and the
batch attackers of `tests/adversarial/attacks/batch` trying to read, write, signal and connect.
It is graded once through the real `course grade`.
"""

from __future__ import annotations

import csv
import json
import os
import socket
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pytest

from class_helpers import (
    SOLUTION,
    STUB,
    assert_gradescope,
    assert_hides_hidden,
    class_course,
    honest_class,
    write_folder,
)
from course.engine.contain import protections

ATTACKS = Path(__file__).resolve().parents[1] / "adversarial" / "attacks" / "batch"
COURSE_BIN = Path(sys.executable).with_name("course")
STOPPED_BY = {"read_classmate": "landlock_files", "write_results": "landlock_files",
              "open_socket": "network_namespace", "kill_graders": "landlock_scopes"}
METADATA = """\
submission_777:
  :submitters:
  - :name: Grace Hopper
    :sid: '7777'
    :email: grace@example.edu
  :created_at: 2026-11-20 10:15:03.000000000 -08:00
  :score: 0.0
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The class graded once: its exit code, summary, output folder and expected totals."""
    root = tmp_path_factory.mktemp("term")
    course, subs, out = class_course(root), root / "subs", root / "out"
    expected = honest_class(subs)
    whole = root / "whole.zip"
    with zipfile.ZipFile(whole, "w") as archive:
        archive.writestr("ex_pass.py", SOLUTION * 50)
    (subs / "broken.zip").write_bytes(whole.read_bytes()[:-40])  # the download was cut short
    (subs / "submission_metadata.yml").write_text(METADATA, encoding="utf-8")
    write_folder(subs / "submission_777", {"ex_pass.py": SOLUTION})
    write_folder(subs / "Smith, John_12345_assignsubmission_file_", {"work/ex_pass.py": SOLUTION})
    write_folder(subs / "ursula", {"exercises/01_ex_pass/ex_pass.py": STUB})
    expected.update({"7777": 3.0, "12345": 3.0, "ursula": 0.0})
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    token = f"TOKEN{uuid.uuid4().hex}"
    for attack in sorted(ATTACKS.glob("*.py")):
        text = attack.read_text(encoding="utf-8").replace("__PORT__", str(listener.getsockname()[1]))
        write_folder(subs / attack.stem, {"ex_pass.py": text.replace("__TOKEN__", token)})
        expected[attack.stem] = 3.0
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    # As root with no unprivileged user to grade as, `course grade` refuses unless told to trust the class
    # (tests/adversarial/test_trust.py); the attackers are then held by what else this machine has.
    trust = ["--trust-submissions"] if protections.grades_as_root(protections.available()) else []
    done = subprocess.run([str(COURSE_BIN), "grade", str(subs), "--out", str(out), "--course", str(course), "--json",
                           "--jobs", "2", *trust], capture_output=True, text=True, env=env, timeout=600, check=False)
    try:
        connection = listener.accept()
    except BlockingIOError:
        connection = None
    listener.close()
    assert done.stdout.strip(), done.stderr[-3000:]
    return {"code": done.returncode, "summary": json.loads(done.stdout), "out": out, "expected": expected,
            "connected": connection is not None}


def test_every_entry_that_can_be_graded_is_and_the_bad_one_is_named(graded: dict) -> None:
    """Exit 2 only because of the cut zip, named in the summary and the gradebook; all others graded."""
    summary, out = graded["summary"], graded["out"]
    assert graded["code"] == 2, summary
    assert [b["entry"] for b in summary["bad_entries"]] == ["broken.zip"]
    assert "not a readable zip" in summary["bad_entries"][0]["reason"]
    assert sorted(summary["totals"]) == sorted(graded["expected"])
    with (out / "gradebook.csv").open(encoding="utf-8") as fh:
        rows = {r["entry"]: r for r in csv.DictReader(fh)}
    assert rows["broken.zip"]["note"].startswith("not graded: ") and rows["broken.zip"]["total"] == ""
    assert rows["submission_777"]["student"] == "7777" and rows["submission_777"]["name"] == "Grace Hopper"
    assert rows["Smith, John_12345_assignsubmission_file_"]["student"] == "12345"
    assert "submission_metadata.yml" not in rows  # recognised as the export's, not taken for a student


def test_the_class_is_scored_as_its_own_files_earn(graded: dict) -> None:
    """Honest students, the Gradescope and Moodle entries score what their files earn; the untouched stub is
    not tried; each attacker scores what honest code scores, or its results say the protection was off."""
    on = protections.available().as_dict()
    summary, out, expected = graded["summary"], graded["out"], graded["expected"]
    for student, total in expected.items():
        results = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        if student in STOPPED_BY and not on[STOPPED_BY[student]]:
            assert not results["extra_data"]["isolation"][STOPPED_BY[student]]
            continue
        assert_gradescope(results, student)
        assert_hides_hidden(results)
        assert summary["totals"][student] == total, (student, results["output"])
    ursula = json.loads((out / "ursula" / "results.json").read_text(encoding="utf-8"))
    assert ursula["extra_data"]["exercises"]["ex_pass"]["status"] == "not_tried"
    assert summary["exercises"][0]["not_tried"] == 3  # carol, dave (his file is in .venv) and ursula
    if all(on[flag] for flag in STOPPED_BY.values()):
        assert not graded["connected"]
