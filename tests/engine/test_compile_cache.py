"""The workspace's compilation cache: whole writes and touched hits in a grading, trimmed by the parent."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from course.engine.common import compile_cache
from course.engine.parent.runner import grade
from course.registry import load_course


def _entry(folder: Path, name: str, size: int, used: float) -> Path:
    """A cache entry of `size` bytes last used at `used` (seconds since the epoch)."""
    path = folder / f"jit_f-{name}-cache"
    path.write_bytes(b"x" * size)
    os.utime(path, (used, used))
    return path


@pytest.fixture
def patched(monkeypatch: pytest.MonkeyPatch) -> type:
    """JAX's cache class with `in_grading` applied, put back as it was after the test."""
    from jax._src import lru_cache

    monkeypatch.setattr(lru_cache.LRUCache, "put", lru_cache.LRUCache.put)
    monkeypatch.setattr(lru_cache.LRUCache, "get", lru_cache.LRUCache.get)
    compile_cache.in_grading()
    compile_cache.in_grading()  # twice is once
    return lru_cache.LRUCache


def test_a_grading_writes_each_entry_whole_and_marks_each_hit(patched: type, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry appears at its name by a rename (never half written), an existing one is kept, and a hit
    makes the entry's time now: the trim's measure of use."""
    cache = patched(str(tmp_path), max_size=-1)
    renamed: list[tuple[str, str]] = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (renamed.append((str(a), str(b))), real_replace(a, b))[1])
    cache.put("k1", b"first")
    cache.put("k1", b"second")
    entry = tmp_path / "k1-cache"
    assert entry.read_bytes() == b"first" and len(renamed) == 1 and renamed[0][1] == str(entry)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k1-cache"]
    os.utime(entry, (1e9, 1e9))
    assert cache.get("k1") == b"first" and entry.stat().st_mtime > time.time() - 60
    assert cache.get("missing") is None


def test_jaxs_own_bounded_cache_is_left_as_it_is(patched: type, tmp_path: Path) -> None:
    """A cache JAX bounds itself (eviction on) keeps JAX's behaviour: its access-time files and lock."""
    cache = patched(str(tmp_path), max_size=1 << 20)
    cache.put("k", b"value")
    assert {p.name for p in tmp_path.iterdir()} >= {"k-cache", "k-atime"}


def test_trim_removes_the_least_recently_used_down_to_three_quarters(tmp_path: Path) -> None:
    """Over its size, the oldest-used entries go until three quarters remain; JAX's access-time files and
    temporary files of a killed grading go too; a fresh temporary file (a write in progress) stays."""
    now = time.time()
    sizes = {f"e{i}": 1000 for i in range(10)}
    for i, name in enumerate(sizes):
        _entry(tmp_path, name, sizes[name], now - 1000 + i)  # e0 used longest ago
    (tmp_path / "jit_f-e0-atime").write_bytes(b"12345678")
    stale, fresh = tmp_path / ".jit_f-x-cache.1.tmp", tmp_path / ".jit_f-y-cache.2.tmp"
    stale.write_bytes(b"half")
    os.utime(stale, (now - 2 * compile_cache.STALE_TEMP_S,) * 2)
    fresh.write_bytes(b"half")
    assert compile_cache.trim(tmp_path, max_bytes=8000) == 4
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([fresh.name, *(f"jit_f-e{i}-cache" for i in range(4, 10))])
    assert compile_cache.trim(tmp_path, max_bytes=8000) == 0  # within its size: nothing more goes


def test_a_cache_within_its_size_is_untouched_and_a_missing_one_is_no_error(tmp_path: Path) -> None:
    """Under the bound nothing is removed; a folder that does not exist is simply nothing to trim."""
    _entry(tmp_path, "a", 10, 1e9)
    assert compile_cache.trim(tmp_path, max_bytes=100) == 0 and (tmp_path / "jit_f-a-cache").exists()
    assert compile_cache.trim(tmp_path / "none") == 0


def test_the_first_grading_of_a_command_trims_the_cache_once(mini_course: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A grading with a cache folder trims it before it starts, once per process: a scan per command,
    never one per compile."""
    cache = tmp_path / "xla-cache"
    cache.mkdir()
    for i in range(10):
        _entry(cache, f"old{i}", 1000, 1e9 + i)
    monkeypatch.setattr(compile_cache, "MAX_BYTES", 4000)
    monkeypatch.setattr(compile_cache, "_TRIMMED", set())
    exercise = load_course(mini_course).get("ex_pass")
    assert grade(exercise, exercise.solution_path, seed=1, cache_dir=cache).status == "passed"
    assert len(list(cache.glob("*-cache"))) == 3
    for i in range(10, 20):
        _entry(cache, f"old{i}", 1000, 1e9 + i)
    assert grade(exercise, exercise.solution_path, seed=1, cache_dir=cache).status == "passed"
    assert len(list(cache.glob("*-cache"))) == 13  # trimmed once already in this process
