"""The checks of `course validate` that need no grading: files, stray files, lesson, hints, API, docstrings.

Python files are parsed with `ast`, never imported: a stub or a wrong variant may do anything.
"""

from __future__ import annotations

import ast
import copy
import re
from pathlib import Path

from course import pyast, stubs
from course.instructor.scaffold import PLACEHOLDER
from course.registry import Course, Exercise

WRONG_RE = re.compile(r"must fail (test_\w+)")
"""A wrong variant's first docstring line names the check it must fail: `... must fail test_values.`"""

IGNORED = {"__pycache__", ".DS_Store"}
"""Entries that tools leave behind; never stray."""
PLACEHOLDER_RE = re.compile(r"^\s*(TODO|FIXME|XXX)\b")


def static_problems(exercise: Exercise) -> list[str]:
    """Problems found without grading: missing and stray files, lesson, hints, API, wrong docstrings."""
    return [
        *_missing(exercise),
        *_stray(exercise),
        *_lesson_and_hints(exercise),
        *_api_problems(exercise),
        *_wrong_docstrings(exercise),
        *filter(None, [stubs.stale(exercise)]),
    ]


def rel(path: Path, root: Path) -> str:
    """`path` relative to the course root, for messages."""
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _missing(e: Exercise) -> list[str]:
    """Every listed exercise has its stub, lesson, grader and solution."""
    needed = {e.stub_path: "stub", e.lesson_path: "lesson", e.grader_path: "grader", e.solution_path: "solution"}
    return [
        f"{rel(path, e.root)} is missing; every exercise needs its {what} (see docs/authoring.md)."
        for path, what in needed.items()
        if not path.is_file()
    ]


def _entries(folder: Path) -> list[Path]:
    """The entries of `folder` that are not tool droppings; none if it is not a folder."""
    return sorted(p for p in folder.iterdir() if p.name not in IGNORED) if folder.is_dir() else []


def _stray(e: Exercise) -> list[str]:
    """Files in the exercise's folders that nothing uses (data files beside the grader are fine)."""
    keep = {
        e.stub_path.parent: {e.stub_path.name, "README.md", "exercise.toml"},
        e.grader_path.parent: {e.grader_path.name},
        e.solution_path.parent: {e.solution_path.name, "wrong"},
    }
    stray = [
        (path, folder, names)
        for folder, names in keep.items()
        for path in _entries(folder)
        if path.name not in names and not (folder == e.grader_path.parent and path.suffix != ".py")
    ]
    wrong_keep = {"wrong variants (*.py)"}
    stray += [
        (path, e.wrong_dir, wrong_keep)
        for path in _entries(e.wrong_dir)
        if path.name != ".gitkeep" and (path.suffix != ".py" or not path.is_file())
    ]
    return [
        f"{rel(path, e.root)} is stray: {rel(folder, e.root)} holds only {', '.join(sorted(names))}; move or remove it."
        for path, folder, names in stray
    ]


def _lesson_and_hints(e: Exercise) -> list[str]:
    """The README says something real, and every hint is written."""
    problems = []
    lesson = rel(e.lesson_path, e.root)
    text = e.lesson_path.read_text(encoding="utf-8", errors="replace") if e.lesson_path.is_file() else None
    if text is not None and not text.strip():
        problems.append(f"{lesson} is empty; write the lesson and the task there.")
    elif text is not None and PLACEHOLDER in text:
        problems.append(f"{lesson} still holds the placeholder text of `course new`; write the lesson and the task.")
    meta = rel(e.meta_path, e.root)
    if not e.meta.hints:
        problems.append(f"{meta} has no hints; give at least one, from a nudge to nearly the answer.")
    for k, hint in enumerate(e.meta.hints, start=1):
        if not hint.strip():
            problems.append(f"{meta}: hint {k} is empty; write it or remove it.")
        elif PLACEHOLDER in hint or PLACEHOLDER_RE.match(hint):
            problems.append(f"{meta}: hint {k} is a placeholder; write a real hint.")
    return problems


