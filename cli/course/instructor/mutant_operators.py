"""The mutation operators of `course validate --mutants`: small rewrites of a reference solution, each a
mistake a learner of this course could make.

An operator is a function from one syntax node to the mutations it proposes there; `OPERATORS` is
the table, in the order reports list them. Each mutation edits the source text at the node's span,
so comments and layout survive and its diff is one or two lines. To add an operator, write a
function taking a node and yielding `Mutation`s, and register it with `@operator(name, summary)`
(docs/authoring.md, "Mutants"); one exercise adds its own rewrites in exercise.toml instead.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from course.instructor import mutant_collectives as collectives
from course.instructor.mutant_edits import (
    Edit,
    Mutation,
    adjacent_swaps,
    atomic,
    between,
    call_name,
    drop_keyword,
    end,
    is_int,
    keywords,
    short,
    start,
    swap,
)

Propose = Callable[[ast.AST], Iterator[Mutation]]


@dataclass(frozen=True)
class Operator:
    """One row of the table: a name for reports and equivalents, a summary, and its proposer."""

    name: str
    summary: str
    propose: Propose


OPERATORS: dict[str, Operator] = {}
"""Every operator, by name, in the order they were registered."""

DTYPES = ("float32", "bfloat16", "float16")


def operator(name: str, summary: str) -> Callable[[Propose], Propose]:
    """Register a proposer under `name` in `OPERATORS`."""

    def register(propose: Propose) -> Propose:
        """Add it to the table and hand it back unchanged."""
        OPERATORS[name] = Operator(name, summary, propose)
        return propose

    return register


def _is_jit(node: ast.AST) -> bool:
    """`jax.jit`, `jit`, or `partial(jax.jit, ...)`: a decorator or callee that compiles."""
    if isinstance(node, ast.Attribute | ast.Name):
        return (node.attr if isinstance(node, ast.Attribute) else node.id) == "jit"
    return call_name(node) == "partial" and bool(node.args) and _is_jit(node.args[0])  # type: ignore[attr-defined]


@operator("donate", "donate_argnums or donate_argnames dropped, or pointed at another argument")
def donate(node: ast.AST) -> Iterator[Mutation]:
    """Drop the donation, or donate the next argument (or one fewer) instead."""
    for call, kw in keywords(node, "donate_argnums", "donate_argnames"):
        yield drop_keyword(call, kw)
        value = kw.value
        if is_int(value):
            yield swap(value, str(value.value + 1))  # type: ignore[attr-defined]
        elif isinstance(value, ast.Tuple | ast.List) and value.elts and all(is_int(e) for e in value.elts):
            numbers = [e.value for e in value.elts]  # type: ignore[attr-defined]
            yield swap(value, repr(tuple(numbers[:-1])) if len(numbers) > 1 else f"({numbers[0] + 1},)")


@operator("jit", "jax.jit removed, or moved inside the call (a new jitted wrapper on every call)")
def jit(node: ast.AST) -> Iterator[Mutation]:
    """A jitted function that is not, or that wraps itself in a fresh jit each call."""
    if isinstance(node, ast.FunctionDef):
        for dec in (d for d in node.decorator_list if _is_jit(d)):
            removed = Edit((dec.lineno, 0), (dec.end_lineno + 1, 0), "")  # type: ignore[operator]
            yield Mutation(f"@{short(dec)} removed", (removed,), dec.lineno)
            yield _jit_inside(node, dec, removed)
    elif call_name(node) == "jit" and node.args:  # type: ignore[attr-defined]
        yield swap(node, node.args[0], f"{short(node)} -> not jitted")  # type: ignore[attr-defined]
    elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and _is_jit(node.value.func):
        wrapped = f"lambda *args, **kwargs: {short(node.value, 10**6)}(*args, **kwargs)"
        yield swap(node.value, wrapped, f"{short(node.value)} -> jitted inside each call")


def _jit_inside(node: ast.FunctionDef, dec: ast.expr, removed: Edit) -> Mutation:
    """`@jit def f` made `def f(*a, **k): return jit(_f_body)(*a, **k)`: a new wrapper on every call."""
    line = node.lineno
    indent = " " * node.col_offset
    body = f"_{node.name}_body"
    rename = Edit((line, node.col_offset), (line, node.col_offset + len(f"def {node.name}")), f"def {body}")
    wrapper = (f"\n\n{indent}def {node.name}(*args, **kwargs):\n"
               f"{indent}    return {short(dec, 10**6)}({body})(*args, **kwargs)\n")
    after = Edit((node.end_lineno + 1, 0), (node.end_lineno + 1, 0), wrapper)  # type: ignore[operator]
    return Mutation(f"@{short(dec)} moved inside each call of {node.name}", (removed, rename, after), line)


@operator("tile", "a power-of-two constant of 8 or more (a tile, a block, a size) halved or doubled, or made "
                  "each other tile the task allows (`[mutants] tiles`)")
def tile(node: ast.AST) -> Iterator[Mutation]:
    """128 -> 64 and 256, and so on."""
    if is_int(node) and node.value >= 8 and node.value & (node.value - 1) == 0:  # type: ignore[attr-defined]
        yield swap(node, str(node.value // 2))  # type: ignore[attr-defined]
        yield swap(node, str(node.value * 2))  # type: ignore[attr-defined]


def tiles_allowed(allowed: list[int]) -> Propose:
    """The tile operator of an exercise whose task names its tiles: each of them made each other one."""

    def propose(node: ast.AST) -> Iterator[Mutation]:
        """A constant that is one of the allowed tiles, made each other allowed tile; any other left alone."""
        if is_int(node) and node.value in allowed:  # type: ignore[attr-defined]
            yield from (swap(node, str(other)) for other in allowed if other != node.value)  # type: ignore[attr-defined]

    return propose


@operator("grid", "two grid axes swapped, or an axis's semantics flipped (parallel <-> arbitrary)")
def grid(node: ast.AST) -> Iterator[Mutation]:
    """`grid=(a, b)` -> `grid=(b, a)`; "parallel" <-> "arbitrary"."""
    for _, kw in keywords(node, "grid"):
        if isinstance(kw.value, ast.Tuple):
            yield from adjacent_swaps(kw.value.elts, "grid axes")
    if isinstance(node, ast.Constant) and node.value in ("parallel", "arbitrary"):
        yield swap(node, '"arbitrary"' if node.value == "parallel" else '"parallel"')
    if isinstance(node, ast.Attribute) and node.attr in ("PARALLEL", "ARBITRARY"):
        yield swap(node, ast.unparse(node)[: -len(node.attr)] + ("ARBITRARY" if node.attr == "PARALLEL" else
                                                                  "PARALLEL"))


@operator("when", "a pl.when condition removed (always runs), or two conditions swapped")
def when(node: ast.AST) -> Iterator[Mutation]:
    """`pl.when(c)` -> `pl.when(True)`; the conditions of two `pl.when` blocks exchanged."""
    if call_name(node) == "when" and node.args:  # type: ignore[attr-defined]
        yield swap(node.args[0], "True", f"pl.when({short(node.args[0])}) -> always")  # type: ignore[attr-defined]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        conditions = [d.args[0] for s in node.body if isinstance(s, ast.FunctionDef)
                      for d in s.decorator_list if call_name(d) == "when" and d.args]  # type: ignore[attr-defined]
        yield from adjacent_swaps(conditions, "pl.when conditions")


@operator("precision", "preferred_element_type dropped, or changed between float32 and bfloat16")
def precision(node: ast.AST) -> Iterator[Mutation]:
    """The accumulator's dtype of a dot: left to the operands, or the other one."""
    for call, kw in keywords(node, "preferred_element_type"):
        yield drop_keyword(call, kw)
        text = ast.unparse(kw.value)
        yield swap(kw.value, text.replace("float32", "bfloat16") if "float32" in text else "jnp.float32")


