"""SPEC §8: `course watch` latency from saving the file to the verdict, for update_with_donate (goal: under 1.0 s).

Drives the real watch machinery: the watchfiles thread feeding events, the `Watcher`, the warm
worker. The baseline printed beside it is a cold `course check` of the same exercise.
"""

import os
import queue
import statistics
import threading
import time
from pathlib import Path

from _common import COURSE, ROOT, RUNS, grading_env, solved_workspace, timed

from course import session, ui
from course.engine.runner import start_worker
from course.watch import Watcher, _file_events

NAME = "update_with_donate"


def main() -> None:
    """Save the solved file RUNS times and time each save until a new verdict is there."""
    workspace = solved_workspace()
    ui.out.file = open(os.devnull, "w")  # noqa: SIM115 - the screens would bury the figure
    state = session.open_session(ROOT, workspace)
    worker = start_worker(state.cache_dir)
    events: queue.Queue = queue.Queue()
    stop = threading.Event()
    try:
        watcher = Watcher(state, worker=worker)
        watcher.name = NAME
        threading.Thread(target=_file_events, args=(workspace / "exercises", events, stop), daemon=True).start()
        watcher.grade()  # the first verdict, as `course watch` shows on start
        time.sleep(0.5)
        latencies = [_one_save(watcher, events) for _ in range(RUNS)]
        solution = watcher.path.read_text()
        edited = [_one_save(watcher, events, _edited(solution, k)) for k in range(RUNS)]
    finally:
        stop.set()
        worker.close()
    cold = statistics.median(
        timed([*COURSE, "--course", str(ROOT), "check", NAME, "--workspace", str(workspace)], env=grading_env())
        for _ in range(RUNS)
    )
    latency, after_edit = statistics.median(latencies), statistics.median(edited)
    verdict = "meets" if latency < 1.0 else "misses"
    print(
        f"course watch {NAME}, save to verdict: {latency:.3f} s (goal < 1.0 s: {verdict}; median of {RUNS}); "
        f"cold `course check` {cold:.3f} s -> {latency / cold:.2f}x of it"
    )
    print(
        f"  after an edit that changes the compiled program (nothing reusable from the cache): "
        f"{after_edit:.3f} s (median of {RUNS})"
    )


def _edited(solution: str, k: int) -> str:
    """The solution with k+1 exact multiplications by one added: the same values, a new program."""
    return solution.replace("return state + delta", "return (state + delta)" + " * 1.0" * (k + 1), 1)


def _one_save(watcher: Watcher, events: queue.Queue, text: str | None = None) -> float:
    """Write the file (as it is, or `text`) and pump events until the watcher has graded it."""
    path: Path = watcher.path
    graded = watcher.n_graded
    start = time.perf_counter()
    path.write_text(path.read_text() if text is None else text)
    while watcher.n_graded == graded:
        try:
            kind, value, _at = events.get(timeout=0.01)
            if kind == "save":
                watcher.on_save(value)
        except queue.Empty:
            pass
        watcher.tick()
    elapsed = time.perf_counter() - start
    assert watcher.result is not None and watcher.result.passed, watcher.result
    time.sleep(0.3)
    return elapsed


if __name__ == "__main__":
    main()
