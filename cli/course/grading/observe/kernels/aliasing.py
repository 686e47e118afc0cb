"""Aliasing: run a kernel with aliased buffers truly shared, and find reads that follow overlapping writes.

`interpret=True` copies every input, so a kernel that reads an aliased input after writing its
output looks correct there. `run_aliased` calls the kernel function itself on `jax.new_ref` refs,
passing one and the same ref for an aliased input and its output, which is what the alias allows
the hardware to do. `reads_after_writes` explains a wrong value: it walks the kernel jaxpr in
program order and reports a read of an aliased input whose region overlaps an earlier write.
Inside a `fori_loop` an index is known only at run time, so `first_hazard` traces the kernel with
its static-bound loops unrolled: each step's rows are then static, and a read in a second loop of
rows that the first loop wrote is found, with both lines.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from course.grading.observe.calls.patching import replaced
from course.grading.observe.kernels.kernels import Access, KernelCall

__all__ = ["Hazard", "first_hazard", "first_read_after_write", "hazard_message", "overlaps", "reads_after_writes",
           "run_aliased", "unrolled_loops"]

# Loops longer than this keep their loop: the explanation would cost more than it tells.
LOOP_LIMIT = 256


def run_aliased(kernel: Callable[..., Any], *inputs: Any, out_shape: Any,
                input_output_aliases: dict[int, int], grid: tuple[int, ...] = (),
                in_specs: Sequence[Any] | None = None, out_specs: Any = None) -> Any:
    """Run `kernel` on refs, each aliased input and its output being ONE ref; return the output(s).

    `out_shape` is a `jax.ShapeDtypeStruct` or a list of them, as for `pallas_call`. With a
    `grid`, `in_specs`/`out_specs` are `pl.BlockSpec`s (or None for the whole array) and the
    steps run in order, with `pl.program_id` answering the current step (looked up on the `pl`
    module, so a kernel must call it as `pl.program_id`). Outputs that alias no
    input start as NaN (or the smallest integer), so an unwritten element shows.
    """
    single = not isinstance(out_shape, (list, tuple))
    remote = getattr(kernel, "aliased", None)
    if remote is not None:  # the learner's kernel seen from the judge: run there, on refs made there
        if grid or in_specs is not None or out_specs is not None or not single:
            raise ValueError("in a judge check, run_aliased takes one output and no grid")
        return remote(*inputs, out_shape=out_shape, aliases=input_output_aliases)
    outs = [out_shape] if single else list(out_shape)
    n_in = len(inputs)
    ins = list(in_specs) if in_specs is not None else [None] * n_in
    osp = ([out_specs] if single else list(out_specs)) if out_specs is not None else [None] * len(outs)
    alias_of = {o: i for i, o in input_output_aliases.items()}

    def body(*arrays: Any) -> list[Any]:
        in_refs = [jax.new_ref(a) for a in arrays]
        out_refs = [in_refs[alias_of[j]] if j in alias_of else jax.new_ref(_unwritten(s))
                    for j, s in enumerate(outs)]
        for point in itertools.product(*(range(g) for g in grid)):
            with _program_ids(point, grid):
                views = [_block(r, s, point) for r, s in zip(in_refs + out_refs, ins + osp, strict=True)]
                kernel(*views)
        # Freeze each ref once: an output that aliases an input is that input's ref.
        return [jax.freeze(r) for r in out_refs]

    results = jax.jit(body)(*inputs)
    return results[0] if single else tuple(results)


@dataclass(frozen=True)
class Hazard:
    """A read of an aliased ref that follows a write of an overlapping part of its partner."""

    read: Access
    write: Access
    input_index: int
    output_index: int

    def message(self) -> str:
        """The hazard in the course's words, with both of the learner's lines."""
        where_read = f"line {self.read.line}" if self.read.line else "the kernel"
        where_write = f"line {self.write.line}" if self.write.line else "an earlier line"
        aliases = f"{{{self.input_index}: {self.output_index}}}"
        return (f"{where_read} reads `{self.read.text()}` after {where_write} wrote "
                f"`{self.write.text()}`; with `input_output_aliases={aliases}` they are one buffer, "
                "so it read what it had just written. Read what you need before writing over it.")


def reads_after_writes(call: KernelCall) -> list[Hazard]:
    """Every read of an aliased ref whose region overlaps an earlier write of its partner."""
    found: list[Hazard] = []
    accesses = call.accesses()
    for i, j in call.input_output_aliases.items():
        pair = {i: call.output_arg(j), call.output_arg(j): i}
        writes: dict[int, list[Access]] = {i: [], call.output_arg(j): []}
        for access in accesses:
            if access.arg not in pair:
                continue
            if access.kind in ("load", "update"):
                hit = next((w for w in writes[pair[access.arg]] if overlaps(w, access)), None)
                if hit is not None:
                    found.append(Hazard(read=access, write=hit, input_index=i, output_index=j))
            if access.kind in ("store", "update"):
                writes[access.arg].append(access)
    return sorted(found, key=lambda h: h.read.order)


def first_read_after_write(call: KernelCall) -> Hazard | None:
    """The first hazard in program order, or None when every aliased read comes before its write."""
    hazards = reads_after_writes(call)
    return hazards[0] if hazards else None


def first_hazard(kernel: Callable[..., Any], *inputs: Any, out_shape: Any, input_output_aliases: dict[int, int],
                 path: Any = None, namespaces: Sequence[dict[str, Any]] = ()) -> Hazard | None:
    """The first read after an overlapping write in `kernel`, its loops unrolled where their bounds are static.

    `namespaces` are where the learner may have imported `fori_loop` by name (`vars(submission)`).
    A kernel that cannot be traced unrolled is looked at with its loops as they are.
    """
    from course.grading.observe.kernels.kernels import kernel_call

    def hazard() -> Hazard | None:
        """The first hazard of the kernel as traced now."""
        call = kernel_call(kernel, *inputs, out_shape=out_shape, input_output_aliases=input_output_aliases,
                           path=path)
        return first_read_after_write(call)

    try:
        with unrolled_loops(*namespaces):
            found = hazard()
    except Exception:  # noqa: BLE001 - a body that needs a traced index: fall back to the loop itself
        found = None
    return found if found is not None else hazard()


def hazard_message(kernel: Callable[..., Any], *inputs: Any, out_shape: Any, input_output_aliases: dict[int, int],
                   path: Any = None, namespaces: Sequence[dict[str, Any]] = ()) -> str | None:
    """The words of `first_hazard`, worked out where the kernel runs (in a judge check, the executor, which
    words its own trace of the kernel: an explanation for a message, never a verdict); None when none is found."""
    remote = getattr(kernel, "aliased", None)
    if remote is not None:
        said = remote(*inputs, out_shape=out_shape, aliases=input_output_aliases, hazard=True)
        return said if isinstance(said, str) else None
    found = first_hazard(kernel, *inputs, out_shape=out_shape, input_output_aliases=input_output_aliases, path=path,
                         namespaces=namespaces)
    return found.message() if found is not None else None


@contextlib.contextmanager
def unrolled_loops(*namespaces: dict[str, Any], limit: int = LOOP_LIMIT) -> Iterator[None]:
    """Within the block, `lax.fori_loop` with static bounds (so `pl.loop` too) runs its body as a Python loop.

    Each step then indexes with a Python int, so its regions are static. Dynamic bounds, or more than
    `limit` steps, keep the real loop.
    """
    original = jax.lax.fori_loop

    def fori_loop(lower: Any, upper: Any, body_fun: Callable[..., Any], init_val: Any, **kwargs: Any) -> Any:
        """A Python loop over the steps, or the real loop when the bounds are not static."""
        try:
            lo, hi = operator.index(lower), operator.index(upper)
        except TypeError:
            return original(lower, upper, body_fun, init_val, **kwargs)
        if hi - lo > limit:
            return original(lower, upper, body_fun, init_val, **kwargs)
        value = init_val
        for i in range(lo, hi):
            value = body_fun(i, value)
        return value

    from jax._src import lax as lax_src  # where `pl.loop` finds `fori_loop`

    with replaced(jax.lax, "fori_loop", fori_loop, vars(lax_src), *namespaces):
        yield


def overlaps(a: Access, b: Access) -> bool:
    """Whether two accesses certainly touch a common element; dynamic indices that differ do not count."""
    if a.region is None or b.region is None or len(a.region) != len(b.region):
        return False
    for (ka, loa, hia), (kb, lob, hib) in zip(a.region, b.region, strict=True):
        if loa is None or lob is None or ka != kb:
            return False  # unknown, or offsets from different dynamic values: not provable
        if not (loa < hib and lob < hia):
            return False
    return True


def _unwritten(spec: Any) -> Any:
    """An array that shows which elements a kernel never wrote: NaN, or the smallest integer."""
    dtype = np.dtype(spec.dtype)
    fill = np.nan if jnp.issubdtype(dtype, jnp.inexact) else np.iinfo(dtype).min if \
        jnp.issubdtype(dtype, jnp.integer) else False
    return jnp.full(spec.shape, fill, dtype)


def _block(ref: Any, spec: Any, point: tuple[int, ...]) -> Any:
    """The view of `ref` that a BlockSpec selects at grid point `point` (the whole ref without one)."""
    from jax.experimental import pallas as pl

    shape = getattr(spec, "block_shape", None)
    if spec is None or shape is None:
        return ref
    index = spec.index_map(*point)
    index = index if isinstance(index, tuple) else (index,)
    parts = []
    for size, i in zip(shape, index, strict=True):
        size = getattr(size, "block_size", size)  # `pl.Blocked(n)` means n
        if size is None or isinstance(size, pl.Squeezed):
            parts.append(i)  # a squeezed dimension is indexed by its block index
        else:
            parts.append(pl.ds(i * size, size))
    return ref.at[tuple(parts)]


@contextlib.contextmanager
def _program_ids(point: tuple[int, ...], grid: tuple[int, ...]) -> Iterator[None]:
    """Make `pl.program_id` and `pl.num_programs` answer for one emulated grid step."""
    from jax.experimental import pallas as pl

    with (
        replaced(pl, "program_id", lambda axis: jnp.int32(point[axis])),
        replaced(pl, "num_programs", lambda axis: grid[axis]),
    ):
        yield
