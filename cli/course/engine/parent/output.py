"""What a grading printed: the whole of it, cut to a head and a tail, and each check's own share.

The grading process's standard output and error arrive on one pipe. Between checks the notary
writes a marker that only it and the parent can make (`course.engine.wire.report.output_marker`),
naming the position of the check that starts; what follows it, up to the next marker, is that
check's output. A learner's own text cannot end a check's share early or start another, since
it cannot spell a marker; what it prints is only ever shown as what it printed.
"""

from __future__ import annotations

import contextlib
import re
import threading
from typing import Any

OUTPUT_KEEP = 64 * 1024
OUTPUT_LIMIT = 32 * 1024 * 1024
CHECK_OUTPUT_KEEP = 4 * 1024
"""What is kept of each check's output: its first and last halves of this, with a mark where it was cut."""
_MAX_MARK = 40
"""A marker's index is a few digits; past this many bytes it is not a marker."""


class Kept:
    """The first and last `limit // 2` bytes of a stream, and how many were dropped between."""

    def __init__(self, limit: int) -> None:
        self._half = limit // 2
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        """Keep what fits in the head, then the newest bytes in the tail."""
        self.total += len(data)
        room = self._half - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail = (self._tail + data)[-self._half:]

    def text(self) -> str:
        """What was kept, with a line saying how much was cut from the middle."""
        cut = self.total - len(self._head) - len(self._tail)
        middle = f"\n[... {cut} bytes of output cut ...]\n".encode() if cut > 0 else b""
        return (bytes(self._head) + middle + bytes(self._tail)).decode("utf-8", errors="replace")


class OutputSink:
    """Drain the child's output on a thread: keep the head and tail of all of it and of each check's share."""

    def __init__(self, stream: Any, marker: bytes = b"") -> None:
        self._stream = stream
        self._marker = marker
        self._pattern = re.compile(re.escape(marker) + rb"(\d{1,6})\x1e") if marker else None
        self._all = Kept(2 * OUTPUT_KEEP)
        self._checks: dict[int, Kept] = {}
        self._current = -1  # before the first marker: pytest's start, no check's
        self._pending = b""
        self.total = 0
        self.flooded = False
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        """Read until end of file, never holding more than the kept heads and tails."""
        while chunk := self._stream.read1(65536):
            self.total += len(chunk)
            self._feed(chunk)
            if self.total > OUTPUT_LIMIT:
                self.flooded = True
        self._emit(self._pending)
        self._pending = b""

    def _feed(self, chunk: bytes) -> None:
        """Split `chunk` at markers; hold back a tail that may be the start of one."""
        if self._pattern is None:
            self._emit(chunk)
            return
        data, pos = self._pending + chunk, 0
        for match in self._pattern.finditer(data):
            self._emit(data[pos:match.start()])
            self._current, pos = int(match.group(1)), match.end()
        rest = data[pos:]
        hold = _partial_suffix(rest, self._marker)
        self._emit(rest[: len(rest) - hold])
        self._pending = rest[len(rest) - hold:]

    def _emit(self, data: bytes) -> None:
        """Count `data` as output, and as the current check's."""
        if not data:
            return
        self._all.add(data)
        if self._current >= 0:
            self._checks.setdefault(self._current, Kept(CHECK_OUTPUT_KEEP)).add(data)

    def join(self) -> None:
        """Wait briefly for the reader; an escaped holder of the pipe must not hang us."""
        self._thread.join(timeout=2)
        with contextlib.suppress(Exception):
            if not self._thread.is_alive():
                self._stream.close()

    def text(self) -> str:
        """All the output kept, markers left out."""
        return self._all.text()

    def checks(self) -> dict[int, str]:
        """Each check's output by its position, for the checks that printed anything."""
        return {index: kept.text() for index, kept in self._checks.items()}


def _partial_suffix(data: bytes, marker: bytes) -> int:
    """How many bytes at the end of `data` could begin a marker (its fixed part, then digits)."""
    start = data.rfind(marker[:1], max(0, len(data) - len(marker) - _MAX_MARK))
    if start < 0:
        return 0
    tail = data[start:]
    if marker.startswith(tail) or (tail.startswith(marker) and tail[len(marker):].isdigit()):
        return len(tail)
    return 0
