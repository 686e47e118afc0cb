"""The mutation operators about devices: what a ppermute sends, where a psum sums, how a PartitionSpec splits.

Each is a proposer as `course.instructor.mutant_operators` describes (a syntax node in, the mutations
it proposes there out); that module registers them in its table, with their summaries.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator

from course.instructor.mutant_edits import Edit, Mutation, adjacent_swaps, call_name, end, short, start, swap


def ppermute(node: ast.AST) -> Iterator[Mutation]:
    """Each (source, destination) pair turned round, or a link of the ring missing."""
    if call_name(node) != "ppermute":
        return
    perm = next((kw.value for kw in node.keywords if kw.arg == "perm"), None)  # type: ignore[attr-defined]
    perm = perm or (node.args[2] if len(node.args) > 2 else None)  # type: ignore[attr-defined]
    if perm is None:
        return
    text = ast.unparse(perm)
    yield swap(perm, f"[(dst, src) for (src, dst) in {text}]", f"ppermute pairs {short(text, 30)} reversed")
    yield swap(perm, f"list({text})[:-1]", f"ppermute pairs {short(text, 30)}: last pair dropped")


def collective(node: ast.AST) -> Iterator[Mutation]:
    """The sum across devices averaged, or not taken at all."""
    name = call_name(node)
    if name in ("psum", "pmean") and node.args:  # type: ignore[attr-defined]
        func = node.func  # type: ignore[attr-defined]
        other = "pmean" if name == "psum" else "psum"
        edit = Edit(start(func), end(func), ast.unparse(func)[: -len(name)] + other)
        yield Mutation(f"{name} -> {other}", (edit,), node.lineno)
        yield swap(node, node.args[0], f"{name}({short(node.args[0], 30)}, ...) removed")  # type: ignore[attr-defined]


def psum_moved(node: ast.AST) -> Iterator[Mutation]:
    """The sum across devices taken at another point of the computation, where it adds other things."""
    if call_name(node) in ("psum", "pmean") and node.args:  # type: ignore[attr-defined]
        yield from _psum_inward(node)  # type: ignore[arg-type]
        yield from _psum_outward(node)  # type: ignore[arg-type]
    if isinstance(node, ast.AugAssign) and call_name(node.value) in ("psum", "pmean") and node.value.args:
        yield from _psum_after_loop(node)


def _psum_of(call: ast.Call, operand: ast.expr) -> ast.Call:
    """The same collective (function, axis, keywords) over another operand."""
    return ast.Call(call.func, [operand, *call.args[1:]], call.keywords)


def _psum_inward(call: ast.Call) -> Iterator[Mutation]:
    """`psum(a @ b)` -> `psum(a) @ b` and `a @ psum(b)`; `psum(f(a))` -> `f(psum(a))`."""
    inner = call.args[0]
    slots = ("left", "right") if isinstance(inner, ast.BinOp) else range(len(inner.args)) if isinstance(
        inner, ast.Call) and call_name(inner) not in ("psum", "pmean") else ()
    for slot in slots:
        moved = copy.deepcopy(inner)
        if isinstance(slot, str):
            setattr(moved, slot, _psum_of(call, getattr(inner, slot)))
        else:
            moved.args[slot] = _psum_of(call, inner.args[slot])  # type: ignore[attr-defined]
        yield swap(call, moved, f"{short(call, 40)} -> {short(moved, 40)} (the psum moved in)")


def _psum_outward(call: ast.Call) -> Iterator[Mutation]:
    """`psum(a) @ b` -> `psum(a @ b)`; `f(psum(a))` -> `psum(f(a))`: the psum taken after the next operation."""
    parent = getattr(call, "parent", None)
    if isinstance(parent, ast.BinOp) or (isinstance(parent, ast.Call) and call in parent.args):
        moved = copy.deepcopy(parent)
        if isinstance(moved, ast.BinOp):
            setattr(moved, "left" if parent.left is call else "right", call.args[0])  # type: ignore[union-attr]
        else:
            moved.args[parent.args.index(call)] = call.args[0]  # type: ignore[union-attr]
        wrapped = _psum_of(call, moved)
        yield swap(parent, wrapped, f"{short(parent, 40)} -> {short(wrapped, 40)} (the psum moved out)")


def _psum_after_loop(node: ast.AugAssign) -> Iterator[Mutation]:
    """`acc += psum(g)` in a loop -> `acc += g`, and `acc = psum(acc)` once after the loop."""
    loop = getattr(node, "parent", None)
    while loop is not None and not isinstance(loop, ast.For | ast.While):
        loop = None if isinstance(loop, ast.FunctionDef | ast.Lambda) else getattr(loop, "parent", None)
    if loop is None:
        return
    call = node.value
    target = ast.unparse(node.target)
    after = f"{' ' * loop.col_offset}{target} = {ast.unparse(_psum_of(call, node.target))}\n"  # type: ignore[arg-type]
    edits = (Edit(start(call), end(call), ast.unparse(call.args[0])),  # type: ignore[attr-defined]
             Edit((loop.end_lineno + 1, 0), (loop.end_lineno + 1, 0), after))  # type: ignore[operator]
    yield Mutation(f"{short(call, 40)} moved out of the loop at line {loop.lineno}", edits, node.lineno)


def spec(node: ast.AST) -> Iterator[Mutation]:
    """`P("x", None)` -> `P(None, None)` and `P(None, "x")`."""
    if call_name(node) not in ("P", "PartitionSpec"):
        return
    args = node.args  # type: ignore[attr-defined]
    for arg in args:
        if not (isinstance(arg, ast.Constant) and arg.value is None) and not isinstance(arg, ast.Starred):
            yield swap(arg, "None", f"P(...): {short(arg, 20)} -> None")
    yield from adjacent_swaps([a for a in args if not isinstance(a, ast.Starred)], "P(...) entries")
