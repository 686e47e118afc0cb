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
# calling `course.files` from there would run code learner code can reach (course.engine.common.notary_hook).
WRITERS = {"course.files", "course.engine.common.notary_hook"}


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


# The engine's subpackages, one per side of a process boundary, and which of them each may import. Imports
# run one way: `wire` (what crosses, as data) and `contain` (what holds a grading in) import no side;
# `common` (every grading process, whichever its role) none of the roles; the judge and the executor each
# other never; only `child` (the plugin that picks a grading process's role) imports both; and the parent
# nothing that runs inside a grading process but `common`.
ENGINE = PACKAGE / "engine"
ALLOWED = {
    "wire": set(),
    "contain": {"wire"},
    "common": {"wire", "contain"},
    "judge": {"common", "wire", "contain"},
    "executor": {"common", "wire", "contain"},
    "child": {"judge", "executor", "common", "wire", "contain"},
    "parent": {"common", "wire", "contain"},
}


def _engine_imports(source: str, module: str) -> list[tuple[int, str]]:
    """Every `course.engine` module or package `source` (the module `module`) imports, with its line: at any
    depth (inside functions, under `TYPE_CHECKING`), absolute or relative, and by name through
    `importlib.import_module("...")`."""
    package = module.rsplit(".", 1)[0] if not module.endswith(".__init__") else module.removesuffix(".__init__")
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found.extend((node.lineno, f"{base}.{a.name}") for a in node.names)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return [(line, name) for line, name in found if name.startswith("course.engine.")]


def _side(name: str) -> str | None:
    """The engine subpackage `course.engine.SIDE...` names, or None for the engine package itself."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["course", "engine"] else None


def _layering_offences(module: str, source: str) -> list[str]:
    """Each import of `module` (in `course.engine.SIDE`) that goes against `ALLOWED`, said in words."""
    side = _side(module)
    allowed = ALLOWED.get(side, set()) | {side}
    return [f"{module} (line {line}) imports {name}: {side} may import only {sorted(allowed)}"
            for line, name in _engine_imports(source, module) if _side(name) not in allowed]


def test_every_engine_module_lives_in_a_side() -> None:
    """No module sits flat in `course.engine`; each subpackage is one the rules know, and says (in its
    `__init__` docstring) which process runs it and what crosses its border."""
    flat = [p.name for p in ENGINE.glob("*.py") if p.name != "__init__.py"]
    assert not flat, f"modules outside any side of the engine: {flat}"
    sides = {p.name for p in ENGINE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert sides == set(ALLOWED), f"the engine's subpackages {sorted(sides)} and the rules' {sorted(ALLOWED)} differ"
    for side in sides:
        init = ENGINE / side / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), side


def test_engine_imports_run_one_way() -> None:
    """Every module of `course.engine` imports only the sides `ALLOWED` gives its own."""
    offences = []
    for path in sorted(ENGINE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if _side(module) is None:  # course.engine's own __init__ imports nothing of it
            offences += [f"{module} (line {line}) imports {name}" for line, name in
                         _engine_imports(path.read_text(encoding="utf-8"), module)]
            continue
        offences += _layering_offences(module, path.read_text(encoding="utf-8"))
    assert not offences, "imports against the engine's layering:\n" + "\n".join(offences)


def test_the_layering_check_finds_a_forbidden_import() -> None:
    """An import the rules forbid is found at any depth and in any spelling; an allowed one is not."""
    judge = "course.engine.judge.remote"
    assert _layering_offences(judge, "def f():\n    from course.engine.executor import serve\n")
    assert _layering_offences(judge, "import course.engine.parent.runner\n")
    assert _layering_offences(judge, "from ..executor.serve import Executor\n")
    assert _layering_offences(judge, "import importlib\nimportlib.import_module('course.engine.child.plugin')\n")
    assert _layering_offences("course.engine.wire.wire", "from course.engine.contain import system\n")
    assert not _layering_offences(judge, "from course.engine.wire import wire\nfrom .link import Link\n")
    assert not _layering_offences("course.engine.child.roles", "from course.engine.executor import serve\n")
