"""A real pseudo-terminal for tests: run `course` in it, type keys, wait for what it shows.

Waits are for text, never for time: `expect` returns as soon as the marker is on screen, and
its timeout only bounds a test that would otherwise hang.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

from support import default_sigint

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """`course ARGS` running in a pseudo-terminal of `cols` x `rows`, its screen output kept as text."""

    def __init__(self, args: list[str], *, cwd: Path, env: dict[str, str] | None = None, cols: int = 120,
                 rows: int = 40) -> None:
        self.main, sub = pty.openpty()
        fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "COURSE_NO_PROGRESS")}
        self.proc = subprocess.Popen([sys.executable, "-m", "course", *args], stdin=sub, stdout=sub, stderr=sub,
                                     cwd=cwd, env={**base, "TERM": "xterm", **(env or {})}, start_new_session=True,
                                     preexec_fn=default_sigint)  # noqa: PLW1509 - Ctrl-C as a terminal gives it
        os.close(sub)
        self._raw = b""
        self._lock = threading.Lock()
        self._seen = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        """Keep everything the terminal shows."""
        while True:
            try:
                ready, _, _ = select.select([self.main], [], [], 0.05)
                if ready:
                    chunk = os.read(self.main, 65536)
                    if not chunk:
                        return
                    with self._lock:
                        self._raw += chunk
                elif self.proc.poll() is not None:
                    return
            except OSError:  # the terminal closed with the process
                return

    @property
    def raw(self) -> str:
        """Everything shown so far, escape codes included."""
        with self._lock:
            return self._raw.decode("utf-8", "replace")

    def text(self) -> str:
        """Everything shown so far, without escape codes."""
        return ANSI.sub("", self.raw)

    def expect(self, marker: str, timeout_s: float = 120) -> str:
        """Wait until `marker` appears after the last one waited for; the text up to it."""
        deadline = time.monotonic() + timeout_s
        while True:
            text = self.text()
            found = text.find(marker, self._seen)
            if found >= 0:
                self._seen = found + len(marker)
                return text[:self._seen]
            assert time.monotonic() < deadline, f"{marker!r} never appeared; the screen ended with:\n{text[-2500:]}"
            assert self.proc.poll() is None or self._reader.is_alive(), f"exited before {marker!r}:\n{text[-2500:]}"
            time.sleep(0.01)

    def type(self, keys: str) -> None:
        """Press `keys`."""
        os.write(self.main, keys.encode())

    def close(self) -> None:
        """End the process if it is still there, and the terminal."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._reader.join(timeout=5)
        os.close(self.main)
