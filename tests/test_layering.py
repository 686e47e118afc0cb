"""The package's shape: no import cycles, a session that never renders, durable writes in one place."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "cli" / "course"


def _module_name(path: Path) -> str:
    """`course.engine.parent.runner` for cli/course/engine/parent/runner.py, `course.ui` for its __init__.py."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _runtime_imports(path: Path) -> set[str]:
    """The `course` modules `path` imports at run time, lazily or not (`TYPE_CHECKING` blocks excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for n in ast.walk(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                         for a in node.names)
    return {name for name in found if name in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle's members (strongly connected components larger than one node, or self-loops)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                members.append(member)
                if member == node:
                    break
            if len(members) > 1 or node in graph[node]:
                found.append(sorted(members))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_another_that_imports_it() -> None:
    """No two modules import each other, directly or in a loop."""
    graph = {name: _runtime_imports(path) - {name} for name, path in MODULES.items()}
    assert graph["course.cli"] and "course.cli" in graph["course.entry"], "the graph should see real imports"
    assert not _cycles(graph)


def test_the_cycle_finder_finds_cycles() -> None:
    """A loop of three modules and a pair are both reported; a chain is not."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(_cycles(graph)) == [["a", "b", "c"], ["d", "e"]]


def test_session_and_engine_never_render() -> None:
    """The session and the engine return results; only `course.ui` (and the commands) touch the terminal."""
    for name, path in MODULES.items():
        if name == "course.session" or name.startswith("course.engine"):
            imports = _runtime_imports(path)
            assert not any(i == "course.ui" or i.startswith("course.ui.") for i in imports), name
            assert "rich" not in path.read_text(encoding="utf-8"), name


# The notary writes the signed report itself, with C functions bound before learner code runs:
# calling `course.files` from there would run code learner code can reach (course.engine.common.notary).
WRITERS = {"course.files", "course.engine.common.notary"}


def test_the_judges_helpers_need_nothing_that_watches_the_learners_code() -> None:
    """`course.grading.judge` (what the judge concludes with) imports nothing of `course.grading.observe`
    (what the executor watches), nor the engine: the seam of a split grading is the package's own."""
    judged = {name: path for name, path in MODULES.items() if name.startswith("course.grading.judge")}
    assert len(judged) > 5, "the judge's helpers should be found"
    for name, path in judged.items():
        # An import by name (`importlib.import_module("course.engine...")`) counts too.
        named = re.findall(r"[\"'](course\.(?:grading\.observe|engine)[\w.]*)", path.read_text(encoding="utf-8"))
        imports = _runtime_imports(path) | set(named)
        assert not [i for i in imports if i.startswith(("course.grading.observe", "course.engine"))], name


def test_durable_writes_live_in_one_module() -> None:
    """Only `course.files` (and the notary, for its own reasons) renames over a file, makes temporary
    files or flushes them to disk."""
    pattern = re.compile(r"os\.replace|mkstemp|os\.fsync|O_EXCL")
    offenders = [name for name, path in MODULES.items()
                 if name not in WRITERS and pattern.search(path.read_text(encoding="utf-8"))]
    assert not offenders


def test_the_state_folder_is_named_once() -> None:
    """`.course` appears in code only in `course.paths` (docstrings and messages may mention it)."""
    offenders = []
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef) and ast.get_docstring(n)}
        literals = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value == ".course"]
        if name != "course.paths" and [n for n in literals if id(n) not in docstrings]:
            offenders.append(name)
    assert not offenders
