"""The edits of a mutant: spans of a source replaced, and the helpers operators build them with.

Positions are those of `ast` (1-based lines, 0-based UTF-8 byte columns), so edits apply to the
source's bytes; the rest of the file, comments and layout included, is left as it was.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator
from dataclasses import dataclass

from course import pyast

Point = tuple[int, int]
"""A place in the source: 1-based line, 0-based byte column (as `ast` counts them)."""


@dataclass(frozen=True)
class Edit:
    """The source between two points replaced by `text` (or only the first `token` there, when given)."""

    start: Point
    end: Point
    text: str
    token: str = ""


@dataclass(frozen=True)
class Mutation:
    """One proposed mutant: its edits (applied together) and a short label of what changed."""

    label: str
    edits: tuple[Edit, ...]
    line: int


COMPOUND = (ast.BinOp, ast.BoolOp, ast.Compare, ast.UnaryOp, ast.IfExp, ast.Lambda, ast.NamedExpr)
BINDS_TIGHTER = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Attribute, ast.Subscript, ast.Await)


def annotate(tree: ast.AST) -> ast.AST:
    """Give every node a `parent` attribute, which some operators need."""
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            child.parent = node  # type: ignore[attr-defined]
    return tree


def short(node: ast.AST | str, limit: int = 50) -> str:
    """A node's source on one line, cut to `limit` characters."""
    text = node if isinstance(node, str) else ast.unparse(node)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def start(node: ast.AST) -> Point:
    """Where a node begins."""
    return node.lineno, node.col_offset  # type: ignore[attr-defined]


def end(node: ast.AST) -> Point:
    """Where a node ends."""
    return node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]


def swap(node: ast.AST, new: ast.AST | str, label: str | None = None) -> Mutation:
    """A mutation replacing one expression, in brackets where the new one could bind differently."""
    text = new if isinstance(new, str) else ast.unparse(new)
    compound = isinstance(new, COMPOUND) or (isinstance(new, str) and not atomic(text))
    if compound and isinstance(getattr(node, "parent", None), BINDS_TIGHTER):
        text = f"({text})"
    return Mutation(label or f"{short(node)} -> {short(text)}", (Edit(start(node), end(node), text),), node.lineno)


def atomic(text: str) -> bool:
    """True when `text` parses as one name, call, attribute, subscript or literal."""
    try:
        expr = pyast.parse(text, mode="eval").body
    except SyntaxError:
        return False
    return not isinstance(expr, COMPOUND)


def between(left: ast.AST, right: ast.AST, old: str, new: str, line: int, label: str) -> Mutation:
    """A mutation replacing the token `old` between two nodes (an operator) with `new`."""
    return Mutation(label, (Edit(end(left), start(right), new, token=old),), line)


def call_name(node: ast.AST) -> str:
    """The last name of a call's function (`lax.psum(...)` -> `psum`); empty for anything else."""
    if not isinstance(node, ast.Call):
        return ""
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def drop_keyword(call: ast.Call, kw: ast.keyword) -> Mutation:
    """A mutation removing one keyword argument of a call, with its comma."""
    parts = sorted([*call.args, *call.keywords], key=start)
    at = parts.index(kw)
    if at > 0:
        edit = Edit(end(parts[at - 1]), end(kw), "")
    elif len(parts) > 1:
        edit = Edit(start(kw), start(parts[1]), "")
    else:
        edit = Edit(start(kw), end(kw), "")
    return Mutation(f"{kw.arg}= dropped", (edit,), kw.lineno)


def keywords(node: ast.AST, *names: str) -> Iterator[tuple[ast.Call, ast.keyword]]:
    """The keywords named `names` of a call node."""
    if isinstance(node, ast.Call):
        yield from ((node, kw) for kw in node.keywords if kw.arg in names)


def is_int(node: ast.AST) -> bool:
    """True for an int literal (not a bool)."""
    return isinstance(node, ast.Constant) and type(node.value) is int


def adjacent_swaps(elts: list[ast.expr], what: str) -> Iterator[Mutation]:
    """Each pair of neighbours exchanged."""
    for a, b in zip(elts, elts[1:], strict=False):
        edits = (Edit(start(a), end(a), ast.unparse(b)), Edit(start(b), end(b), ast.unparse(a)))
        yield Mutation(f"{what} {short(a, 20)} and {short(b, 20)} swapped", edits, a.lineno)


def apply(source: str, mutation: Mutation) -> str:
    """The source with the mutation's edits made (edits must not overlap)."""
    data = source.encode()
    starts = [0]
    for line in data.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(point: Point) -> int:
        """A point as a byte offset; past the last line is the end."""
        line, col = point
        return starts[line - 1] + col if line <= len(starts) - 1 else len(data)

    for edit in sorted(mutation.edits, key=lambda e: e.start, reverse=True):
        a, b = offset(edit.start), offset(edit.end)
        text = edit.text.encode()
        if edit.token:
            text = data[a:b].replace(edit.token.encode(), text, 1)
        data = data[:a] + text + data[b:]
    return data.decode()


def diff(before: str, after: str) -> str:
    """The changed lines, `- old` and `+ new`, each stripped: what equivalents are matched by."""
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), n=0, lineterm="")
    kept = [f"{line[0]} {line[1:].strip()}" for line in lines
            if line[:1] in "-+" and not line.startswith(("---", "+++")) and line[1:].strip()]
    return "\n".join(kept)


def normal(text: str) -> str:
    """A diff written by hand (in exercise.toml) in the form `diff` gives: lines stripped, blanks gone."""
    lines = (line.strip() for line in text.strip().splitlines())
    return "\n".join(f"{line[0]} {line[1:].strip()}" for line in lines if line and line[0] in "-+")
