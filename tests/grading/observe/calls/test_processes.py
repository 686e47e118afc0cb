"""`course.grading.observe.calls.processes`: the read log, each process's rows, rows as text, and named steps."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from course.engine.common import peers
from course.grading.observe.calls.processes import RowLog, own_rows, rows_text, step


def test_a_row_log_records_every_call_and_returns_copies() -> None:
    """Each call is kept as made; the rows come back as a copy the caller may change."""
    data = np.arange(20.0).reshape(10, 2)
    log = RowLog(data)
    got = log(2, 4)
    got[:] = -1
    assert np.array_equal(log(np.int64(2), 4), data[2:4])
    assert log.calls == [(2, 4), (np.int64(2), 4)]
    assert log.rows() == [2, 3, 2, 3]  # a row read twice appears twice
    assert log.calls_text() == "read_rows(2, 4), read_rows(2, 4)"


def test_a_row_log_refuses_rows_that_are_not_integers() -> None:
    """`n / p` for `n // p` is refused with the call it got, as an array's slice refuses a float."""
    log = RowLog(np.zeros((6, 1)))
    with pytest.raises(TypeError, match=r"integer row numbers.*read_rows\(1\.5, 3\.0\): use integer division"):
        log(1.5, 3.0)
    assert log.calls == [(1.5, 3.0)]


def test_a_row_log_clips_as_slicing_does_and_says_how_many_calls_it_left_out() -> None:
    """Rows past the end are not invented; a long log names its first calls and counts the rest."""
    log = RowLog(np.zeros((6, 1)))
    assert log(4, 99).shape == (2, 1) and log.rows() == [4, 5]
    for r in range(4):
        log(r, r + 1)
    assert log.calls_text() == "read_rows(4, 99), read_rows(0, 1), read_rows(1, 2) and 2 more"
    assert RowLog(np.zeros((1, 1))).calls_text() == "no call of read_rows"


@pytest.mark.parametrize(("index", "count", "rows"), [(0, 2, range(0, 32)), (1, 2, range(32, 64)),
                                                      (3, 4, range(48, 64))])
def test_own_rows_are_the_contiguous_block(index: int, count: int, rows: range) -> None:
    """Process i of p owns [i·n/p, (i+1)·n/p)."""
    assert own_rows(64, index, count) == rows


def test_own_rows_cover_every_row_when_the_count_does_not_divide_them() -> None:
    """Blocks of 67 rows over 3 processes differ by one row and leave none out."""
    blocks = [own_rows(67, i, 3) for i in range(3)]
    assert blocks == [range(0, 22), range(22, 44), range(44, 67)]


def test_rows_text_writes_ranges() -> None:
    """Runs of rows become ranges; many ranges are counted, not listed."""
    assert rows_text([]) == "none"
    assert rows_text([3, 1, 2, 2]) == "1-3"
    assert rows_text([0, 1, 5, 9, 10]) == "0-1, 5, 9-10"
    assert rows_text(list(range(0, 20, 2))) == "0, 2, 4, 6 and 6 more ranges"


def test_step_tells_the_parent_where_this_process_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside a process that is one of several, `step` writes one step line on the events pipe."""
    read, write = os.pipe()
    monkeypatch.setattr(peers, "_events_fd", write)
    with step("global_mean"):
        pass
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        assert [json.loads(line) for line in pipe] == [{"step": "global_mean"}]


def test_step_is_silent_in_a_single_process() -> None:
    """Without a parent to tell (a grading in one process, or a bare run), `step` does nothing."""
    assert peers._events_fd is None
    with step("anything"):
        pass


def test_a_place_reads_back_what_it_writes() -> None:
    """`I/N@HOST:PORT` both ways; a process index outside 0..N-1 is refused."""
    place = peers.Place(1, 2, "127.0.0.1:4567")
    assert peers.Place.parse(place.to_text()) == place
    with pytest.raises(ValueError, match="not a process place"):
        peers.Place.parse("2/2@127.0.0.1:4567")
