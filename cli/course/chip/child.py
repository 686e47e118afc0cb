"""The process that runs one learner's file on the chip (`python -m course.chip.child SPEC OUT`), and nothing else.

It is started by `course.chip.stage`, one process per file, so a kernel that halts the chip's
core is that file's failure and never the next one's. It imports the learner's file from the
copy it is given, makes the exercise's calls (`[chip]` in `exercise.toml`, written as `course
inspect`'s calls are), and writes what it found to OUT as JSON after each call, so a process that
dies midway still leaves what it finished. Three modes:
- `check`: each call run on the CPU under the strict TPU interpreter, as grading runs it, and
  compiled on the chip; the two results compared at the dtype's tolerance (`course.chip.agreement`);
- `bench`: each call timed on the chip (`course.chip.timing`) against XLA's op for the same math,
  its values checked after timing, its time set against the chip's roofline and the estimate;
- `estimate`: each call traced on the CPU and estimated for a named TPU generation, no chip needed.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from course.files import write_atomic

__all__ = ["main", "run_calls"]


def main(argv: list[str]) -> int:
    """Run the spec in argv[0], writing to argv[1]; 0 when every call was made, 1 when one failed, 2 for no file."""
    spec = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    out = Path(argv[1])
    report = run_calls(spec, lambda so_far: _write(out, so_far))
    if "error" in report or "no_chip" in report:
        return 2
    return 0 if all(c.get("status") in ("matched", "timed", "estimated") for c in report["calls"]) else 1


def run_calls(spec: dict[str, Any], progress: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Import the file the spec names and make its calls in the spec's mode; `progress` gets the report after each."""
    report: dict[str, Any] = {"mode": spec["mode"], "calls": []}
    try:
        module = _load(Path(spec["file"]))
    except Exception as exc:  # noqa: BLE001 - the learner's file may raise anything at import
        report["error"] = str(exc)
        progress(report)
        return report
    from course.chip import modes

    run = {"check": modes.check_call, "bench": modes.bench_call, "estimate": modes.estimate_call}[spec["mode"]]
    try:
        report.update(modes.platform(spec))
    except Exception as exc:  # noqa: BLE001 - a chip that cannot be opened is the machine's, said in words
        report["no_chip"] = f"{type(exc).__name__}: {str(exc)[:400]}"
        progress(report)
        return report
    progress(report)
    for text in spec["calls"]:
        try:
            found = run(text, module, spec)
        except Exception as exc:  # noqa: BLE001 - whatever the learner's code raised is this call's result
            found = {"call": text, "status": "error", "message": f"{type(exc).__name__}: {str(exc)[:400]}",
                     "trace": traceback.format_exc()[-1200:] if os.environ.get("COURSE_DEBUG") else ""}
        report["calls"].append(found)
        progress(report)
        if found.get("status") == "halted":
            break  # the core is gone for this process: the calls after it cannot run
    return report


def _load(path: Path) -> Any:
    """The learner's module, from the copy the parent made (never their own folder). JAX is imported first: the
    calls are JAX's, and with JAX loaded `load` makes the strict interpreter every kernel's default where there is
    no chip (estimating), as a grading does."""
    import jax  # noqa: F401

    from course.engine.common.submission import SubmissionError, load, read_source

    try:
        return load(path, read_source(path))
    except SubmissionError as exc:
        raise RuntimeError(str(exc)) from None


def _write(out: Path, report: dict[str, Any]) -> None:
    """The report so far, replacing the last one whole."""
    write_atomic(out, json.dumps(report), private=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
