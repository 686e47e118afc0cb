"""What `course inspect` observes of a learner's code, section by section, with the graders' own helpers.

Each section is a module here with one function, `observe(calls, module, path) -> list[dict]`:
given the section's example calls (`course.grading.inspect.calls`), the learner's module and the
path of their file, it returns one plain, JSON-ready report per call. `course.engine.child.inspector`
runs a section in the isolated grading process and signs what it returns; `course.ui.inspection`
draws it. A new section is a module here, a name in `SECTIONS`, a name in the schema of
`exercise.toml` and a drawing in the UI (docs/authoring.md, "Choosing what `course inspect` shows").
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

__all__ = ["SECTIONS", "load_observers", "observe_section"]

SECTIONS = {
    "compiles": "what each call compiled, and what changed in the cache key when it compiled again",
    "donation": "which inputs each jitted call donates, what XLA aliases, what the call consumed",
    "kernels": "each pallas_call: grid, blocks, memory spaces, loads, stores and DMAs by line",
    "refs": "the jax.Refs a function is given or makes, and each load, store and freeze",
    "distributed": "the mesh, each input's and output's layout, the collectives of the jaxpr and the HLO",
    "compiler": "the compiled program's temp memory and size, its loops, matmuls (dtypes, work) and saved residuals",
}
"""The sections an exercise may list, each with what it shows."""


def observe_section(spec: dict[str, Any], module: Any, path: Path | None) -> dict[str, Any]:
    """Run one section of an exercise's `inspect` list on the learner's module: its report, ready for JSON."""
    from course.grading.inspect.calls import make_calls

    show = spec["show"]
    if show not in SECTIONS:
        raise ValueError(f"unknown inspect section {show!r}; known: {', '.join(SECTIONS)}")
    observer = importlib.import_module(f"course.grading.inspect.{show}")
    calls = make_calls(list(spec["calls"]), str(spec.get("setup", "")), module)
    reports = observer.observe(calls, module, path)
    for text, report in zip(spec["calls"], reports, strict=True):
        report["call"] = text  # the author's text, also for a call that could not be made
    return {"show": show, "note": spec.get("note", ""), "calls": reports}


def load_observers() -> None:
    """Import every section's module now: loaded before learner code runs, they are part of the
    machinery the grading guard watches (`course.engine.common.guard`), so a patch of one is tampering."""
    for name in SECTIONS:
        importlib.import_module(f"course.grading.inspect.{name}")
