"""The Gradescope figures the docs print, written from `benchmarks/gradescope.json` (what `bench_gradescope.py`
measured).

`docs/grading.md` and `benchmarks/README.md` each hold a block between FIGURES and END: the table of the three runs
(wall time, CPU time, score of the course's points, peak memory, checks stopped by the budget), what happened to
each exercise of the looping run, and in the README the goals. Nothing in those blocks is typed by hand, so a
course whose points change (new checks) gets its figures from its next run:

    sudo .venv/bin/python benchmarks/bench_gradescope.py   # measures, writes gradescope.json, then the blocks
    .venv/bin/python benchmarks/gradescope_figures.py      # writes the blocks again from gradescope.json
    .venv/bin/python benchmarks/gradescope_figures.py --check   # exit 1 when a block is not what the json says
"""

from __future__ import annotations

import json
import statistics
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "benchmarks" / "gradescope.json"
DOCS = {ROOT / "docs" / "grading.md": "docs", ROOT / "benchmarks" / "README.md": "readme"}
FIGURES = "<!-- figures: written by benchmarks/gradescope_figures.py from benchmarks/gradescope.json -->"
END = "<!-- end of figures -->"
TIMEOUT_S = 600  # Gradescope's default timeout
WIDTH = 100  # the docs' prose wraps here
KINDS = {"correct": "every reference solution (full, correct)",
         "looping": "an endless loop at the top of every function",
         "first_looping": "the first exercise loops, the rest correct"}


def _points(value: float) -> str:
    return f"{value:g}"


def table(data: dict) -> list[str]:
    """The runs, one row each, in the order they were made."""
    rows = ["| submission | wall time | CPU time | score | peak memory | stopped by the budget |",
            "|---|---|---|---|---|---|"]
    for kind, run in data["runs"].items():
        stopped = run.get("checks_stopped_by_budget", 0)
        said = "nothing" if not stopped else f"{stopped} check{'s' if stopped != 1 else ''}"
        if stopped and stopped == len(run.get("exercises", [])) - _limited(run):
            said += ", one per exercise its own limit did not stop"
        score = f"{_points(run['score'])} of {_points(run['max_score'])}"
        rows.append(f"| {KINDS.get(kind, kind)} | {run['wall_s']:.1f} s | {run.get('cpu_s', '?')} s | {score} | "
                    f"{run.get('peak_mb', '?')} MiB | {said} |")
    return rows


def _limited(run: dict) -> int:
    """How many exercises of a run their own limits stopped."""
    return sum(e.get("stopped") == "limit" for e in run.get("exercises", []))


def _names(exercises: list[dict]) -> str:
    """`a`, `a` and `b`, or `a`, `b` and `c`."""
    names = [f"`{e['name']}`" for e in exercises]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def story(data: dict) -> list[str]:
    """What the runs came to, in words: the time each left before the timeout, what stopped each exercise of the
    looping run, what it kept, and the memory."""
    runs = data["runs"]
    spare = [f"{KINDS.get(k, k).split(' (')[0]} with {(TIMEOUT_S - r['wall_s']) / 60:.1f} minutes to spare"
             for k, r in runs.items() if r["wall_s"] <= TIMEOUT_S]
    late = [KINDS.get(k, k) for k, r in runs.items() if r["wall_s"] > TIMEOUT_S]
    said = [f"Each ended within the default timeout, 10 minutes: {'; '.join(spare)}." if not late else
            f"Past the default timeout of 10 minutes: {'; '.join(late)}; raise the timeout or lower the budget."]
    looping = runs.get("looping", {}).get("exercises", [])
    if looping:
        said.append(_looping(looping, data))
    peak = max((r.get("peak_mb", 0) for r in runs.values()), default=0)
    kills = sum(r.get("oom_kills", 0) for r in runs.values())
    memory = data.get("memory_mb", 768)
    said.append("Nothing was killed for memory" if not kills else f"{kills} process(es) were killed for memory")
    said[-1] += f"; the largest peak, {peak} MiB, leaves {memory - peak} MiB of the {memory} MiB to spare."
    return textwrap.wrap(" ".join(said), WIDTH)


