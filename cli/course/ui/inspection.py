"""What `course inspect` prints: each section of the observation, in the course's words, with the learner's lines.

Observations arrive as plain data from the grading process (`course.grading.inspect`); each section
has a drawing here, in `DRAW`. Code and jaxprs are printed as they are, never wrapped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text

from course import ui
from course.ui import inspection_compiler as compiler
from course.ui import inspection_kernels as kernels
from course.ui import inspection_sharding as sharding
from course.ui.inspection_kernels import source
from course.ui.inspection_text import fit

if TYPE_CHECKING:
    from course.engine.parent.inspection import Inspection

TITLES = {"compiles": "Compiles", "donation": "Donation", "kernels": "Kernels", "refs": "Refs",
          "distributed": "Distributed", "compiler": "Compiler"}


def inspection(found: Inspection, file_hint: str) -> None:
    """The whole inspection of one exercise, then what to do next."""
    head = Text.assemble((found.name, "bold"), "  ", ("what your code does, as the graders see it", "dim"))
    ui.out.print(head)
    ui.block(f"your file: {ui.shown_path(file_hint)}", indent=2, style="dim")
    if found.status != "inspected":
        ui.line()
        ui.block(found.message, indent=2, style="yellow" if found.not_tried else ui.STYLES.get(found.status, ""))
        if found.status == "error":
            ui.line("Something is wrong with the course itself, not your code; tell your instructor.", style="bold")
        return
    if found.processes > 1:
        ui.line()
        ui.block(f"Graded in {found.processes} processes of {found.devices} devices each, joined into one mesh "
                 f"of {found.processes * found.devices}; inspected here in one process with its {found.devices}, "
                 "so a global array holds this process's rows only, and a collective below runs between this "
                 "process's devices where grading also crosses between the processes.", indent=2, style="yellow")
    for section in found.sections:
        ui.line()
        draw_section(section)
    ui.line()
    if found.exit_code == 3:
        ui.line("Something is wrong with the course itself, not your code; tell your instructor.", style="bold")
    elif found.errors():
        ui.block(f"Your code raised where marked ✗ above; `course check {found.name}` says which rule each breaks.",
                 style="bold")
    else:
        ui.block(f"`course check {found.name}` grades it; `course show {found.name}` has the lesson.", style="dim")


def draw_section(section: dict[str, Any]) -> None:
    """One section: its title and note, then each call as the section draws it."""
    show = section.get("show", "")
    ui.line(TITLES.get(show, show), style="bold underline")
    if section.get("note"):
        ui.block(section["note"], indent=2, style="italic")
    if section.get("error"):
        error(section["error"], indent=2)
        return
    if show == "compiles":
        compiles(section["calls"])
        return
    for call in section.get("calls", []):
        _call_text(call.get("call", ""), indent=2)
        if call.get("error") and show != "donation":
            error(call["error"], indent=4)
            continue
        DRAW.get(show, lambda c: None)(call)


def _call_text(text: str, indent: int, number: str = "") -> None:
    """An example call as the exercise wrote it, folded to the width after a space or a mark."""
    head = " " * indent + number
    for i, piece in enumerate(fit(text, ui.out.width - len(head), hang=4)):
        ui.out.print(Text.assemble(head if i == 0 else " " * len(head), (piece, "bold cyan")), soft_wrap=True)


def error(err: dict[str, Any], indent: int) -> None:
    """A call that raised: whose doing, and the learner's line."""
    where = f", at {err['where']}" if err.get("where") else ""
    if err.get("not_started"):
        ui.block(f"✗ not started: {err['message']}{where}", indent=indent, style="yellow")
    elif err.get("yours", True):
        ui.block(f"✗ your code raised {err['message']}{where}", indent=indent, style="bold red")
    else:
        ui.block(f"! could not be observed: {err['message']}{where}", indent=indent, style="magenta")


def compiles(calls: list[dict[str, Any]]) -> None:
    """One line per call: what it compiled of the learner's code, and why; JAX's own compiles dimmed."""
    total = 0
    for i, call in enumerate(calls, start=1):
        own = [c for c in call.get("compiles", []) if c.get("own", True)]
        theirs = [c["function"] for c in call.get("compiles", []) if not c.get("own", True)]
        total += bool(own)
        _call_text(call.get("call", ""), indent=2, number=f"{i:>2}  ")
        for entry in own:
            ui.block(compile_reason(entry), indent=6, style="yellow")
        if not own:
            ui.block("nothing of yours compiled", indent=6, style="green")
        if theirs:
            ui.block(f"JAX compiled its own helpers for eager operations: {', '.join(theirs)}", indent=6,
                     style="dim")
        if call.get("error"):
            error(call["error"], indent=6)
    ui.block(f"{total} of {len(calls)} calls compiled your code.", indent=2, style="bold")
    lines = {k: v for call in calls for k, v in call.get("source", {}).items()}
    source(lines, indent=2)


