"""What a jitted call's own program text says about its buffers: which inputs it may reuse, which it does.

Two artifacts tell it, and the judge reads them itself rather than trusting a summary made where the
learner's code runs. The lowered StableHLO's `@main` marks each input that a donation can go to
(`tf.aliasing_output = k`, or `jax.buffer_donor = true`); a requested donation that no output can
take is not marked at all (JAX drops it, with its "not usable" warning). The compiled HLO module's
first line says what XLA really does: `input_output_alias={ {k}: (p, {}, may-alias) }` for each
output written into parameter p's buffer, and `entry_computation_layout={(params)->results}` for
their types, from which the bytes reused are counted as `alias_size_in_bytes` counts them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from course.grading.feedback import fail

__all__ = ["ProgramBuffers", "parameter_shapes", "program_buffers"]

_ALIAS = re.compile(r"\{[\d,\s]*\}:\s*\((\d+),\s*\{[\d,\s]*\}")
_ARRAY = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")
_TOKEN = "token[]"
_NUMPY = {"pred": "bool", "s8": "int8", "u8": "uint8", "s16": "int16", "u16": "uint16", "f16": "float16",
          "bf16": "bfloat16", "s32": "int32", "u32": "uint32", "f32": "float32", "s64": "int64", "u64": "uint64",
          "f64": "float64", "c64": "complex64", "c128": "complex128"}


@dataclass(frozen=True)
class ProgramBuffers:
    """One compiled call's buffers, as its program text gives them."""

    params: tuple[str, ...]
    """Each parameter's type, as HLO writes it (`f32[64]`)."""
    results: tuple[str, ...]
    """Each result's type."""
    marked: frozenset[int]
    """Inputs of the call the lowered program lets an output reuse."""
    aliased: frozenset[int]
    """Inputs of the call the compiled program writes an output into."""
    kept: tuple[int, ...] = ()
    """The call's input each parameter is: JAX leaves out the inputs the program never reads."""

    @property
    def alias_bytes(self) -> int:
        """Bytes of the parameters whose buffers an output takes over."""
        return sum(_bytes(self.params[self.kept.index(i)]) for i in self.aliased)

    def not_usable(self, donated: Sequence[bool]) -> tuple[str, ...]:
        """JAX's warning, in its words, when a donated input is one no output can take (an input the
        program never reads is left out without a word)."""
        lost = [self.params[k] for k, i in enumerate(self.kept) if donated[i] and i not in self.marked]
        return (f"Some donated buffers were not usable: {', '.join(_readable(t) for t in lost)}.",) if lost else ()

    def result_types(self) -> list[tuple[tuple[int, ...], np.dtype]]:
        """(shape, dtype) of each result."""
        return [_shape_dtype(t) for t in self.results]


def program_buffers(lowered: str, compiled: str, donated: Sequence[bool],
                    kept: Sequence[int] | None = None) -> ProgramBuffers:
    """Read both texts of one call that takes `len(donated)` inputs, of which the program's parameters are
    `kept` (all, by default); fail when they contradict each other or the donations asked for, as no
    program JAX and XLA made for that call would."""
    kept = tuple(range(len(donated))) if kept is None else tuple(kept)
    header = compiled.split("\n", 1)[0]
    every, returned = _layout(header)
    # A program with an ordered effect (a host callback, as the TPU interpreter makes) threads a token through
    # it: a parameter and a result of its own, which are no input or output of the call.
    position = {p: k for k, p in enumerate(p for p, t in enumerate(every) if t != _TOKEN)}
    params, results = tuple(t for t in every if t != _TOKEN), tuple(t for t in returned if t != _TOKEN)
    if list(kept) != sorted(set(kept)) or any(i < 0 or i >= len(donated) for i in kept) or len(params) != len(kept):
        _contradicts()
    if any(p not in position for p in _marked(lowered) | _donors(header) | _aliased(header)):
        _contradicts()
    marked = {kept[position[p]] for p in _marked(lowered)}
    aliased = frozenset(kept[position[p]] for p in _aliased(header))
    donors = {kept[position[p]] for p in _donors(header)}
    if not marked <= {i for i, d in enumerate(donated) if d} or not aliased <= marked | donors:
        _contradicts()
    return ProgramBuffers(params, results, frozenset(marked), aliased, kept)


