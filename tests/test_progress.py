"""Progress: atomic, locked, signed writes; corrupt files kept; stale derived; fields in step with the schema."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
from dataclasses import asdict, fields
from pathlib import Path

import pytest

from course.paths import WorkspacePaths
from course.progress import ENTRY_FIELDS, Entry, Progress, ProgressStore, now_iso


def _entry(status: str = "passed", digest: str = "h1") -> Entry:
    """A sample entry."""
    return Entry(status=status, score=3, max_score=3, last_checked=now_iso(), grader_hash=digest)  # type: ignore[arg-type]


def test_missing_file_is_a_fresh_start(tmp_path: Path) -> None:
    """No progress file means no results and no warning."""
    store = ProgressStore(WorkspacePaths(tmp_path))
    assert store.load().exercises == {} and store.warnings == []


def test_record_and_reload(tmp_path: Path) -> None:
    """Recorded entries come back signed and intact."""
    store = ProgressStore(WorkspacePaths(tmp_path))
    store.record({"a": _entry()})
    loaded = ProgressStore(WorkspacePaths(tmp_path)).load()
    assert loaded.exercises["a"].status == "passed" and loaded.exercises["a"].signature
    assert not list((tmp_path / ".course").glob("*.tmp"))


def test_corrupt_file_is_kept_as_bak(tmp_path: Path) -> None:
    """A damaged file is moved to progress.json.bak with a warning that says how to rebuild; progress
    starts fresh."""
    store = ProgressStore(WorkspacePaths(tmp_path))
    store.record({"a": _entry()})
    text = store.paths.progress.read_text()
    store.paths.progress.write_text(text[: len(text) // 2])
    fresh = ProgressStore(WorkspacePaths(tmp_path))
    assert fresh.load().exercises == {}
    assert (tmp_path / ".course" / "progress.json.bak").read_text() == text[: len(text) // 2]
    assert "damaged" in fresh.warnings[0] and "`course check --all` grades your files again" in fresh.warnings[0]


def test_every_damaged_file_gets_its_own_backup(tmp_path: Path) -> None:
    """A second and a third corruption are kept as .bak.2 and .bak.3: no earlier backup is overwritten."""
    kept = []
    for i in range(3):
        store = ProgressStore(WorkspacePaths(tmp_path))
        store.record({"a": _entry()})
        store.paths.progress.write_text(f"damaged {i}")
        fresh = ProgressStore(WorkspacePaths(tmp_path))
        assert fresh.load().exercises == {}
        kept.append(fresh.warnings[0])
    state = tmp_path / ".course"
    assert [(state / n).read_text() for n in ("progress.json.bak", "progress.json.bak.2", "progress.json.bak.3")] == [
        "damaged 0", "damaged 1", "damaged 2"]
    assert "kept as progress.json.bak.3" in kept[2]


def test_unknown_version_is_an_error_and_the_file_is_kept(tmp_path: Path) -> None:
    """A file of another version is neither read as empty nor moved: one clear error, exit 2."""
    from course.errors import exit_code_for
    from course.progress import ProgressVersionError

    paths = WorkspacePaths(tmp_path)
    paths.state.mkdir()
    paths.progress.write_text(json.dumps({"version": 99, "exercises": {"a": {"x": 1}}}))
    with pytest.raises(ProgressVersionError, match="format 99") as info:
        ProgressStore(paths).load()
    assert "upgrade" in str(info.value) and exit_code_for(info.value) == 2
    assert json.loads(paths.progress.read_text())["version"] == 99
    assert not list(paths.state.glob("*.bak*"))


def test_passed_once_is_signed_and_older_entries_still_read(tmp_path: Path) -> None:
    """An entry without `passed_once` (written before it existed) verifies; setting it by hand does not."""
    store = ProgressStore(WorkspacePaths(tmp_path))
    store.record({"a": _entry("failed"), "b": _entry("not_tried")})
    data = json.loads(store.paths.progress.read_text())
    del data["exercises"]["a"]["passed_once"]
    data["exercises"]["b"]["passed_once"] = True
    store.paths.progress.write_text(json.dumps(data))
    again = ProgressStore(WorkspacePaths(tmp_path))
    assert sorted(again.load().exercises) == ["a"] and "`b` was edited by hand" in again.warnings[0]


def test_hand_edited_entry_is_ignored(tmp_path: Path) -> None:
    """Flipping a failure to a pass by hand breaks its signature: the entry is dropped with a warning."""
    store = ProgressStore(WorkspacePaths(tmp_path))
    store.record({"a": _entry("failed"), "b": _entry()})
    data = json.loads(store.paths.progress.read_text())
    data["exercises"]["a"]["status"] = "passed"
    data["exercises"]["c"] = dict(data["exercises"]["b"])
    store.paths.progress.write_text(json.dumps(data))
    again = ProgressStore(WorkspacePaths(tmp_path))
    assert sorted(again.load().exercises) == ["b"]
    assert len(again.warnings) == 2 and "edited by hand" in again.warnings[0]


def test_stale_and_not_tried() -> None:
    """A pass against another grader hash is stale; a failure stays a failure; no entry, or one recorded
    as not tried, is not tried."""
    progress = Progress(exercises={"a": _entry(digest="old"), "b": _entry(digest="h"), "c": _entry("failed", "old"),
                                   "e": _entry("not_tried", "h")})
    assert progress.status("a", "new") == "stale"
    assert progress.status("b", "h") == "passed"
    assert progress.status("c", "new") == "failed"
    assert progress.status("d", "h") == "not_tried"
    assert progress.status("e", "h") == "not_tried"


def test_entry_fields_match_the_schema() -> None:
    """The entry's fields are kept off pydantic for speed; they, the parser's and the schema's are one list."""
    from course.schema import EntryFile, ProgressFile

    assert {f.name for f in fields(Entry)} == ENTRY_FIELDS == set(EntryFile.model_fields)
    assert {f.name for f in fields(Progress)} == set(ProgressFile.model_fields)


