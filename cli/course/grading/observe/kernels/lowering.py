"""What a TPU's compiler refuses before it runs anything: each kernel of a trace lowered for a TPU, here on a CPU.

The strict interpreter runs a kernel's jaxpr as it is, so it accepts what no TPU compiles: an operation
Pallas has no TPU lowering for (`jnp.flip`, a ref's `addupdate`), a block whose last two dimensions are
not multiples of 8 and 128, a load straight from an HBM (`pl.ANY`) ref. JAX can lower for a platform it
does not have: `tpu_refusals(fn, *args)` takes each `pallas_call` of `fn`'s trace, compiled rather than
interpreted, and lowers it for a TPU with `jax.export`, as the chip's own run would begin; what the lowering
refuses comes back in its own words with the learner's line. In the judge the trace is the one the
executor sent (`course.engine.wire.jaxpr_objects`), so the lowering runs nothing of the learner's.

What only the chip's compiler (Mosaic, inside libtpu) checks is not seen here: a dynamic store at rows
that are not a multiple of 8, a working set larger than the scoped VMEM.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course.grading.feedback import fail
from course.grading.observe.calls.strict_runs import abstract_tpu, tpu_fallback
from course.grading.observe.kernels.kernels import kernel_call_of
from course.grading.observe.traces.jaxprs import equations, learner_line, traced

__all__ = ["Refusal", "assert_lowers_for_tpu", "lowering_words", "refusal_of", "tpu_refusals"]

# What a refusal's words are cut down to: the sentence that says what is wrong.
MAX_WORDS = 400
# Sentences of JAX's that say nothing about the learner's kernel.
_NOISE = (re.compile(r"Pallas encountered an internal verification error\.\s*"), re.compile(r"Error details:\s*"),
          re.compile(r"\s*Please file (?:an issue|a bug) at \S+"), re.compile(r"\s*See details at \S+"),
          re.compile(r"\s*see current operation:.*", re.S), re.compile(r"\s*Additional diagnostics:.*", re.S),
          re.compile(r",?\s*and index_map \{.*?\}(?=,)", re.S), re.compile(r",?\s*in memory space <[^>]*>"))
# What a refusal means, in the course's words, by a phrase of the lowering's.
_MEANINGS = (
    ("for tc: rev", "`jnp.flip` (and any reversal, `x[::-1]`) has no TPU lowering inside a kernel: read the "
                    "parts you need with slices and store them where they belong instead."),
    ("for tc: addupdate", "a ref's `addupdate` has no TPU lowering inside a kernel: load, add, then store "
                          "(`o_ref[...] += v` does exactly that)."),
    ("divisible by 8 and 128", "a block's last two dimensions must be multiples of 8 and 128 (or the whole "
                               "array's): pick block shapes a TPU's tiles divide."),
    ("Loads are only allowed on VMEM and SMEM", "a kernel reads HBM (`pl.ANY`) only by a DMA into VMEM or SMEM: "
                                                "copy the block in first and read the copy."),
    ("Expected matmul acc to be 32-bit", "a TPU's matrix unit adds its products up in 32 bits: give the dot "
                                         "`preferred_element_type=jnp.float32` and cast the result after."),
    ("DMA source and target element type mismatch", "a DMA copies bytes as they are, so its source and target "
                                                    "must have one dtype: cast after the copy, not in it."),
    ("Unimplemented primitive in Pallas TPU lowering", "that operation has no TPU lowering inside a kernel: "
                                                       "compute the same thing with operations a TPU has."),
)


@dataclass(frozen=True)
class Refusal:
    """A kernel the TPU lowering refused: which one, what the lowering said, and where."""

    kernel: str
    words: str
    """The lowering's own words, cut to what says what is wrong."""
    line: int | None
    """The learner's line of the operation the lowering refused, when it names one."""
    call_line: int | None
    """The learner's line of the `pallas_call` itself."""

    def message(self, caller: str) -> str:
        """'`caller` runs `kernel` (its `pallas_call` at line N), which a TPU cannot compile: ... \"words\". ...'."""
        call = f" (its `pallas_call` at line {self.call_line})" if self.call_line is not None else ""
        what = f"line {self.line}" if self.line is not None else "it"
        meaning = next((m for phrase, m in _MEANINGS if phrase in self.words), "")
        return (f"`{caller}` runs `{self.kernel}`{call}, which a TPU cannot compile: lowered for a TPU, as the chip "
                f"would compile it, {what} is refused with \"{self.words}\". {meaning[:1].upper()}{meaning[1:]}"
                f"{' ' if meaning else ''}The strict interpreter under `course check` runs what no TPU compiles, so "
                "each kernel is lowered for a TPU too.")


def tpu_refusals(fn: Any, *args: Any, path: Path | None = None) -> list[Refusal]:
    """Each `pallas_call` of `fn(*args)` (or of a trace), compiled instead of interpreted and lowered for a TPU:
    what the lowering refused, in program order; empty when every kernel lowers."""
    closed = tpu_fallback(lambda: traced(fn, *args))
    found = []
    for eqn in _kernel_calls(closed.jaxpr):
        refusal = refusal_of(eqn, path)
        if refusal is not None:
            found.append(refusal)
    return found


