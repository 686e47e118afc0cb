"""The compiles section: what each call compiled, and when it compiled again, what changed in the cache key.

Compiles are counted as graders count them (`course.grading.observe.calls.compiles`: the backend-compile event
of `jax.monitoring`, the learner's own function names). Why a call compiled comes from JAX itself:
with `jax_explain_cache_misses` on, JAX logs each tracing-cache miss with the closest key it had
seen, argument by argument (`* at t, now i32[] and before f32[]`). Each compile is paired with
the miss of its function during the same call, and the difference is sorted into the parts of
the cache key a lesson names: shape, dtype, weak type, static value, a new function object.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax

from course.grading.inspect.calls import Call, CallError
from course.grading.inspect.report import describe_error, source_lines
from course.grading.observe.calls.compiles import CompileRecorder, matches_name, own_function_names

__all__ = ["Miss", "observe", "parse_miss", "reasons"]

MISS_LOGGER = "jax._src.interpreters.partial_eval"
UNJITTED_KERNEL = "jit(wrapped)"
"""What a `pallas_call` called outside any jit compiles as, again on every call."""
_HEADER = re.compile(r"TRACING CACHE MISS at (?P<site>.+?):(?P<line>\d+) \((?P<caller>[^)]*)\):")
_DEFINED = re.compile(r"(?:for|never seen function:\s+)\s*(?P<name>\S+)(?: id=\d+)?(?: defined at (?P<file>.+?):"
                      r"(?P<line>\d+))?\s*$", re.MULTILINE)
_TYPES = re.compile(r"^\s*\* at (?P<where>.+?), now (?P<now>.+?) and before (?P<before>.+?)$", re.MULTILINE)
_TREE = re.compile(r"^\s*\* at input path (?P<where>.*?), now (?P<now>.+?) and before (?P<before>.+?), so ",
                   re.MULTILINE)
_STATIC = re.compile(r"Static\(val=(?P<val>.*)\)\s*$")
_ARRAY_TYPE = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<shape>[^\]]*)\](?P<rest>.*)$")


@dataclass
class Miss:
    """One tracing-cache miss JAX explained: which function, called from where, and what differed."""

    function: str
    defined_file: str | None
    defined_line: int | None
    call_file: str
    call_line: int
    kind: str  # "new", "types", "tree", "context" or "other"
    diffs: list[dict[str, str]] = field(default_factory=list)
    redefined: bool = False


def parse_miss(text: str) -> Miss | None:
    """A Miss from the text of one `TRACING CACHE MISS` log record, or None if it is not one."""
    head = _HEADER.search(text)
    defined = _DEFINED.search(text)
    if head is None or defined is None:
        return None
    miss = Miss(function=defined["name"], defined_file=defined["file"],
                defined_line=int(defined["line"]) if defined["line"] else None,
                call_file=head["site"], call_line=int(head["line"]), kind="other")
    text = text.split("https://docs.jax.dev")[0]  # JAX appends a link to its weak-type notes
    if "never seen function" in text:
        miss.kind, miss.redefined = "new", "re-defined repeatedly" in text
    elif "different input types" in text:
        miss.kind = "types"
        miss.diffs = [_type_diff(m["where"], m["now"], m["before"]) for m in _TYPES.finditer(text)]
    elif "different input pytree" in text:
        miss.kind = "tree"
        miss.diffs = [_tree_diff(m["where"], m["now"], m["before"]) for m in _TREE.finditer(text)]
    elif "Tracing context" in text:
        miss.kind = "context"
    return miss


def _type_diff(where: str, now: str, before: str) -> dict[str, str]:
    """What differs between two argument types as JAX prints them (`f32[16,64]{weak_type=True}`)."""
    a, b = _ARRAY_TYPE.match(now.strip()), _ARRAY_TYPE.match(before.strip())
    what = "type"
    if a and b:
        if a["shape"] != b["shape"]:
            what = "shape"
        elif a["dtype"] != b["dtype"]:
            what = "dtype"
        elif "weak_type" in a["rest"] + b["rest"]:
            what = "weak type"
        elif a["rest"] != b["rest"]:
            what = "sharding"
    return {"what": what, "at": where.strip(), "now": now.strip(), "before": before.strip()}


def _tree_diff(where: str, now: str, before: str) -> dict[str, str]:
    """A static argument's new value, or another change of the arguments' structure."""
    a, b = _STATIC.search(now), _STATIC.search(before)
    if a and b:
        return {"what": "static value", "at": _static_name(where), "now": a["val"], "before": b["val"]}
    return {"what": "structure", "at": where.strip() or "the arguments", "now": now.strip(), "before": before.strip()}


def _static_name(where: str) -> str:
    """`temperature` from the input path `[1]['temperature']`, else the path as JAX wrote it."""
    keys = re.findall(r"\['([^']+)'\]", where)
    return keys[-1] if keys else where.strip()


def observe(calls: list[Call | CallError], module: Any, path: Path | None) -> list[dict[str, Any]]:
    """Make the calls in order; for each, what compiled and why.

    Compiles of the learner's own functions are `own`; the others were made while their code ran
    (JAX's helpers for eager operations such as `jnp.pad`, a `pallas_call` made outside any jit).
    """
    names = own_function_names(module)
    seen_new: set[tuple[str | None, int | None]] = set()
    out = []
    for call in calls:
        if isinstance(call, CallError):
            out.append({"call": "", "error": describe_error(call, path)})
            continue
        with _misses() as misses, CompileRecorder(names, path=str(path) if path else None) as rec:
            try:
                jax.block_until_ready(call.run())
                error = None
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - reported with the compiles so far
                error = describe_error(exc, path)
        mine = [m for m in misses if _is_learners(m, names, path)]
        found = reasons(rec.fun_names(), mine, seen_new)
        for entry in found:
            entry["own"] = matches_name(entry["function"], frozenset(names)) or entry["function"] == UNJITTED_KERNEL
            if entry["function"] == UNJITTED_KERNEL:
                entry["why"] = "unjitted kernel"
        report: dict[str, Any] = {"call": call.text, "compiles": found}
        report["source"] = source_lines(path, {c["defined_line"] for c in found if c.get("defined_line")})
        if error:
            report["error"] = error
        out.append(report)
    return out


def reasons(fun_names: list[str], misses: list[Miss], seen_new: set[tuple[str | None, int | None]]) -> list[dict]:
    """Each compile of one call with the miss that explains it (same function name, in order).

    `seen_new` remembers the functions first seen earlier in the section: seeing one again as
    "never seen" means a new function object, which is a jit built again on every call.
    """
    pending = list(misses)
    found = []
    for name in fun_names:
        bare = name[4:-1] if name.startswith("jit(") and name.endswith(")") else name
        miss = next((m for m in pending if m.function == bare), None)
        entry: dict[str, Any] = {"function": name, "why": "unexplained", "diffs": [], "defined_line": None}
        if miss is not None:
            pending.remove(miss)
            entry.update(why=miss.kind, diffs=miss.diffs, defined_line=miss.defined_line)
            key = (miss.defined_file, miss.defined_line)
            if miss.kind == "new":
                if key in seen_new or miss.redefined:
                    entry["why"] = "rebuilt"
                seen_new.add(key)
        found.append(entry)
    return found


def _is_learners(miss: Miss, names: set[str], path: Path | None) -> bool:
    """A miss of a function of the learner's file, or of one their jits wrap."""
    return (path is not None and miss.defined_file == str(path)) or miss.function in names


@contextlib.contextmanager
def _misses() -> Iterator[list[Miss]]:
    """Collect JAX's explained tracing-cache misses in the block (and keep them off the output)."""
    found: list[Miss] = []

    class Collect(logging.Handler):
        """Keeps each record that is an explained miss."""

        def emit(self, record: logging.LogRecord) -> None:
            """Parse one record."""
            miss = parse_miss(record.getMessage())
            if miss is not None:
                found.append(miss)

    logger = logging.getLogger(MISS_LOGGER)
    handler, propagate = Collect(level=logging.WARNING), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    was = jax.config.jax_explain_cache_misses
    jax.config.update("jax_explain_cache_misses", True)
    try:
        yield found
    finally:
        jax.config.update("jax_explain_cache_misses", was)
        logger.removeHandler(handler)
        logger.propagate = propagate
