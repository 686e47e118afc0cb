"""What the chip process does with one call, in each of its modes (`course.chip.child` runs them)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

from course.chip.agreement import agree, refusal

__all__ = ["bench_call", "check_call", "estimate_call", "platform"]

STAND_IN = "COURSE_CHIP_CPU"
"""Set to 1 (tests only): the CPU stands in for the chip, its kernels under the TPU interpreter, so that
everything around the chip (one process per file, the comparison, the timing, the reports) is tested
where there is no TPU. What only a chip can say is measured on one (benchmarks/bench_chip.py)."""


def _stand_in() -> bool:
    """Whether the CPU stands in for the chip (`STAND_IN`)."""
    return os.environ.get(STAND_IN) == "1"


def _on_chip() -> Any:
    """Where a call runs "on the chip": nowhere special on a TPU; under the interpreter when the CPU stands in."""
    from jax.experimental.pallas import tpu as pltpu

    return pltpu.force_tpu_interpret_mode(pltpu.InterpretParams()) if _stand_in() else contextlib.nullcontext()


def _chip() -> Any:
    """The chip this process has (a v5e's figures when the CPU stands in for it)."""
    from course.chip.roofline import chip_here, chip_named

    return chip_named("v5e") if _stand_in() else chip_here()


def platform(spec: dict[str, Any]) -> dict[str, Any]:
    """Which chip this process has (or, estimating, which one it estimates for)."""
    from course.chip.roofline import chip_named

    if spec["mode"] == "estimate":
        return {"chip": chip_named(spec.get("tpu", "v5e")).name, "estimated": True}
    chip = _chip()
    if chip is None:
        raise RuntimeError(f"JAX found no TPU here (its backend is {jax.default_backend()})")
    return {"chip": chip.name, "device_kind": jax.devices()[0].device_kind, "estimated": False}


def _call(text: str, module: Any, spec: dict[str, Any]) -> Any:
    """The call `text` made into a Call on the default device (`course inspect`'s form); raise what it raised."""
    from course.grading.inspect.calls import CallError, make_calls

    (made,) = make_calls([text], spec.get("setup", ""), module)
    if isinstance(made, CallError):
        raise RuntimeError(f"{made}: {made.__cause__}" if made.__cause__ else str(made))
    return made


def _leaves(value: Any) -> list[np.ndarray]:
    """A result's arrays, on the host."""
    return [np.asarray(jax.device_get(leaf)) for leaf in jax.tree_util.tree_leaves(value)]


def _interpreted(call: Any) -> bool:
    """Whether the learner's code asks its `pallas_call`s for the interpreter itself (`interpret=`)."""
    from course.grading.observe.traces.jaxprs import equations

    fn, arrays, _ = call.traced()
    closed = jax.make_jaxpr(fn)(*arrays)
    return any(e.primitive.name == "pallas_call" and e.params.get("interpret") for e in equations(closed.jaxpr))


def check_call(text: str, module: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Run the call on the CPU under the strict interpreter and compiled on the chip, and compare the two."""
    from jax.experimental.pallas import tpu as pltpu

    path, source = Path(spec["file"]), Path(spec["file"]).read_text(encoding="utf-8", errors="replace")
    with jax.default_device(jax.devices("cpu")[0]), pltpu.force_tpu_interpret_mode(pltpu.InterpretParams()):
        want = _leaves(jax.block_until_ready(_call(text, module, spec).run()))
    call = _call(text, module, spec)
    if not _stand_in() and _interpreted(call):
        return {"call": text, "status": "interpreted",
                "message": "your `pallas_call` asks for the interpreter itself (`interpret=`), so the chip ran the "
                           "interpreter, not your kernel: leave `interpret=` out, and grading still interprets it "
                           "on a CPU"}
    try:
        with _on_chip():
            got = _leaves(jax.block_until_ready(call.run()))
    except Exception as exc:  # noqa: BLE001 - the chip's compiler or runtime refusing the kernel is the finding
        kind, words = refusal(exc, path, source)
        return {"call": text, "status": kind, "message": words}
    return _compared(text, got, want)


def _compared(text: str, got: list[np.ndarray], want: list[np.ndarray]) -> dict[str, Any]:
    """The chip's result against the CPU's, output by output."""
    if len(got) != len(want):
        return {"call": text, "status": "differs", "message": f"the chip gave {len(got)} arrays, the CPU {len(want)}"}
    worst = None
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        found = agree(g, w)
        if not found.ok:
            return {"call": text, "status": "differs", "output": i, "error": found.error, "tolerance": found.tolerance,
                    "dtype": str(g.dtype), "where": found.where,
                    "message": f"differs from the CPU's result by {found.error:.3g} of its largest value "
                               f"(float tolerance {found.tolerance:g} for {g.dtype}), first at {found.where}"}
        worst = found if worst is None or found.error > worst.error else worst
    return {"call": text, "status": "matched", "error": worst.error if worst else 0.0,
            "tolerance": worst.tolerance if worst else 0.0}


def bench_call(text: str, module: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Time the call on the chip against XLA's op, check its values after timing, and set it on the roofline."""
    from course.chip import timing
    from course.chip.maths import MATHS

    chip, math = _chip(), MATHS[spec["math"]]
    call = _call(text, module, spec)
    fn, arrays, _ = call.traced()
    fresh = _fresh_inputs(arrays)
    budget = float(spec.get("budget_s", 2.0))
    with _on_chip():
        mine, out, args = timing.time_function(fn, fresh, budget_s=budget)
    checked = _compared(text, _leaves(out), _leaves(math.exact(*args)))
    xla, _, _ = timing.time_function(jax.jit(math.xla), fresh, budget_s=budget)
    flops, nbytes = math.flops(*arrays), math.nbytes(*arrays)
    fastest = chip.fastest(flops, nbytes)
    found = {"call": text, "status": "timed", "kernel": mine.to_json(), "xla": xla.to_json(), "xla_op": math.what,
             "flops": flops, "bytes": nbytes, "roofline_s": fastest, "values": checked}
    if checked["status"] != "matched":
        found.update(status="differs", message=f"after timing, the result {checked['message']}")
    elif mine.median < 0.9 * fastest:
        found.update(status="refused", message=f"{mine.median * 1e3:.3f} ms is faster than the chip's roofline allows "
                                               f"({fastest * 1e3:.3f} ms): a measurement error, not a result")
    found["estimate"] = _estimate(fn, arrays, chip)
    return found


def _fresh_inputs(arrays: list[Any]) -> Any:
    """A maker of new random inputs shaped like `arrays` for each call index, made on the chip by one program."""
    import jax.numpy as jnp

    shapes = [(tuple(a.shape), a.dtype) for a in arrays]

    @jax.jit
    def course_bench_inputs(i: Any) -> tuple[Any, ...]:
        keys = jax.random.split(jax.random.key(i), len(shapes))
        made = []
        for key, (shape, dtype) in zip(keys, shapes, strict=True):
            if jnp.issubdtype(dtype, jnp.integer):
                made.append(jax.random.randint(key, shape, 0, 10, dtype))
            else:
                made.append(jax.random.normal(key, shape, jnp.float32).astype(dtype))
        return tuple(made)

    return lambda i: course_bench_inputs(i)


def _estimate(fn: Any, arrays: list[Any], chip: Any) -> dict[str, Any] | None:
    """The chip-free estimate of the call's kernels on `chip`: their summed time and each one's parts."""
    from course.chip.estimate import kernel_cost
    from course.grading.observe.kernels.kernels import pallas_calls

    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in arrays]
    kernels = [kernel_cost(k).on(chip) for k in pallas_calls(fn, *specs)]
    if not kernels:
        return None
    return {"seconds": sum(k.seconds for k in kernels), "kernels": [k.to_json() for k in kernels]}


def estimate_call(text: str, module: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """Trace the call and estimate its kernels for the named generation; set it on that chip's roofline."""
    from course.chip.maths import MATHS
    from course.chip.roofline import chip_named

    chip = chip_named(spec.get("tpu", "v5e"))
    fn, arrays, _ = _call(text, module, spec).traced()
    found = _estimate(fn, arrays, chip)
    if found is None:
        return {"call": text, "status": "error", "message": "the call runs no `pallas_call`: there is no kernel to "
                                                            "estimate"}
    result = {"call": text, "status": "estimated", "estimate": found}
    if spec.get("math") in MATHS:
        math = MATHS[spec["math"]]
        flops, nbytes = math.flops(*arrays), math.nbytes(*arrays)
        result.update(flops=flops, bytes=nbytes, roofline_s=chip.fastest(flops, nbytes))
    return result
