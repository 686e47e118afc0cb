"""Collectives: which ones a compiled program runs, and which ones a jaxpr asks for, how often and where.

The compiled HLO says what the devices really exchange, whoever wrote it: `jnp.mean` on a sharded
array compiles to the same all-reduce as a hand-written `psum`. The jaxpr says who wrote it, with
each collective's mesh axes and, for `ppermute`, its source→destination pairs. A loop with
constant bounds traces to a `scan` whose body holds one copy of its collectives, while the HLO
shows one collective inside a loop, so steps are counted in the jaxpr: each collective times the
length of every enclosing `scan`. Under a `while` or a `cond` the count is unknown.

`hlo_collective_shapes` reads each collective of the HLO with its result's dtype and shape. XLA
combines the all-reduces of many gradients into one tuple-shaped all-reduce, so a tuple result is
split into its elements: one entry per array that really crosses the devices.

`wrong_blocks` reads a ring's result the way its messages explain it: each device's shard cut into
the blocks the ring writes one per step, and for each wrong block whether it holds zeros (nothing
arrived) or the block that belongs elsewhere (written at the wrong owner's place).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.extend as jex
import numpy as np

from course.grading.observe.traces.jaxprs import learner_line, traced, walk_eqns

__all__ = [
    "HLO_COLLECTIVES",
    "BlockFault",
    "Collective",
    "HloCollective",
    "by_call",
    "collectives_in",
    "compiled_hlo",
    "hlo_collective_shapes",
    "hlo_collectives",
    "jaxpr_collectives",
    "live_jaxpr",
    "total_steps",
    "wrong_blocks",
]

HLO_COLLECTIVES = ("all-reduce", "all-gather", "all-to-all", "collective-permute", "reduce-scatter")

# An opcode is preceded by the instruction's shape and followed by its operands: `f32[] all-reduce(%x)`.
# Instruction names (`%all-reduce.1`) and `-done` halves of async pairs do not match.
_HLO_OP = re.compile(r"(?<![\w%.\-])(" + "|".join(HLO_COLLECTIVES) + r")(?:-start)?\(")

# The primitives that move data between devices; `axis_index` and `pvary` do not.
_COMM = frozenset({
    "psum", "psum_invariant", "pmax", "pmin", "ppermute", "psend", "precv", "pbroadcast",
    "all_gather", "all_gather_invariant", "all_gather_reduced", "all_to_all", "ragged_all_to_all",
    "reduce_scatter", "unreduced_psum", "unreduced_reduce_scatter",
})

# Primitives whose name differs from the `jax.lax` function a learner calls.
_LAX_NAMES = {"psum_invariant": "psum", "all_gather_invariant": "all_gather", "reduce_scatter": "psum_scatter"}


def compiled_hlo(fn: Callable[..., Any], *args: Any) -> str:
    """The optimized HLO text of `jax.jit(fn)` compiled for `args` (arrays are not consumed)."""
    return jax.jit(fn).lower(*args).compile().as_text()


def hlo_collectives(hlo: Any) -> Counter[str]:
    """How many of each collective (`all-reduce`, `all-gather`, ...) an HLO text or compiled object holds."""
    text = hlo if isinstance(hlo, str) else hlo.as_text()
    return Counter(m.group(1) for m in _HLO_OP.finditer(text))


@dataclass(frozen=True)
class Collective:
    """One collective equation of a jaxpr, with what it moves and how many times it runs."""

    primitive: str
    """The primitive's name without an async `_start` suffix: `psum`, `ppermute`, `all_gather`, ..."""
    axes: tuple[str, ...]
    perm: tuple[tuple[int, int], ...] | None
    """For `ppermute`: the (source, destination) pairs along the axes."""
    shapes: tuple[tuple[int, ...], ...]
    """The per-device shapes of its operands (inside `shard_map`, the local blocks)."""
    times: int | None
    """The product of the lengths of the enclosing `scan`s, or None under a `while` or `cond`."""
    enclosing: str | None
    """The `while` or `cond` that makes `times` unknown, if any."""
    line: int | None
    dtypes: tuple[str, ...] = ()
    """The dtypes of its operands, as `float32`, in the order of `shapes`."""
    call: int = 0
    """Which `jax.lax` call made it: a pytree given to one call (`ppermute((a, b), ...)`) binds one
    equation per leaf, and those share this number (see `by_call`)."""
    leaves: int = 1
    """How many arrays it moves: more than one for the leaves of one call, merged by `by_call`."""

    @property
    def total_elements(self) -> int | None:
        """Elements moved per device over every run (`elements` times `times`), None when `times` is unknown."""
        return None if self.times is None else self.elements * self.times

    @property
    def lax_name(self) -> str:
        """The `jax.lax` function that makes this primitive, for messages: `psum_invariant` is `psum`."""
        return _LAX_NAMES.get(self.primitive, self.primitive)

    @property
    def elements(self) -> int:
        """Elements moved per device per run: the operands' sizes summed."""
        return sum(math.prod(s) for s in self.shapes)

    def shift(self, size: int) -> int | None:
        """The common `(dst - src) % size` when `perm` moves every position of the axis by one offset."""
        if not self.perm or len(self.perm) != size:
            return None
        offsets = {(dst - src) % size for src, dst in self.perm}
        sources = {src for src, _ in self.perm}
        if len(offsets) != 1 or sources != set(range(size)):
            return None
        return offsets.pop()

    def missing_pairs(self, size: int) -> tuple[int, list[tuple[int, int]]] | None:
        """(offset, the pairs left out) when `perm` moves some positions, not all, by one offset.

        A ring without its wrap-around pair (0→1 ... 6→7, no 7→0) is such a shift: JAX fills a
        device that no pair sends to with zeros, so that device never receives its neighbour's part.
        """
        if not self.perm or len(self.perm) >= size:
            return None
        offsets = {(dst - src) % size for src, dst in self.perm}
        if len(offsets) != 1:
            return None
        offset = offsets.pop()
        sources = {src for src, _ in self.perm}
        return offset, [(i, (i + offset) % size) for i in range(size) if i not in sources]

    def chain_offset(self, size: int) -> int | None:
        """+1 or -1 when `perm` sends every position to its neighbour that way, with or without the wrap pair.

        A pipeline passes activations along a chain, stage s to s + 1; the pair from the last
        stage back to the first is harmless, so it may be there or not. Any other pair, a gap,
        or pairs in both directions give None.
        """
        if not self.perm or size < 2:
            return None
        pairs = set(self.perm)
        for offset in (1, -1):
            chain = {(s, s + offset) for s in range(size) if 0 <= s + offset < size}
            wrap = (size - 1, 0) if offset == 1 else (0, size - 1)
            if chain <= pairs <= chain | {wrap}:
                return offset
        return None


