"""A submissions folder as Gradescope, Moodle and Canvas export it: entries found, bad ones named, a roster applied.

Nothing here grades: these are the layouts and the names, checked on files alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from class_helpers import SOLUTION, STUB, WRONG, class_course, write_folder, write_zip
from course.errors import UsageError
from course.instructor import layouts, roster, submissions
from course.registry import load_course

# What Gradescope's "Export Submissions" writes beside the submission folders (its Ruby-style keys).
GRADESCOPE_YML = """\
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@example.edu
  :created_at: 2026-11-20 10:15:03.000000000 -08:00
  :score: 0.0
submission_202:
  :submitters:
  - :name: Alan Turing
    :sid: '1912'
    :email: alan@example.edu
  - :name: Grace Hopper
    :sid: '1906'
    :email: grace@example.edu
  :created_at: !ruby/object:ActiveSupport::TimeWithZone
    utc: 2026-11-21 09:00:00.000000000 Z
  :score: 0.0
"""


@pytest.fixture
def course(tmp_path: Path):
    """The two-exercise class course, loaded."""
    return load_course(class_course(tmp_path))


def _files(entry, course) -> dict[str, str | None]:
    """What an entry holds per exercise: the file graded (None: not tried)."""
    return {name: found.rel for name, found in entry.locate(course.exercises).items()}


def test_gradescope_export_names_each_folder_by_its_submitters(tmp_path: Path, course) -> None:
    """The metadata maps `submission_<n>` to the submitter's sid; a group names every member; the file is no entry."""
    subs = tmp_path / "export"
    write_folder(subs / "submission_101", {"ex_pass.py": SOLUTION})
    write_folder(subs / "submission_202", {"exercises/02_ex_fail/ex_fail.py": WRONG})
    (subs / layouts.GRADESCOPE_METADATA).write_text(GRADESCOPE_YML, encoding="utf-8")
    intake = layouts.read_class(subs)
    assert intake.bad == [] and intake.layout == "Gradescope export"
    ada, group = intake.entries
    assert (ada.student, ada.name, ada.label) == ("1815", "Ada Lovelace", "submission_101")
    assert (group.student, group.members) == ("1912", ("1906",))
    assert _files(group, course) == {"ex_pass": None, "ex_fail": "exercises/02_ex_fail/ex_fail.py"}


def test_a_damaged_gradescope_metadata_file_is_named_and_the_folders_still_graded(tmp_path: Path) -> None:
    """Metadata that cannot be read is one bad line; its folders keep their own names."""
    subs = tmp_path / "export"
    write_folder(subs / "submission_101", {"ex_pass.py": SOLUTION})
    (subs / layouts.GRADESCOPE_METADATA).write_text("submission_101: [unclosed\n", encoding="utf-8")
    intake = layouts.read_class(subs)
    assert [e.student for e in intake.entries] == ["submission_101"]
    assert [b.label for b in intake.bad] == [layouts.GRADESCOPE_METADATA]
    assert "could not be read" in intake.bad[0].reason


def test_moodle_folders_and_flat_files_become_one_entry_per_participant(tmp_path: Path, course) -> None:
    """`Name_id_assignsubmission_file_` folders, and flat files so named, grouped by participant id."""
    subs = tmp_path / "moodle"
    write_folder(subs / "Smith, John_12345_assignsubmission_file_", {"work/ex_pass.py": SOLUTION})
    write_folder(subs, {"Doe, Jane_678_assignsubmission_file_ex_pass.py": WRONG,
                        "Doe, Jane_678_assignsubmission_file_ex_fail.py": SOLUTION,
                        "Doe, Jane_678_assignsubmission_onlinetext_onlinetext.html": "<p>done</p>"})
    intake = layouts.read_class(subs)
    assert intake.bad == [] and intake.layout == "Moodle"
    jane, john = sorted(intake.entries, key=lambda e: e.name)
    assert (john.student, john.name) == ("12345", "Smith, John")
    assert _files(john, course)["ex_pass"] == "work/ex_pass.py"
    assert jane.student == "678" and _files(jane, course) == {"ex_pass": "ex_pass.py", "ex_fail": "ex_fail.py"}
    assert jane.locate(course.exercises)["ex_pass"].data == WRONG.encode()