def compile_reason(entry: dict[str, Any]) -> str:
    """`compiled jit(f): temperature static value 1.0 → 2.0`, in the words of the lesson."""
    name, why = entry["function"], entry.get("why")
    where = f" (defined at line {entry['defined_line']})" if entry.get("defined_line") else ""
    if why == "new":
        return f"compiled {name}: its first call{where}"
    if why == "rebuilt":
        return (f"compiled {name}: a new function object{where}, so nothing cached could be reused; "
                "build the jit once, at module scope")
    if why == "unjitted kernel":
        return (f"compiled {name}: a pallas_call called outside any jit, which compiles on every call; "
                "call it inside a function jitted once")
    if why == "context":
        return f"compiled {name}: traced under another context (a config or context manager changed)"
    diffs = entry.get("diffs") or []
    if not diffs:
        return f"compiled {name}"
    return f"compiled {name}: " + "; ".join(_diff(d) for d in diffs)


def _diff(d: dict[str, str]) -> str:
    """One part of the cache key that changed, in the lesson's words."""
    at, before, now = f"`{d['at']}`", d["before"], d["now"]
    return {
        "shape": f"{at} has a new shape, {before} → {now}",
        "dtype": f"{at} has a new dtype, {before} → {now}",
        "weak type": f"{at} changed its weak type, {before} → {now} (a Python number is weakly typed, a NumPy "
                     "or JAX scalar is not)",
        "static value": f"{at} is static and has a new value, {before} → {now}",
        "sharding": f"{at} has a new sharding, {before} → {now}",
    }.get(d["what"], f"the arguments changed at {d['at']}: {before} → {now}")


def donation(call: dict[str, Any]) -> None:
    """A call's jitted calls with what each donates and aliases, then what the real call consumed."""
    for jit in call.get("jits", []):
        at = f", called at line {jit['line']}" if jit.get("line") else ""
        written = f" (line {jit['defined_line']})" if jit.get("defined_line") else ""  # a lambda's own line
        ui.block(f"jit {jit['name']}{written}{at}", indent=4, style="bold")
        donated = ", ".join(_origin(s) for s in jit["donated"]) or "nothing"
        warned = f"; JAX warned: {jit['not_usable'][0]}" if jit.get("not_usable") else "; no \"not usable\" warning"
        ui.block(f"donates {donated}; aliases {jit['alias_bytes']} bytes (alias_size_in_bytes){warned}",
                 indent=6, style="green" if jit["alias_bytes"] else "yellow")
    if not call.get("jits") and not call.get("trace_error"):
        ui.block("no jitted call: nothing is compiled, so nothing can be donated", indent=4, style="yellow")
    if call.get("trace_error") and not call.get("error"):
        ui.block(f"(could not trace it for its jitted calls: {call['trace_error']['message']})", indent=4,
                 style="dim")
    after = []
    for arg in call.get("inputs", []):
        gone = arg["consumed"]
        some = f"partly consumed ({len(gone)} of {arg['leaves']} leaves: {', '.join(gone[:4])})"
        after.append(f"{arg['name']} {'consumed' if len(gone) == arg['leaves'] else 'alive' if not gone else some}")
    if after:
        ui.block("after the call: " + "; ".join(after), indent=4)
    for text in call.get("warnings", []):
        ui.block(f"JAX warned: {text}", indent=4, style="yellow")
    if call.get("error"):
        error(call["error"], indent=4)
        if call["error"].get("read_donated"):
            ui.block("it read an array after a call that donated it: a donated buffer is gone", indent=6)
    source(call.get("source", {}), indent=4)


def _origin(src: dict[str, Any]) -> str:
    """`state`, or `a copy of state (made by copy at line 11)`."""
    if src.get("of") is None:
        return "a value computed inside the function"
    if src.get("via"):
        at = f" at line {src['line']}" if src.get("line") else ""
        return f"a copy of {src['of']} (made by {src['via']}{at}), not {src['of']} itself"
    return str(src["of"])


DRAW: dict[str, Callable[[dict[str, Any]], None]] = {
    "donation": donation,
    "kernels": kernels.kernels,
    "refs": kernels.refs,
    "distributed": sharding.distributed,
    "compiler": compiler.compiler,
}
"""How each section draws one call (compiles draws all its calls as one table)."""