def test_writing_applies_the_schemas_rules_without_pydantic(tmp_path: Path) -> None:
    """What `_dump` writes is what pydantic's `ProgressFile` makes of the same progress, and what it refuses, the
    schema refuses: its field types are the schema's, and a file is written without importing pydantic."""
    from typing import get_args

    from course.progress import KINDS, STATUSES, _dump
    from course.schema import EntryFile, ProgressFile

    schema = {name: f.annotation for name, f in EntryFile.model_fields.items()}
    assert get_args(schema.pop("status")) == STATUSES and schema == {k: v for k, v in KINDS.items() if k != "status"}
    cases: list[dict[str, object]] = [{}, {"status": "failed", "passed_once": True}, {"status": "not_tried"},
                                      {"score": 2}, {"passed_once": 1}, {"passed_once": 0}, {"status": "stale"},
                                      {"grader_hash": 3}, {"last_checked": None}, {"passed_once": "yes please"}]
    for change in cases:
        entry = _entry()
        for key, value in change.items():
            object.__setattr__(entry, key, value)
        progress = Progress(exercises={"a": entry, "b": _entry("failed")})
        try:
            theirs = json.loads(ProgressFile.model_validate(asdict(progress)).model_dump_json())
        except ValueError:  # pydantic's ValidationError is one
            with pytest.raises(ValueError):
                _dump(progress)
        else:
            assert json.loads(_dump(progress)) == theirs, change
    code = ("import sys; from pathlib import Path; from course.paths import WorkspacePaths; "
            "from course.progress import Entry, ProgressStore; "
            "ProgressStore(WorkspacePaths(Path(sys.argv[1]))).record({'a': Entry('passed', 1, 1, 't', 'h')}); "
            "print('pydantic' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_registry_fields_match_the_schema() -> None:
    """The registry's dataclasses carry exactly the fields its pydantic schemas validate."""
    from course.registry import CourseMeta, ExerciseMeta
    from course.schema import CourseFile, ExerciseFile

    assert {f.name for f in fields(CourseMeta)} == set(CourseFile.model_fields)
    assert {f.name for f in fields(ExerciseMeta)} == set(ExerciseFile.model_fields)


def _record_many(folder: str, prefix: str) -> None:
    """Record 20 entries one at a time (run in a separate process)."""
    store = ProgressStore(WorkspacePaths(Path(folder)))
    for i in range(20):
        store.record({f"{prefix}{i}": _entry()})


def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    """Two processes recording at once keep every update, thanks to the lock."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_record_many, args=(str(tmp_path), p)) for p in ("x", "y")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert all(p.exitcode == 0 for p in procs)
    assert len(ProgressStore(WorkspacePaths(tmp_path)).load().exercises) == 40