def test_canvas_files_are_grouped_by_user_late_and_resubmitted_names_undone(tmp_path: Path, course) -> None:
    """`name_[late_]user_submission_file`, with Canvas's `-1` before the extension of a resubmitted file."""
    subs = tmp_path / "canvas"
    write_folder(subs, {"lovelaceada_4401_90001_ex_pass.py": SOLUTION,
                        "lovelaceada_late_4401_90002_ex_fail-1.py": WRONG,
                        "turingalan_4402_90003_submission.zip": ""})
    write_zip(subs / "turingalan_4402_90003_submission.zip", {"hw/exercises/01_ex_pass/ex_pass.py": SOLUTION})
    intake = layouts.read_class(subs)
    assert intake.bad == [] and intake.layout == "Canvas"
    ada, alan = intake.entries
    assert (ada.student, ada.name) == ("4401", "lovelaceada") and _files(ada, course) == {"ex_pass": "ex_pass.py",
                                                                                         "ex_fail": "ex_fail.py"}
    assert _files(alan, course)["ex_pass"] == "submission.zip/hw/exercises/01_ex_pass/ex_pass.py"


def test_what_cannot_be_an_entry_is_named_and_the_rest_kept(tmp_path: Path) -> None:
    """A stray file, a damaged zip, an unusable name and two entries of one student: each named with its reason."""
    subs = tmp_path / "subs"
    write_folder(subs / "alice", {"ex_pass.py": SOLUTION})
    write_folder(subs, {"notes.txt": "grade these", "bad name/ex_pass.py": SOLUTION})
    (subs / "broken.zip").write_bytes(b"PK\x03\x04 not really a zip")
    write_folder(subs / "eve", {"ex_pass.py": SOLUTION})
    write_zip(subs / "eve.zip", {"ex_pass.py": WRONG})
    intake = layouts.read_class(subs)
    assert [e.student for e in intake.entries] == ["alice"]
    reasons = {b.label: b.reason for b in intake.bad}
    assert set(reasons) == {"notes.txt", "bad name", "broken.zip", "eve", "eve.zip"}
    assert "not a submission" in reasons["notes.txt"] and "not a readable zip" in reasons["broken.zip"]
    assert "usable student id" in reasons["bad name"] and "both student `eve`" in reasons["eve.zip"]


def test_an_empty_folder_or_no_folder_is_a_usage_error(tmp_path: Path) -> None:
    """Only a folder that is not one, or holds nothing, stops the run before anything is graded."""
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="holds no submissions"):
        layouts.read_class(tmp_path / "empty")
    with pytest.raises(UsageError, match="is not a folder"):
        layouts.read_class(tmp_path / "nothing")


def test_a_roster_maps_entries_to_ids_and_lists_who_sent_nothing(tmp_path: Path) -> None:
    """Moodle's participant id, a Canvas user id and an email map to roster ids; an unknown entry is named."""
    subs = tmp_path / "subs"
    write_folder(subs / "Smith, John_12345_assignsubmission_file_", {"ex_pass.py": SOLUTION})
    write_folder(subs, {"lovelaceada_4401_90001_ex_pass.py": SOLUTION})
    write_folder(subs / "grace@example.edu", {"ex_pass.py": STUB})
    write_folder(subs / "stranger", {"ex_pass.py": SOLUTION})
    csv = tmp_path / "roster.csv"
    csv.write_text("Full name,Identifier,SIS User ID,ID,Email address,Section\n"
                   "\"Smith, John\",Participant 12345,s001,9999,john@example.edu,A1\n"
                   "Ada Lovelace,,s002,4401,ada@example.edu,A1\n"
                   "Grace Hopper,,s003,4403,grace@example.edu,A2\n"
                   "Alan Turing,,s004,4404,alan@example.edu,A2\n", encoding="utf-8")
    intake = layouts.read_class(subs, roster=roster.load(csv))
    assert {e.label: e.student for e in intake.entries} == {
        "Smith, John_12345_assignsubmission_file_": "s001", "lovelaceada_4401": "s002", "grace@example.edu": "s003"}
    assert [(b.label, "matches no student" in b.reason) for b in intake.bad] == [("stranger", True)]
    assert intake.missing == [("s004", "Alan Turing")]