def jaxpr_collectives(jaxpr: Any, *, path: Path | None = None) -> list[Collective]:
    """Every collective in a (closed) jaxpr and its nested jaxprs, in program order (one per equation)."""
    found: list[Collective] = []
    previous: dict[tuple[int, ...], Any] = {}  # the last equation seen at each nesting, by its enclosing ones
    last_of: dict[int, tuple[Any, Collective]] = {}
    for eqn, outer in walk_eqns(jaxpr):
        level = tuple(id(e) for e in outer)
        before, previous[level] = previous.get(level), eqn
        name = eqn.primitive.name.removesuffix("_start")
        if name not in _COMM:
            continue
        times, enclosing = _repeats(outer)
        perm = eqn.params.get("perm")
        line = learner_line(eqn, path)
        joined = last_of.get(id(before)) if before is not None else None
        same_call = joined is not None and _leaf_of_same_call(joined[0], eqn, joined[1].line == line)
        found.append(Collective(
            primitive=name,
            axes=_axes(eqn.params),
            perm=tuple((int(s), int(d)) for s, d in perm) if perm is not None else None,
            shapes=tuple(tuple(getattr(v.aval, "shape", ())) for v in eqn.invars),
            times=times,
            enclosing=enclosing,
            line=line,
            dtypes=tuple(str(getattr(v.aval, "dtype", "")) for v in eqn.invars),
            call=joined[1].call if same_call and joined is not None else len(found),
        ))
        last_of[id(eqn)] = (eqn, found[-1])
    return found


def _leaf_of_same_call(first: Any, second: Any, same_line: bool) -> bool:
    """Whether two adjacent collective equations are two leaves of one `jax.lax` call on a pytree.

    `lax.ppermute((a, b), ...)` maps the primitive over the leaves: equations one after the other,
    with the same parameters, from the same line, neither using what the other made. A loop's
    steps differ in that each one sends what the step before it received.
    """
    if not same_line or first.primitive is not second.primitive or first.params != second.params:
        return False
    made = set(first.outvars)
    return not any(v in made for v in second.invars if not isinstance(v, jex.core.Literal))


def by_call(collectives: Iterable[Collective]) -> list[Collective]:
    """The collectives merged call by call: the leaves of one pytree call become one, moving them all."""
    merged: dict[int, Collective] = {}
    for c in collectives:
        if c.call not in merged:
            merged[c.call] = c
            continue
        first = merged[c.call]
        merged[c.call] = dataclasses.replace(first, shapes=first.shapes + c.shapes, dtypes=first.dtypes + c.dtypes,
                                             leaves=first.leaves + c.leaves)
    return list(merged.values())


def collectives_in(fn: Callable[..., Any], *args: Any, path: Path | None = None) -> list[Collective]:
    """Trace `fn(*args)` with `jax.make_jaxpr` and list its collectives."""
    return jaxpr_collectives(traced(fn, *args), path=path)


def live_jaxpr(closed: Any) -> Any:
    """A closed jaxpr without the equations whose results nothing uses, as XLA drops them when it compiles.

    Unrolled by Python, a ring that shifts after each of its 8 products sends a last chunk that
    nothing reads: the compiled program makes 7 collective-permutes, and so does this jaxpr. In a
    loop that last shift is the carry of the next step and stays, as it does in the loop XLA runs.
    """
    from jax._src.interpreters import partial_eval as pe  # no public dead-code pass

    jaxpr = getattr(closed, "jaxpr", closed)
    live, _ = pe.dce_jaxpr(jaxpr, [True] * len(jaxpr.outvars))
    return jex.core.ClosedJaxpr(live, list(getattr(closed, "consts", [])))