@operator("dtype", "a dtype changed between float32, bfloat16 and float16")
def dtype(node: ast.AST) -> Iterator[Mutation]:
    """`jnp.float32` -> `jnp.bfloat16` and `jnp.float16`, and so on."""
    if isinstance(node, ast.Attribute) and node.attr in DTYPES and isinstance(node.value, ast.Name):
        for other in DTYPES:
            if other != node.attr:
                yield swap(node, f"{node.value.id}.{other}")


@operator("init", "an initial value changed: -inf to 0 or 1, zeros to ones, ones to zeros")
def init(node: ast.AST) -> Iterator[Mutation]:
    """The start of a running max or sum made wrong."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and _is_inf(node.operand):
        yield swap(node, "0.0")
        yield swap(node, "1.0")
    name = call_name(node)
    for a, b in (("zeros", "ones"), ("ones", "zeros")):
        if name in (a, f"{a}_like"):
            func = node.func  # type: ignore[attr-defined]
            new = name.replace(a, b)
            edit = Edit(start(func), end(func), ast.unparse(func)[: -len(name)] + new)
            yield Mutation(f"{name} -> {new}", (edit,), node.lineno)


def _is_inf(node: ast.AST) -> bool:
    """`jnp.inf`, `np.inf`, `math.inf` or `float("inf")`."""
    if isinstance(node, ast.Attribute):
        return node.attr == "inf"
    return call_name(node) == "float" and ast.unparse(node).lower() in ('float("inf")', "float('inf')")


@operator("index_map", "two coordinates of an index map (a lambda returning a tuple) swapped")
def index_map(node: ast.AST) -> Iterator[Mutation]:
    """`lambda i, j: (i, j)` -> `lambda i, j: (j, i)`."""
    if isinstance(node, ast.Lambda) and isinstance(node.body, ast.Tuple):
        yield from adjacent_swaps(node.body.elts, "index map coordinates")


# The operators about devices live in `mutant_collectives`; they are registered here, in the table's order.
operator("ppermute", "a ppermute's pairs reversed (the other direction), or one pair dropped")(collectives.ppermute)
operator("collective", "a psum made a pmean (or back), or removed")(collectives.collective)
operator("psum_moved", "a psum moved: into an operand (before a matmul or a sum), out to the expression around it, "
                       "or out of a loop")(collectives.psum_moved)
operator("spec", "a PartitionSpec changed: one entry replaced by None, or two swapped")(collectives.spec)


@operator("loop", "a loop bound off by one (range, fori_loop)")
def loop(node: ast.AST) -> Iterator[Mutation]:
    """The last bound of `range(...)` or the upper bound of `fori_loop` one more or one fewer."""
    name = call_name(node)
    args = getattr(node, "args", [])
    bound = args[0] if name == "range" and len(args) == 1 else args[1] if name in ("range", "fori_loop") and len(
        args) > 1 else None
    if bound is not None and not isinstance(bound, ast.Starred):  # `range(*r)` has no bound to move
        text = ast.unparse(bound)
        text = text if atomic(text) else f"({text})"
        yield swap(bound, f"{text} - 1")
        yield swap(bound, f"{text} + 1")


@operator("constant", "any other number changed: n -> n + 1 and n - 1; x -> 2x, and to 0 (or 1 from 0)")
def constant(node: ast.AST) -> Iterator[Mutation]:
    """Numbers that `tile` leaves alone."""
    if not isinstance(node, ast.Constant) or type(node.value) not in (int, float):
        return
    value = node.value
    if type(value) is int and not (value >= 8 and value & (value - 1) == 0):
        yield swap(node, str(value + 1))
        if value > 0:
            yield swap(node, str(value - 1))
    elif type(value) is float:
        yield swap(node, repr(value * 2) if value else "1.0")
        if value:
            yield swap(node, "0.0")


@operator("delete", "a statement inside a function deleted (made `pass`)")
def delete(node: ast.AST) -> Iterator[Mutation]:
    """Forget one line of work: an assignment, an update, a return, a call."""
    skip = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom, ast.Pass)
    if not isinstance(node, ast.stmt) or isinstance(node, skip) or _docstring(node) or not _in_function(node):
        return
    yield Mutation(f"deleted: {short(node)}", (Edit(start(node), end(node), "pass"),), node.lineno)


def _docstring(node: ast.stmt) -> bool:
    """True for a bare string statement."""
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _in_function(node: ast.AST) -> bool:
    """True when some ancestor is a function."""
    parent = getattr(node, "parent", None)
    while parent is not None:
        if isinstance(parent, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return True
        parent = getattr(parent, "parent", None)
    return False


ARITH = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "/"), ast.Div: ("/", "*"),
         ast.FloorDiv: ("//", "/"), ast.Mod: ("%", "//"), ast.Pow: ("**", "*"), ast.MatMult: ("@", "*")}


@operator("arith", "an arithmetic operator swapped (+ -, * /, // /, ...), `x += y` made `x = y`, cdiv made //")
def arith(node: ast.AST) -> Iterator[Mutation]:
    """The usual arithmetic swaps, and the two this course's kernels get wrong most."""
    if isinstance(node, ast.BinOp) and type(node.op) in ARITH:
        old, new = ARITH[type(node.op)]
        yield between(node.left, node.right, old, new, node.lineno, f"{short(node)}: {old} -> {new}")
    if isinstance(node, ast.AugAssign) and type(node.op) in ARITH:
        old, new = ARITH[type(node.op)]
        for repl in (new, ""):
            yield between(node.target, node.value, old + "=", repl + "=", node.lineno,
                          f"{short(node.target)} {old}= -> {repl}=")
    if call_name(node) == "cdiv" and len(node.args) == 2:  # type: ignore[attr-defined]
        a, b = (t if atomic(t) else f"({t})" for t in map(ast.unparse, node.args))  # type: ignore[attr-defined]
        yield swap(node, f"{a} // {b}")


COMPARE = {ast.Eq: ("==", "!="), ast.NotEq: ("!=", "=="), ast.Lt: ("<", "<="), ast.LtE: ("<=", "<"),
           ast.Gt: (">", ">="), ast.GtE: (">=", ">"), ast.Is: ("is", "is not"), ast.IsNot: ("is not", "is"),
           ast.In: ("in", "not in"), ast.NotIn: ("not in", "in")}


@operator("compare", "a comparison negated (== !=) or its boundary moved (< <=, > >=)")
def compare(node: ast.AST) -> Iterator[Mutation]:
    """The usual comparison swaps, on comparisons of two operands."""
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in COMPARE:
        old, new = COMPARE[type(node.ops[0])]
        yield between(node.left, node.comparators[0], old, new, node.lineno, f"{short(node)}: {old} -> {new}")