@pytest.mark.parametrize(("text", "phrase"), [
    ("name,section\nAda,A1\n", "no id column"),
    ("student,name\nbad id,Ada\n", "not a usable id"),
    ("student,name\nada,Ada\nada,Ada again\n", "appears twice"),
    ("student,name\n", "lists no student"),
])
def test_a_bad_roster_is_one_sentence_naming_it(tmp_path: Path, text: str, phrase: str) -> None:
    """A roster that cannot be used stops the run before grading, naming the file and the line."""
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=phrase):
        roster.load(path)


def test_shards_split_entries_and_bad_entries_between_them(tmp_path: Path) -> None:
    """Three shards hold every entry and every bad entry exactly once, in name order, round robin."""
    subs = tmp_path / "subs"
    for k in range(7):
        write_folder(subs / f"s{k}", {"ex_pass.py": SOLUTION})
    write_folder(subs, {"stray.txt": "x"})
    whole = layouts.read_class(subs)
    shards = [whole.shard(k, 3) for k in (1, 2, 3)]
    labels = [sorted([*(e.label for e in s.entries), *(b.label for b in s.bad)]) for s in shards]
    assert sorted(sum(labels, [])) == sorted([*(e.label for e in whole.entries), "stray.txt"])
    assert labels[0] == ["s0", "s3", "s6"] and labels[2] == ["s2", "s5"] and "stray.txt" in labels[1]


def test_a_damaged_zip_inside_an_entry_is_said_where_the_file_is_missing(tmp_path: Path, course) -> None:
    """A student's own zip that cannot be read leaves their exercises not tried, with the reason."""
    entry = layouts.read_class(write_folder(tmp_path / "subs" / "nia", {"work.zip": "PK broken"}).parent).entries[0]
    found = entry.locate(course.exercises)["ex_pass"]
    assert not found.tried and found.rel is None and "work.zip is not a readable zip" in found.note
    assert entry.unreadable() == [found.note]


def test_zips_inside_zips_are_read_and_what_cannot_be_is_named(tmp_path: Path, course) -> None:
    """A file inside a zip inside a zip is found; a zip nested past the limit, a damaged one at any depth and an
    archive of a kind never unpacked are each named, one sentence apiece."""
    import io
    import zipfile

    def zipped(files: dict[str, bytes]) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, data in files.items():
                archive.writestr(name, data)
        return buffer.getvalue()

    solution = b"def double(x):\n    return 2 * x\n"
    deep = zipped({"ex_fail.py": solution})
    for _ in range(submissions.MAX_NESTING):
        deep = zipped({"deeper.zip": deep})
    outer = zipped({"a/inner.zip": zipped({"ex_pass.py": solution, "bad.zip": b"PK nope"}), "deep.zip": deep,
                    "work.tar.gz": b"\x1f\x8b"})
    (tmp_path / "subs" / "kim").mkdir(parents=True)
    (tmp_path / "subs" / "kim" / "all.zip").write_bytes(outer)
    entry = layouts.read_class(tmp_path / "subs").entries[0]
    found = entry.locate(course.exercises)
    assert found["ex_pass"].rel == "all.zip/a/inner.zip/ex_pass.py" and found["ex_pass"].data == solution
    assert not found["ex_fail"].tried
    said = entry.unreadable()
    assert len(said) == 3, said
    assert any(s.startswith("all.zip/a/inner.zip/bad.zip is not a readable zip") for s in said), said
    assert any("more than are read" in s and s.startswith("all.zip/deep.zip/deeper.zip") for s in said), said
    assert any(s.startswith("all.zip/work.tar.gz is a kind of archive that is never unpacked") for s in said), said


