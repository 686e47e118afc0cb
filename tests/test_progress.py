"""Progress: atomic, locked, signed writes; corrupt files kept; stale and current derived."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from course.progress import Entry, ProgressStore, current, now_iso, status_of


def _entry(status: str = "passed", digest: str = "h1") -> Entry:
    """A sample entry."""
    return Entry(status=status, score=3, max_score=3, last_checked=now_iso(), grader_hash=digest)  # type: ignore[arg-type]


def test_missing_file_is_a_fresh_start(tmp_path: Path) -> None:
    """No progress file means no results and no warning."""
    store = ProgressStore(tmp_path)
    assert store.load().exercises == {} and store.warnings == []


def test_record_and_reload(tmp_path: Path) -> None:
    """Recorded entries come back signed and intact."""
    store = ProgressStore(tmp_path)
    store.record({"a": _entry()})
    loaded = ProgressStore(tmp_path).load()
    assert loaded.exercises["a"].status == "passed" and loaded.exercises["a"].signature
    assert not list((tmp_path / ".course").glob("*.tmp"))


def test_corrupt_file_is_kept_as_bak(tmp_path: Path) -> None:
    """A damaged file is moved to progress.json.bak with a warning; progress starts fresh."""
    store = ProgressStore(tmp_path)
    store.record({"a": _entry()})
    text = store.path.read_text()
    store.path.write_text(text[: len(text) // 2])
    fresh = ProgressStore(tmp_path)
    assert fresh.load().exercises == {}
    assert (tmp_path / ".course" / "progress.json.bak").read_text() == text[: len(text) // 2]
    assert "damaged" in fresh.warnings[0]


def test_hand_edited_entry_is_ignored(tmp_path: Path) -> None:
    """Flipping a failure to a pass by hand breaks its signature: the entry is dropped with a warning."""
    store = ProgressStore(tmp_path)
    store.record({"a": _entry("failed"), "b": _entry()})
    data = json.loads(store.path.read_text())
    data["exercises"]["a"]["status"] = "passed"
    data["exercises"]["c"] = dict(data["exercises"]["b"])
    store.path.write_text(json.dumps(data))
    again = ProgressStore(tmp_path)
    assert sorted(again.load().exercises) == ["b"]
    assert len(again.warnings) == 2 and "edited by hand" in again.warnings[0]


def test_stale_and_current() -> None:
    """A pass against another grader hash is stale; current is the first not passed."""
    from course.progress import Progress

    progress = Progress(exercises={"a": _entry(digest="old"), "b": _entry(digest="h")})
    assert status_of(progress, "a", "new") == "stale"
    assert status_of(progress, "b", "h") == "passed"
    assert status_of(progress, "c", "h") == "not_tried"
    assert current(progress, [("a", "new"), ("b", "h")]) == "a"
    assert current(progress, [("a", "old"), ("b", "h")]) is None


def _record_many(folder: str, prefix: str) -> None:
    """Record 20 entries one at a time (run in a separate process)."""
    store = ProgressStore(Path(folder))
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
    assert len(ProgressStore(tmp_path).load().exercises) == 40