def _parse(path: Path, root: Path) -> ast.Module | str:
    """The module's syntax tree, or a problem sentence when it does not parse."""
    try:
        return pyast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
    except SyntaxError as exc:
        return f"{rel(path, root)} does not parse (line {exc.lineno}: {exc.msg}); fix its syntax."


def _public_api(tree: ast.Module) -> dict[str, str]:
    """Public top-level functions and classes (with their methods), each with its signature."""
    api: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            api[node.name] = _signature(node)
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            api[node.name] = f"class {node.name}"
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and (
                    not item.name.startswith("_") or item.name == "__init__"
                ):
                    api[f"{node.name}.{item.name}"] = _signature(item)
    return api


def _signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """`name(params)` with defaults but without annotations, which stubs and solutions may word differently."""
    args = copy.deepcopy(fn.args)
    for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
        if arg is not None:
            arg.annotation = None
    return f"{fn.name}({ast.unparse(args)})"


def _api_problems(e: Exercise) -> list[str]:
    """Stub and solution parse and define the same public names with the same signatures."""
    if not (e.stub_path.is_file() and e.solution_path.is_file()):
        return []
    trees = _parse(e.stub_path, e.root), _parse(e.solution_path, e.root)
    if isinstance(trees[0], str) or isinstance(trees[1], str):
        return [t for t in trees if isinstance(t, str)]
    stub, sol = _public_api(trees[0]), _public_api(trees[1])
    s_rel, o_rel = rel(e.stub_path, e.root), rel(e.solution_path, e.root)
    problems = []
    for name in sorted(stub.keys() ^ sol.keys()):
        has, lacks = (s_rel, o_rel) if name in stub else (o_rel, s_rel)
        problems.append(f"{has} defines `{name}` but {lacks} does not; stub and solution must define the same names.")
    for name in sorted(stub.keys() & sol.keys()):
        if stub[name] != sol[name]:
            problems.append(f"`{name}` is `{stub[name]}` in {s_rel} but `{sol[name]}` in {o_rel}; make them match.")
    return problems


def wrong_variants(e: Exercise) -> list[Path]:
    """The known-wrong variants of an exercise."""
    return sorted(p for p in e.wrong_dir.glob("*.py") if p.is_file()) if e.wrong_dir.is_dir() else []


def named_check(path: Path) -> str | None:
    """The check id that the first paragraph of a wrong variant's docstring says it must fail."""
    tree = _parse(path, path.parent)
    doc = ast.get_docstring(tree) if isinstance(tree, ast.Module) else None
    match = WRONG_RE.search(" ".join((doc or "").strip().split("\n\n")[0].split()))
    return match.group(1) if match else None


def _wrong_docstrings(e: Exercise) -> list[str]:
    """Each wrong variant parses and names the check it must fail."""
    problems = []
    for path in wrong_variants(e):
        tree = _parse(path, e.root)
        if isinstance(tree, str):
            problems.append(tree)
        elif named_check(path) is None:
            problems.append(
                f"{rel(path, e.root)} does not name the check it must fail; begin it with a docstring "
                "whose first line ends `must fail test_<check>.`"
            )
    return problems


def folder_problems(course: Course) -> list[str]:
    """Folders under exercises/, graders/ and solutions/ that course.toml does not list at that position."""
    listed = {e.folder for e in course.exercises}
    position = {e.name: e.folder for e in course.exercises}
    problems = []
    for top in ("exercises", "graders", "solutions"):
        for path in _entries(course.root / top):
            if path.name in listed or path.relative_to(course.root) == stubs.LOCK:
                continue
            shown = rel(path, course.root)
            name = re.sub(r"^\d+_", "", path.name)
            if not path.is_dir():
                problems.append(f"{shown} is stray: {top}/ holds only exercise folders; move or remove it.")
            elif name in position:
                problems.append(
                    f"{shown} does not match the position of `{name}` in course.toml; "
                    f"rename it to {top}/{position[name]}."
                )
            else:
                problems.append(f"{shown} is not listed in course.toml; add `{name}` to its exercises or remove it.")
    return problems