# Names as the platforms write them. Canvas (instructure/canvas-lms, lib/content_zipper.rb: get_filename
# and sanitize_file_name) names each file `<sortable name, lower case>[_LATE]_<user id>_<file id>_<file>`,
# keeping every character of `[[:word:]]` (Unicode letters, marks, digits, `_`) and dropping the rest, and
# `anon_<id>` in place of name and user id under anonymous grading. Moodle (mod/assign, download_submissions)
# writes `<full name>_<participant id>_assignsubmission_file_`, the name as the site spells it; peers'
# parsers are tested on Hebrew folder names of that form. Gradescope's `submission_metadata.yml` gives
# each submitter's `:name:`, `:sid:` and `:email:` as UTF-8 YAML.
WORLD = {  # sortable name -> (Canvas's spelling, Moodle's full name, user id)
    "Müller, Dana": ("müllerdana", "Dana Müller", "4401"),
    "García, José": ("garcíajosé", "José García", "4402"),
    "张, 伟": ("张伟", "张伟", "4403"),
    "Иванова, Мария": ("ивановамария", "Мария Иванова", "4404"),
    "Παπαδόπουλος, Γιώργος": ("παπαδόπουλοςγιώργος", "Γιώργος Παπαδόπουλος", "4405"),
    "الحسن, ليلى": ("الحسنليلى", "ليلى الحسن", "4406"),
    "शर्मा, प्रिया": ("शर्माप्रिया", "प्रिया शर्मा", "4407"),
}


def test_canvas_names_in_any_script_are_attributed_to_their_student(tmp_path: Path, course) -> None:
    """Every student of a Canvas export is found by user id whatever the script of their name, late or not,
    resubmitted or not; a name in decomposed Unicode (as macOS unzips it) too; anonymous grading as well."""
    import unicodedata

    subs = tmp_path / "canvas"
    for k, (canvas, _, uid) in enumerate(WORLD.values()):
        late = "_LATE" if k % 2 else ""
        write_folder(subs, {f"{canvas}{late}_{uid}_{90000 + k}_ex_pass.py": SOLUTION,
                            f"{canvas}_{uid}_{91000 + k}_ex_fail-1.py": WRONG})
    write_folder(subs, {unicodedata.normalize("NFD", "garcíajosé") + "_4412_92000_ex_pass.py": SOLUTION,
                        "anon_x7k2q_93000_ex_pass.py": SOLUTION, "LATE_anon_p9w4z_93001_ex_fail.py": WRONG})
    intake = layouts.read_class(subs)
    assert intake.bad == [] and intake.layout == "Canvas", intake.bad
    found = {e.student: e for e in intake.entries}
    assert set(found) == {uid for _, _, uid in WORLD.values()} | {"4412", "x7k2q", "p9w4z"}
    for canvas, _, uid in WORLD.values():
        assert found[uid].name == canvas and _files(found[uid], course) == {"ex_pass": "ex_pass.py",
                                                                           "ex_fail": "ex_fail.py"}
    assert _files(found["p9w4z"], course)["ex_fail"] == "ex_fail.py"