def parameter_shapes(compiled: str) -> tuple[tuple[int, ...], ...]:
    """The shapes of a compiled program's parameters, from its HLO module's first line (`JitCall.compiled`)."""
    return tuple(_shape_dtype(t)[0] for t in _layout(compiled)[0] if t != _TOKEN)


def _contradicts() -> None:
    """Fail the check: the texts are not those of the call."""
    fail("the program your jitted call compiled to does not match the call: its inputs or its reused buffers "
         "are not those that the call asks to donate, which no program made by `jax.jit` does.")


def _aliased(header: str) -> set[int]:
    """Parameters `input_output_alias` writes an output into."""
    return {int(m[1]) for m in _ALIAS.finditer(_attribute(header, "input_output_alias"))}


def _marked(lowered: str) -> set[int]:
    """Inputs of `@main` marked `tf.aliasing_output` or `jax.buffer_donor`."""
    line = next((s for s in lowered.splitlines() if "@main(" in s), "")
    signature = line.split("@main(", 1)[-1].split(") -> ", 1)[0]
    marked = set()
    for chunk in signature.split("%arg")[1:]:
        index, _, rest = chunk.partition(":")
        if index.isdigit() and ("tf.aliasing_output" in rest or "jax.buffer_donor = true" in rest):
            marked.add(int(index))
    return marked


def _donors(header: str) -> set[int]:
    """Parameters XLA was told it may reuse for any output (`buffer_donor={ (p, {}) }`)."""
    return {int(m) for m in re.findall(r"\((\d+),\s*\{", _attribute(header, "buffer_donor"))}


def _attribute(header: str, name: str) -> str:
    """The brace-balanced value of `name={...}` on the module's first line, or ''."""
    start = header.find(f" {name}={{")
    if start < 0:
        return ""
    start += len(name) + 2
    depth = 0
    for end in range(start, len(header)):
        depth += {"{": 1, "}": -1}.get(header[end], 0)
        if depth == 0:
            return header[start + 1:end]
    return ""


def _layout(header: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The parameter and result types of `entry_computation_layout={(params)->results}`."""
    # HLO writes `/*index=5*/` before every fifth type of a long list: not part of the type.
    layout = re.sub(r"/\*.*?\*/", "", _attribute(header, "entry_computation_layout"))
    given, _, returned = layout.partition(")->")
    returned = returned[1:-1] if returned.startswith("(") and returned.endswith(")") else returned
    return _split(given[1:]), _split(returned)


def _split(text: str) -> tuple[str, ...]:
    """Top-level comma-separated types, each without its layout (`f32[64]{0}` is `f32[64]`)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return tuple(_without_layout(p.strip()) for p in parts if p.strip())


def _without_layout(text: str) -> str:
    """An array type without its `{layout}`; a tuple type as it is."""
    m = _ARRAY.match(text)
    return m.group(0) if m else text


def _shape_dtype(text: str) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of an array type; an unknown type is a float32 scalar."""
    import jax.numpy as jnp

    m = _ARRAY.match(text)
    if m is None or m["dtype"] not in _NUMPY:
        return (), np.dtype(np.float32)
    return tuple(int(d) for d in m["dims"].split(",") if d), jnp.dtype(_NUMPY[m["dtype"]])


def _bytes(text: str) -> int:
    """Bytes of an array type."""
    shape, dtype = _shape_dtype(text)
    return int(np.prod(shape, dtype=np.int64)) * dtype.itemsize


def _readable(text: str) -> str:
    """`float32[64]` for `f32[64]`, as JAX names it."""
    shape, dtype = _shape_dtype(text)
    return f"{dtype.name}[{','.join(map(str, shape))}]"