def _looping(exercises: list[dict], data: dict) -> str:
    """What stopped each exercise of the run that loops everywhere, and what it kept."""
    limit = [e for e in exercises if e.get("stopped") == "limit"]
    budget = [e for e in exercises if e.get("stopped") == "budget"]
    parts = []
    if limit:
        times = ", ".join(f"{e['duration_s']:.0f} s" for e in limit)
        parts.append(f"{_names(limit)} stopped at {'its own limit' if len(limit) == 1 else 'their own limits'} "
                     f"({times} of wall-clock time)")
    if budget:
        share = data.get("budget_s", 480) * 0.7 / max(1, len(exercises))
        parts.append(f"{len(budget)} exercise{'s' if len(budget) != 1 else ''} stopped by the budget, after "
                     f"{statistics.median(e['duration_s'] for e in budget):.1f} s each (the median; each is promised "
                     f"at least {share:.1f} s)")
    kept = [e for e in exercises if e.get("score", 0) > 0]
    if kept:
        points = sum(e["score"] for e in kept)
        keeps = (f"{_names(kept)} kept {_points(points)} point{'s' if points != 1 else ''} from the checks that "
                 f"ran before {'its' if len(kept) == 1 else 'their'} loop")
    else:
        keeps = "no exercise kept a point"
    return f"In the looping run, {'; '.join(parts) or 'nothing was stopped'}; {keeps}."


def goals(data: dict) -> list[str]:
    """The README's goals, each met or not by the runs measured."""
    runs, memory = data["runs"], data.get("memory_mb", 768)
    rows = ["| figure | measured | goal |", "|---|---|---|"]
    for kind, words in (("correct", "a full correct submission"), ("looping", "every exercise looping")):
        if kind in runs:
            wall = runs[kind]["wall_s"]
            rows.append(f"| {words}, wall time at 0.5 CPU | {wall:.1f} s | < {TIMEOUT_S} s with room to spare: "
                        f"{'meets' if wall < TIMEOUT_S - 60 else 'does not meet'} |")
    peak = max((r.get("peak_mb", 0) for r in runs.values()), default=0)
    met = "meets" if peak < memory else "does not meet"
    rows.append(f"| peak memory of the container | {peak} MiB | < {memory} MiB: {met} |")
    return rows


def block(data: dict, doc: str) -> str:
    """The figures block of one document."""
    loads = [r["load_average_before"] for r in data["runs"].values() if "load_average_before" in r]
    lines = [FIGURES]
    if doc == "readme":
        where = f" (load average {min(loads):g} to {max(loads):g} before the runs)" if loads else ""
        lines += [f"Measured on {data.get('measured', '?')}{where}, with the course worth "
                  f"{_points(_max_score(data))} points:", ""]
    lines += [*table(data), ""]
    if doc == "readme":
        lines += [*goals(data), ""]
    lines += [*story(data), END]
    return "\n".join(lines)


def _max_score(data: dict) -> float:
    return max((r["max_score"] for r in data["runs"].values()), default=0.0)


def rewritten(text: str, data: dict, doc: str) -> str:
    """`text` with its figures block written from `data`; ValueError when it has no block."""
    start, end = text.find(FIGURES), text.find(END)
    if start < 0 or end < start:
        raise ValueError("no figures block")
    return text[:start] + block(data, doc) + text[end + len(END):]


def main(argv: list[str]) -> int:
    """Write the blocks (or, with `--check`, say which one differs from what the json says, and exit 1)."""
    data = json.loads(MEASURED.read_text(encoding="utf-8"))
    stale = []
    for path, doc in DOCS.items():
        text = path.read_text(encoding="utf-8")
        new = rewritten(text, data, doc)
        if new != text:
            stale.append(path)
            if "--check" not in argv:
                path.write_text(new, encoding="utf-8")
    for path in stale:
        print(f"{'differs' if '--check' in argv else 'written'}: {path.relative_to(ROOT)}")
    return 1 if stale and "--check" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