def test_moodle_and_gradescope_names_in_any_script_are_attributed_to_their_student(tmp_path: Path, course) -> None:
    """Moodle's folders and flat files, and Gradescope's metadata, with names in seven scripts; a roster
    whose names are composed differently from the export's still matches them."""
    import unicodedata

    moodle = tmp_path / "moodle"
    for k, (_, full, uid) in enumerate(WORLD.values()):
        if k % 2:
            write_folder(moodle / f"{full}_{uid}_assignsubmission_file_", {"work/ex_pass.py": SOLUTION})
        else:
            write_folder(moodle, {f"{full}_{uid}_assignsubmission_file_ex_pass.py": SOLUTION})
    intake = layouts.read_class(moodle)
    assert intake.bad == [] and {e.student: e.name for e in intake.entries} == {
        uid: full for _, full, uid in WORLD.values()}
    gradescope = tmp_path / "gradescope"
    lines = []
    for k, (_, full, uid) in enumerate(WORLD.values()):
        write_folder(gradescope / f"submission_{k}", {"ex_pass.py": SOLUTION})
        lines.append(f"submission_{k}:\n  :submitters:\n  - :name: {full}\n    :sid: '{uid}'\n"
                     f"    :email: s{uid}@example.edu\n")
    (gradescope / layouts.GRADESCOPE_METADATA).write_text("".join(lines), encoding="utf-8")
    intake = layouts.read_class(gradescope)
    assert intake.bad == [] and {e.student: e.name for e in intake.entries} == {
        uid: full for _, full, uid in WORLD.values()}
    rows = "".join(f"{unicodedata.normalize('NFD', full)},s{uid}\n" for _, full, uid in WORLD.values())
    (tmp_path / "roster.csv").write_text("name,student_id\n" + rows, encoding="utf-8")
    named = tmp_path / "by-name"
    for _, full, uid in WORLD.values():
        write_folder(named / f"{full}_{uid}_assignsubmission_file_", {"ex_pass.py": SOLUTION})
    intake = layouts.read_class(named, roster=roster.load(tmp_path / "roster.csv"))
    assert intake.bad == [] and intake.missing == []
    assert {e.student for e in intake.entries} == {f"s{uid}" for _, _, uid in WORLD.values()}


def test_a_damaged_zip_is_said_to_be_the_student_it_names(tmp_path: Path) -> None:
    """`s1006.zip` that cannot be read is s1006's row, not an unattributed one beside a "submitted nothing"."""
    subs = tmp_path / "subs"
    write_zip(subs / "s1005.zip", {"ex_pass.py": SOLUTION})
    (subs / "s1006.zip").write_bytes(b"PK\x03\x04 cut short by the upload")
    (tmp_path / "roster.csv").write_text("student_id,name\ns1005,Ada\ns1006,Alan\ns1007,Grace\n", encoding="utf-8")
    intake = layouts.read_class(subs, roster=roster.load(tmp_path / "roster.csv"))
    assert [(b.label, b.student) for b in intake.bad] == [("s1006.zip", "s1006")]
    assert "not a readable zip" in intake.bad[0].reason
    assert intake.missing == [("s1007", "Grace")]
    assert [(b.label, b.student) for b in layouts.read_class(subs).bad] == [("s1006.zip", "s1006")]


@pytest.mark.parametrize("platform", ["Canvas", "Moodle", "Gradescope"])
def test_a_folder_holding_an_export_is_read_as_that_export(tmp_path: Path, platform: str) -> None:
    """`course grade downloads/` where downloads/ holds the unpacked export reads the export, never one
    student named after its folder; an export lying among students' folders is named and left out."""
    export = tmp_path / "downloads" / "assignment_27_export"
    if platform == "Canvas":
        write_folder(export, {"müllerdana_4401_90001_ex_pass.py": SOLUTION, "张伟_LATE_4403_90002_ex_pass.py": WRONG})
    elif platform == "Moodle":
        write_folder(export / "Dana Müller_4401_assignsubmission_file_", {"ex_pass.py": SOLUTION})
        write_folder(export / "张伟_4403_assignsubmission_file_", {"ex_pass.py": WRONG})
    else:
        write_folder(export / "submission_1", {"ex_pass.py": SOLUTION})
        write_folder(export / "submission_2", {"ex_pass.py": WRONG})
        (export / layouts.GRADESCOPE_METADATA).write_text(
            "submission_1:\n  :submitters:\n  - :name: Dana Müller\n    :sid: '4401'\n"
            "submission_2:\n  :submitters:\n  - :name: 张伟\n    :sid: '4403'\n", encoding="utf-8")
    intake = layouts.read_class(tmp_path / "downloads")
    assert intake.bad == [] and sorted(e.student for e in intake.entries) == ["4401", "4403"]
    write_folder(tmp_path / "downloads" / "alice", {"ex_pass.py": SOLUTION})
    mixed = layouts.read_class(tmp_path / "downloads")
    assert [e.student for e in mixed.entries] == ["alice"]
    assert [b.label for b in mixed.bad] == ["assignment_27_export"]
    assert f"holds a {platform} export" in mixed.bad[0].reason and "course grade" in mixed.bad[0].reason