def total_steps(collectives: Iterable[Collective]) -> int | None:
    """How many times the collectives run in all, or None when one of them runs an unknown number of times."""
    total = 0
    for c in collectives:
        if c.times is None:
            return None
        total += c.times
    return total


def _repeats(outer: tuple[Any, ...]) -> tuple[int | None, str | None]:
    """(product of enclosing scan lengths, None), or (None, 'while'/'cond') when a loop count is unknown."""
    times = 1
    for eqn in outer:
        name = eqn.primitive.name
        if name in ("while", "cond"):
            return None, name
        if name == "scan":
            times *= int(eqn.params["length"])
    return times, None


def _axes(params: dict[str, Any]) -> tuple[str, ...]:
    """The mesh axes a collective runs over, as a tuple of names."""
    axes = params.get("axes", params.get("axis_name", ()))
    if not isinstance(axes, tuple | list):
        axes = (axes,)
    return tuple(str(a) for a in axes)


# One collective instruction and its result type: `%all-reduce.5 = (f32[], f32[40]{0}) all-reduce(`.
# An async pair is read at its `-done` half, whose result is the collective's own.
_HLO_TYPED = re.compile(r"^\s*(?:ROOT\s+)?(%?[\w.\-]+)\s*=\s*(.*?)\s(" + "|".join(HLO_COLLECTIVES)
                        + r")(?:-done)?\(", re.MULTILINE)
_HLO_ARRAY = re.compile(r"(\w+)\[([\d,]*)\]")


@dataclass(frozen=True)
class HloCollective:
    """One array a collective of the compiled HLO produces (one element of a tuple-shaped collective)."""

    op: str
    """`all-reduce`, `all-gather`, `reduce-scatter`, `all-to-all` or `collective-permute`."""
    dtype: str
    """The HLO element type: `f32`, `bf16`, `s32`, ..."""
    shape: tuple[int, ...]
    """The per-device shape of the result (an all-gather's gathered shape, a reduce-scatter's piece)."""
    name: str
    """The instruction's name in the HLO, shared by the elements of one tuple: `%all-reduce.5`."""
    index: int | None
    """Which element of a tuple result this is, or None for a collective of one array."""

    @property
    def elements(self) -> int:
        """Elements of this result on each device."""
        return math.prod(self.shape)

    def text(self) -> str:
        """`f32[24,40]`, as the HLO writes the type."""
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


def hlo_collective_shapes(hlo: Any) -> list[HloCollective]:
    """Every collective of an HLO text (or compiled object) with its result type, tuples split into elements."""
    text = hlo if isinstance(hlo, str) else hlo.as_text()
    found = []
    for m in _HLO_TYPED.finditer(text):
        name, types, op = m.group(1), m.group(2), m.group(3)
        arrays = _HLO_ARRAY.findall(types)
        tupled = types.lstrip().startswith("(")
        for i, (dtype, dims) in enumerate(arrays):
            shape = tuple(int(d) for d in dims.split(",") if d)
            found.append(HloCollective(op, dtype, shape, name if name.startswith("%") else f"%{name}",
                                       i if tupled else None))
    return found


@dataclass(frozen=True)
class BlockFault:
    """One block of one device's shard that differs from the block belonging there."""

    device: int
    block: int
    """Which block of the shard, counted along the cut axis."""
    zeros: bool
    """Whether it holds zeros only: nothing arrived there, or nothing was written."""
    holds: int | None
    """The index of another expected block it equals (one written at the wrong place), or None."""


def wrong_blocks(got: jax.Array, expected: Callable[[tuple[Any, ...]], Sequence[Any]], *, axis: int = 0,
                 rtol: float = 1e-5, atol: float = 1e-5) -> list[BlockFault]:
    """Each device's shard cut into as many equal blocks along `axis` as `expected(shard.index)` lists; the wrong ones.

    `expected` gets a shard's index into the whole array and returns the blocks that shard should
    hold, in order (for a collective matmul sharded by columns, chunk r of x times those columns).
    """
    found = []
    for shard in sorted(got.addressable_shards, key=lambda s: s.device.id):
        pieces = [np.asarray(p, np.float64) for p in expected(shard.index)]
        blocks = np.split(np.asarray(shard.data, np.float64), len(pieces), axis=axis)
        for b, block in enumerate(blocks):
            if np.allclose(block, pieces[b], rtol=rtol, atol=atol):
                continue
            holds = next((k for k, p in enumerate(pieces) if k != b and p.shape == block.shape
                          and np.allclose(block, p, rtol=rtol, atol=atol)), None)
            found.append(BlockFault(int(shard.device.id), b, bool(np.allclose(block, 0.0, atol=atol)), holds))
    return found
