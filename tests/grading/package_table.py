"""The name-to-module table of `course.grading`, as its submodules say it should be, and as the package writes it.

`course/grading/__init__.py` holds the table three times over, each for its own reader: `HELPERS`
(the lazy `__getattr__` at run time), `__all__` (`import *`, linters) and the `TYPE_CHECKING`
imports (editors and type checkers). The submodules are the source of truth: each public name of
a submodule's `__all__` belongs in the table, under the module that defines it. Run this file to
print the three blocks for the submodules as they are now:

    python tests/grading/package_table.py
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[2] / "cli" / "course" / "grading"
INIT = PACKAGE / "__init__.py"
WIDTH = 120


# The folders of helpers: `judge` (what the judge concludes with) and `observe` (what the executor watches
# the learner's code do). `inspect` builds `course inspect`'s sections and re-exports nothing here.
HELPER_FOLDERS = ("judge", "observe")


def submodules() -> list[str]:
    """The package's helper modules, dotted below it (`feedback`, `judge.arrays`, `observe.calls.compiles`)."""
    found = [p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")]
    for folder in HELPER_FOLDERS:
        found += [".".join(p.relative_to(PACKAGE).with_suffix("").parts)
                  for p in (PACKAGE / folder).rglob("*.py") if not p.stem.startswith("_")]
    return sorted(found)


def module_path(module: str) -> Path:
    """The file of the helper module `module` (dotted below the package)."""
    return PACKAGE.joinpath(*module.split(".")).with_suffix(".py")


def defined_names(path: Path) -> set[str]:
    """Names a module binds at its top level other than by importing them."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return found


def table_of(listed: Mapping[str, Mapping[str, Any]],
             defined: Mapping[str, set[str]]) -> tuple[dict[str, str], list[str]]:
    """The table (name -> module) and one sentence per problem, from what each module lists in `__all__`
    (name -> object) and what it defines itself. A name two modules define is a problem, never a choice."""
    where: dict[str, list[str]] = {}
    for module in sorted(listed):
        for name in listed[module]:
            where.setdefault(name, []).append(module)
    table: dict[str, str] = {}
    problems: list[str] = []
    for name, modules in sorted(where.items()):
        owners = [m for m in modules if name in defined.get(m, set())]
        objects = {id(listed[m][name]) for m in modules}
        if len(owners) > 1 or len(objects) > 1:
            places = " and ".join(f"course.grading.{m}" for m in modules)
            problems.append(f"`{name}` is defined in both {places}: rename one, since "
                            f"`from course.grading import {name}` can give only one of them.")
        elif name in listed:
            problems.append(f"`{name}` is both a helper and a submodule of course.grading: rename the helper.")
        elif owners or len(modules) == 1:
            table[name] = (owners or modules)[0]
        else:
            problems.append(f"`{name}` is listed by {' and '.join(modules)} but defined in neither: "
                            "list it in the `__all__` of the module that defines it.")
    return table, problems


def expected_table() -> tuple[dict[str, str], list[str]]:
    """The table the submodules call for, importing each of them (and so JAX)."""
    listed: dict[str, dict[str, Any]] = {}
    for name in submodules():
        module = importlib.import_module(f"course.grading.{name}")
        listed[name] = {n: getattr(module, n) for n in getattr(module, "__all__", ())}
    return table_of(listed, {m: defined_names(module_path(m)) for m in listed})


def written_blocks(path: Path = INIT) -> tuple[dict[str, str], list[str], dict[str, str]]:
    """What `__init__.py` writes: `HELPERS`, `__all__` and the `TYPE_CHECKING` imports (name -> module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    helpers: dict[str, str] = {}
    names: list[str] = []
    typed: dict[str, str] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == "HELPERS":
            literal = value.args[0] if isinstance(value, ast.Call) else value
            helpers = ast.literal_eval(literal)
        elif isinstance(target, ast.Name) and target.id == "__all__":
            names = ast.literal_eval(value)
        elif isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom) and imp.module and imp.module.startswith("course.grading."):
                    typed.update({a.asname or a.name: imp.module.removeprefix("course.grading.") for a in imp.names})
    return helpers, names, typed


def _packed(items: Iterable[str], indent: str) -> list[str]:
    """`items` joined by ", " into lines of at most WIDTH characters, each ending in a comma."""
    lines: list[str] = []
    line = ""
    for item in items:
        if line and len(indent) + len(line) + len(item) + 2 > WIDTH:
            lines.append(indent + line.rstrip())
            line = ""
        line += f"{item}, "
    return [*lines, indent + line.rstrip()] if line else lines


def _isort_key(name: str) -> tuple[int, str]:
    """ruff's order inside one import: constants, classes, then the rest."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def render(table: Mapping[str, str]) -> str:
    """The three blocks of `__init__.py` for `table`, grouped by module, each module on lines of its own."""
    by_module: dict[str, list[str]] = {}
    for name, module in table.items():
        by_module.setdefault(module, []).append(name)
    groups = [(m, sorted(by_module[m], key=_isort_key)) for m in sorted(by_module)]
    typed = ["if TYPE_CHECKING:"]
    for module, names in groups:
        one_line = f"    from course.grading.{module} import {', '.join(names)}"
        typed += [one_line] if len(one_line) <= WIDTH else [
            f"    from course.grading.{module} import (", *_packed(names, " " * 8), "    )"]
    entries = [line for m, names in groups for line in _packed((f'"{n}": "{m}"' for n in names), "    ")]
    helpers = ["HELPERS: Mapping[str, str] = MappingProxyType({", *entries, "})"]
    listed = ["__all__ = [", *(line for _, names in groups for line in _packed((f'"{n}"' for n in names), "    ")), "]"]
    return "\n".join([*typed, "", *helpers, "", *listed]) + "\n"


def main() -> int:
    """Print the blocks the submodules call for, or why there is no such table."""
    table, problems = expected_table()
    if problems:
        sys.stderr.write("\n".join(problems) + "\n")
        return 1
    sys.stdout.write(render(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
