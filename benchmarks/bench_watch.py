"""SPEC §8: `course watch` from a file save to the full verdict, for update_with_donate (goal: under 1.0 s),
and from the save to "checking" on the screen (goal: within 0.1 s).

Drives the real watch machinery: the watchfiles thread feeding events, the `Watcher`, the warm
worker. Three kinds of save are timed: a re-save of unchanged code, an edit that changes the
compiled program (nothing reusable from the compilation cache), and the stub replaced by the
solution. The baseline printed beside them is a cold `course check` of the same exercise.
"""

import io
import queue
import statistics
import threading
import time
from pathlib import Path

from _common import COURSE, ROOT, RUNS, grading_env, solved_workspace, timed
from rich.console import Console

from course import ui
from course.engine.runner import start_worker
from course.session import Session
from course.watch import Watcher, file_events

NAME = "update_with_donate"


class Screen(io.StringIO):
    """The terminal: remembers when "checking" was first written after each save."""

    def __init__(self) -> None:
        super().__init__()
        self.checking_at: float | None = None

    def write(self, text: str) -> int:
        """Note the moment "checking" appears."""
        if self.checking_at is None and "checking" in text:
            self.checking_at = time.perf_counter()
        return super().write(text)


def main() -> None:
    """Time RUNS saves of each kind and print the medians."""
    workspace = solved_workspace()
    screen = Screen()
    ui.out = Console(file=screen, width=120)
    session = Session.open(ROOT, workspace)
    worker = start_worker(session.paths.cache)
    events: queue.Queue = queue.Queue()
    stop = threading.Event()
    try:
        watcher = Watcher(session, worker=worker)
        watcher.name = NAME
        threading.Thread(target=file_events, args=(workspace / "exercises", events, stop), daemon=True).start()
        solution = watcher.path.read_text()
        stub = session.exercise(NAME).stub_path.read_text()
        watcher.grade()  # the first verdict, as `course watch` shows on start
        time.sleep(0.5)
        resave = [_one_save(watcher, events, screen) for _ in range(RUNS)]
        edited = [_one_save(watcher, events, screen, _edited(solution, k)) for k in range(RUNS)]
        from_stub = []
        for k in range(RUNS):
            _one_save(watcher, events, screen, stub, must_pass=False)
            from_stub.append(_one_save(watcher, events, screen, _edited(solution, RUNS + k)))
    finally:
        stop.set()
        if worker is not None:
            worker.close()
    cold = statistics.median(
        timed([*COURSE, "--course", str(ROOT), "check", NAME, "--workspace", str(workspace)], env=grading_env())
        for _ in range(RUNS)
    )
    for label, samples in (("re-save of unchanged code", resave), ("edit that changes the program", edited),
                           ("stub replaced by a new solution", from_stub)):
        verdict = statistics.median(s[1] for s in samples)
        checking = statistics.median(s[0] for s in samples)
        meets = "meets" if verdict < 1.0 and checking <= 0.1 else "misses"
        print(f"course watch {NAME}, {label}: 'checking' after {checking:.3f} s, full verdict after {verdict:.3f} s "
              f"(goals 0.1 s and 1.0 s: {meets}; median of {RUNS}; cold `course check` {cold:.3f} s)")


def _edited(solution: str, k: int) -> str:
    """The solution with k+1 exact multiplications by one added: the same values, a new program."""
    return solution.replace("return state + delta", "return (state + delta)" + " * 1.0" * (k + 1), 1)


def _one_save(watcher: Watcher, events: queue.Queue, screen: Screen, text: str | None = None,
              must_pass: bool = True) -> tuple[float, float]:
    """Write the file (as it is, or `text`) and pump events until graded; (to "checking", to verdict)."""
    path: Path = watcher.path
    graded = watcher.n_graded
    screen.checking_at = None
    start = time.perf_counter()
    path.write_text(path.read_text() if text is None else text)
    while watcher.n_graded == graded:
        try:
            kind, value, _at = events.get(timeout=0.005)
            if kind == "save":
                watcher.on_save(value)
        except queue.Empty:
            pass
        watcher.tick()
    elapsed = time.perf_counter() - start
    assert watcher.result is not None and (watcher.result.passed or not must_pass), watcher.result
    time.sleep(0.3)
    checking = (screen.checking_at or float("inf")) - start
    return checking, elapsed


if __name__ == "__main__":
    main()
