"""The mutants of a reference solution: every operator applied at every node, duplicates dropped, sampled.

`course.instructor.mutant_operators` holds the course's operators; an exercise adds its own
rewrites, leaves some operators out and names the tiles its task allows in its exercise.toml
(`[mutants]`). Two mutants with the
same syntax tree are one mutant, and one with the solution's own tree is none. When an operator
proposes more than `per_operator` mutants for one exercise, a sample of that many is kept, drawn
with a seed made from the exercise's and the operator's names: the same solution always gives the
same mutants, so an equivalent recorded once stays recorded.
"""

from __future__ import annotations

import ast
import dataclasses
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from course import pyast
from course.errors import RegistryError
from course.instructor.mutant_edits import Mutation, annotate, apply, diff, normal, swap
from course.instructor.mutant_operators import OPERATORS, Operator, tiles_allowed
from course.registry import Exercise

PER_OPERATOR = 6
"""Mutants kept per operator and exercise by default (`--per-operator`): the whole course in under
half an hour on two cores, and every operator still tried on every exercise that it applies to."""

REWRITE = "rewrite"
"""The operator name of an exercise's own `[[mutants.replace]]` rewrites."""


@dataclass(frozen=True)
class Mutant:
    """One mutant of one exercise's solution."""

    exercise: str
    number: int
    operator: str
    label: str
    line: int
    source: str
    diff: str

    @property
    def compiles(self) -> bool:
        """True when the mutant is valid Python."""
        try:
            compile(self.source, f"m{self.number}.py", "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
        return True


def settings(exercise: Exercise) -> dict[str, Any]:
    """The exercise's `[mutants]` table, empty when it has none."""
    return exercise.meta.mutants or {"equivalent": [], "replace": [], "skip": [], "tiles": []}


def operators(exercise: Exercise) -> list[Operator]:
    """The course's operators this exercise does not skip, then its own rewrites."""
    table = settings(exercise)
    unknown = sorted(set(table["skip"]) - set(OPERATORS))
    if unknown:
        raise RegistryError(f"{exercise.meta_path}: field `mutants.skip` names `{unknown[0]}`, which is no operator; "
                            f"the operators are {', '.join(OPERATORS)}.")
    chosen = [op for name, op in OPERATORS.items() if name not in table["skip"]]
    if table.get("tiles"):  # the task names its tiles: try those, not halves and doubles of every constant
        chosen = [dataclasses.replace(op, propose=tiles_allowed(table["tiles"])) if op.name == "tile" else op
                  for op in chosen]
    if table["replace"]:
        chosen.append(rewrites(table["replace"]))
    return chosen


def rewrites(entries: list[dict[str, Any]]) -> Operator:
    """An operator made of an exercise's `[[mutants.replace]]` entries."""
    targets: dict[str, list[str]] = {}
    for entry in entries:
        found = ast.dump(pyast.parse(entry["find"].strip(), mode="eval").body)
        targets.setdefault(found, []).extend(entry["to"])

    def propose(node: ast.AST) -> Iterator[Mutation]:
        """Each alternative, wherever the expression occurs."""
        if isinstance(node, ast.expr):
            for text in targets.get(ast.dump(node), []):
                yield swap(node, text.strip())

    return Operator(REWRITE, "the exercise's own rewrites ([[mutants.replace]] in exercise.toml)", propose)


def make(exercise: Exercise, per_operator: int = PER_OPERATOR) -> list[Mutant]:
    """The mutants of the exercise's reference solution, numbered from 1, in operator then line order."""
    source = exercise.solution_path.read_text(encoding="utf-8")
    tree = annotate(pyast.parse(source))
    nodes = sorted((n for n in ast.walk(tree) if hasattr(n, "lineno")), key=lambda n: (n.lineno, n.col_offset))
    seen = {ast.dump(tree)}
    kept: list[tuple[str, Mutation, str]] = []
    for op in operators(exercise):
        found = []
        for node in nodes:
            for mutation in op.propose(node):
                text = apply(source, mutation)
                key = _key(text)
                if key not in seen:
                    seen.add(key)
                    found.append((op.name, mutation, text))
        kept += _sample(found, per_operator, f"{exercise.name}/{op.name}")
    return [Mutant(exercise.name, k, name, m.label, m.line, text, diff(source, text))
            for k, (name, m, text) in enumerate(kept, start=1)]


def _key(text: str) -> str:
    """What makes two mutants the same: their syntax tree, or their text when they do not parse."""
    try:
        return ast.dump(pyast.parse(text))
    except SyntaxError:
        return text


def _sample(found: list[Any], size: int, seed: str) -> list[Any]:
    """At most `size` of `found`, drawn with a fixed seed, in their original order (0: all of them)."""
    if size <= 0 or len(found) <= size:
        return found
    picked = sorted(random.Random(seed).sample(range(len(found)), size))
    return [found[k] for k in picked]


def equivalent(exercise: Exercise, mutant: Mutant) -> str | None:
    """The reason the exercise records for this mutant being equivalent, or None."""
    for entry in settings(exercise)["equivalent"]:
        if entry["operator"] in ("", mutant.operator) and normal(entry["diff"]) == mutant.diff:
            return entry["reason"]
    return None


def stale(exercise: Exercise, mutants: list[Mutant]) -> list[str]:
    """The recorded equivalents that match none of these mutants (the solution changed, say)."""
    diffs = {m.diff for m in mutants}
    return [normal(e["diff"]) for e in settings(exercise)["equivalent"] if normal(e["diff"]) not in diffs]
