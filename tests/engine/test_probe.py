"""The protections probe started early (`probe_soon`, as `course check` does) is the one `available()` answers
from: a caller that comes while it runs waits for it, and the machine is probed once."""

from __future__ import annotations

import subprocess
import threading

import pytest

from course.engine.contain import protections


def test_a_probe_started_early_is_waited_for_not_repeated(monkeypatch: pytest.MonkeyPatch) -> None:
    """`available()` during `probe_soon`'s probe waits for its answer; the probe runs once."""
    started, release, calls = threading.Event(), threading.Event(), []
    real = subprocess.run

    def slow_probe(command: list[str], **options: object) -> subprocess.CompletedProcess[str]:
        """The real probe, held until the test lets it finish."""
        calls.append(command)
        started.set()
        release.wait(30)
        return real(command, **options)  # type: ignore[call-overload, no-any-return]

    known = protections.available()
    monkeypatch.setattr(protections.subprocess, "run", slow_probe)
    monkeypatch.setattr(protections, "_SOON", [])  # as in a fresh process: no probe started yet
    protections._available.cache_clear()
    try:
        protections.probe_soon()
        assert started.wait(30)
        answers: list[protections.Protections] = []
        waiting = threading.Thread(target=lambda: answers.append(protections.available()))
        waiting.start()
        waiting.join(0.2)
        assert waiting.is_alive(), "available() answered before the probe under way had finished"
        release.set()
        waiting.join(30)
        assert answers == [known] and len([c for c in calls if "--probe" in c]) == 1
    finally:
        release.set()
        protections._available.cache_clear()