def assert_lowers_for_tpu(fn: Any, *args: Any, name: str, path: Path | None = None) -> None:
    """Fail the check, in the lowering's words and the course's, unless every kernel of `fn(*args)` lowers for a
    TPU; `name` is what the learner calls `fn`."""
    refusals = tpu_refusals(fn, *args, path=path)
    if refusals:
        fail(refusals[0].message(name))


def _kernel_calls(jaxpr: Any) -> Iterator[Any]:
    """The `pallas_call` equations of a jaxpr and the jaxprs around kernels, in program order."""
    return (e for e in equations(jaxpr, into_kernels=False) if e.primitive.name == "pallas_call")


class _Where:
    """An equation's traceback as the lowering sees it: no frames of its own (so no location to join), and a
    note of the equation when an error leaves the lowering of it, innermost equation first."""

    def __init__(self, eqn: Any, passed: list[Any]) -> None:
        self.eqn, self.passed = eqn, passed

    def raw_frames(self) -> tuple[list[Any], list[Any]]:
        """No code objects: JAX finds no frame of its own to name in the lowered text."""
        return [], []

    def as_python_traceback(self) -> None:
        """Called by JAX as an error leaves this equation's lowering: note the equation, give no traceback."""
        self.passed.append(self.eqn)


def refusal_of(eqn: Any, path: Path | None) -> Refusal | None:
    """What the TPU lowering says of one `pallas_call` equation made to compile, or None if it lowers."""
    import jax
    from jax._src import config, core  # the switch for locations made from tracebacks has no public home
    from jax._src.pallas.pallas_call import pallas_call_p  # to lower one equation as it was traced

    passed: list[Any] = []
    with abstract_tpu():
        context = core.JaxprEqnContext()  # as if traced for a TPU: the lowering asks which one, inside each equation
    marked = _Marking(passed, context)
    params = dict(eqn.params, interpret=False, jaxpr=marked.jaxpr(eqn.params["jaxpr"]),
                  grid_mapping=marked.grid(eqn.params["grid_mapping"]))
    specs = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in eqn.invars]

    def kernel(*operands: Any) -> Any:
        return pallas_call_p.bind(*operands, **params)

    try:
        # On a CPU, JAX knows no TPU to lower for: the course's, a v5e core, stands in.
        with config.include_full_tracebacks_in_locations(False), abstract_tpu():
            jax.export.export(jax.jit(kernel), platforms=("tpu",))(*specs)
    except Exception as exc:  # noqa: BLE001 - whatever the lowering raised is its refusal
        line = next((n for n in (learner_line(e, path) for e in passed) if n is not None), None)
        return Refusal(kernel_call_of(eqn, path).kernel_name, lowering_words(exc), line, learner_line(eqn, path))
    return None


class _Marking:
    """A kernel's jaxprs (its body, its index maps) rebuilt for the TPU lowering: each equation's traceback a
    `_Where`, and its context (which fixes the TPU the lowering asks about) the one given."""

    def __init__(self, passed: list[Any], context: Any) -> None:
        self.passed, self.context = passed, context

    def jaxpr(self, jaxpr: Any) -> Any:
        """`jaxpr` with every equation, nested ones too, marked."""
        return jaxpr.replace(eqns=[self.eqn(e) for e in jaxpr.eqns])

    def eqn(self, e: Any) -> Any:
        """One equation marked, and the jaxprs in its parameters."""
        from jax._src import source_info_util

        info = source_info_util.SourceInfo(_Where(e, self.passed), e.source_info.name_stack)
        return e.replace(source_info=info, ctx=self.context, params={k: self.param(v) for k, v in e.params.items()})

    def param(self, value: Any) -> Any:
        """A parameter with the jaxprs in it marked."""
        from jax._src import core

        if isinstance(value, core.ClosedJaxpr):
            return value.replace(jaxpr=self.jaxpr(value.jaxpr))
        if isinstance(value, core.Jaxpr):
            return self.jaxpr(value)
        if isinstance(value, tuple) and any(isinstance(x, core.Jaxpr | core.ClosedJaxpr) for x in value):
            items = [self.param(x) for x in value]  # a cond's branches
            return type(value)._make(items) if hasattr(type(value), "_make") else tuple(items)
        return value

    def grid(self, mapping: Any) -> Any:
        """A `GridMapping` whose blocks' index maps are marked."""
        import dataclasses

        blocks = tuple(dataclasses.replace(b, index_map_jaxpr=self.param(b.index_map_jaxpr))
                       for b in mapping.block_mappings)
        return dataclasses.replace(mapping, block_mappings=blocks)


def lowering_words(exc: BaseException) -> str:
    """The lowering's message, cut to the sentences about the kernel: no links, no dump of the index map."""
    text = str(exc).strip() or type(exc).__name__
    for noise in _NOISE:
        text = noise.sub("", text)
    text = " ".join(text.split())
    return text if len(text) <= MAX_WORDS else text[: MAX_WORDS - 3].rstrip() + "..."
