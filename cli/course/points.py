"""A grader's points read statically, from its `@pytest.mark.points(n)` marks, without running it.

`course list` shows the course's total before anything is graded, so the maxima cannot wait for
pytest. The rules are those of the plugin: each `test_*` function (or method of a `Test*`
class) is one check worth its `points` mark, 1 by default; a `parametrize` with a literal list
makes one check per value. A grader whose points depend on anything else cannot be read here,
and `course validate` says so.
"""

from __future__ import annotations

import ast

from course import pyast


def static_points(source: str) -> float | None:
    """The total points of a grader's checks, or None when they cannot be read statically."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return None
    default = _module_default(tree)
    total = 0.0
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            inner = _points_of(node.decorator_list, default)
            for item in node.body:
                if _is_check(item):
                    value = _check_points(item, inner)  # type: ignore[arg-type]
                    if value is None:
                        return None
                    total += value
        elif _is_check(node):
            value = _check_points(node, default)  # type: ignore[arg-type]
            if value is None:
                return None
            total += value
    return total


def static_checks(source: str) -> list[dict[str, object]] | None:
    """The checks of a grader as its manifest lists them (id, title, max_score), in order, without
    running it; None when they cannot all be read statically (a `parametrize`, a mark not literal)."""
    try:
        tree = pyast.parse(source)
    except SyntaxError:
        return None
    default = _module_default(tree)
    found: list[dict[str, object]] = []
    for node in tree.body:
        inner = _points_of(node.decorator_list, default) if isinstance(node, ast.ClassDef) else default
        members = node.body if isinstance(node, ast.ClassDef) and node.name.startswith("Test") else [node]
        for item in members:
            if not _is_check(item):
                continue
            points = _check_points(item, inner)  # type: ignore[arg-type]
            if points is None or _cases(item.decorator_list) != 1:  # type: ignore[attr-defined]
                return None
            doc = (ast.get_docstring(item) or "").strip()  # type: ignore[arg-type]
            title = doc.splitlines()[0].strip() if doc else item.name  # type: ignore[attr-defined]
            found.append({"id": item.name, "title": title, "max_score": points})  # type: ignore[attr-defined]
    return found


def _is_check(node: ast.stmt) -> bool:
    """A function pytest collects as a check."""
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")


def _check_points(node: ast.FunctionDef, default: float | None) -> float | None:
    """One check's points times the number of its parametrized cases."""
    points = _points_of(node.decorator_list, default)
    cases = _cases(node.decorator_list)
    return None if points is None or cases is None else points * cases


def _module_default(tree: ast.Module) -> float | None:
    """Points given to every check by `pytestmark = pytest.mark.points(n)`; 1 without one."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            marks = node.value.elts if isinstance(node.value, ast.List | ast.Tuple) else [node.value]
            return _points_of(marks, 1.0)
    return 1.0


def _points_of(decorators: list[ast.expr], default: float | None) -> float | None:
    """The value of the nearest `points(n)` mark among `decorators`, else `default`."""
    for deco in decorators:
        if isinstance(deco, ast.Call) and _mark_name(deco.func) == "points":
            if len(deco.args) != 1 or not isinstance(deco.args[0], ast.Constant):
                return None
            value = deco.args[0].value
            return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    return default


def _cases(decorators: list[ast.expr]) -> int | None:
    """How many checks the `parametrize` marks make of one function (1 without any)."""
    count = 1
    for deco in decorators:
        if isinstance(deco, ast.Call) and _mark_name(deco.func) == "parametrize":
            values = deco.args[1] if len(deco.args) > 1 else None
            if not isinstance(values, ast.List | ast.Tuple):
                return None
            count *= len(values.elts)
    return count


def _mark_name(func: ast.expr) -> str:
    """`points` for `pytest.mark.points`, `mark.points` or a bare `points`."""
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""
