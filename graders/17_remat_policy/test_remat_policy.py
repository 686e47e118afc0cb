"""Grader of `remat_policy`: values, the compiled temp memory of each policy, and no matmul computed twice."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading.feedback import check, fail
from course.grading.judge.arrays import assert_array, assert_is_array, describe_value
from course.grading.observe.calls.programs import compile_program, size_text
from course.grading.observe.calls.recompiles import later_calls
from course.grading.observe.calls.reruns import program_values
from course.grading.observe.traces.jaxprs import learner_line, traced, walk_eqns
from course.grading.observe.traces.loops import line_text, type_text
from course.grading.observe.traces.matmuls import matmul_flops, matmuls_in, mflop, repeated_matmuls
from course.grading.observe.traces.residuals import describe_residuals, scan_residuals

L, B, D, H = 16, 512, 64, 256
FORWARD_FLOPS = L * 2 * (2 * B * D * H)  # two (B, D) x (D, H)-sized matmuls per layer: 537 MFLOP
MOST_FLOPS = 3 * FORWARD_FLOPS  # the forward pass and the two operand gradients of each matmul: 1611 MFLOP
# Per layer a correct loss_and_grads keeps one (B, H) matmul output and one (B, D) input: 10 MiB in all.
BUDGET = 2 * L * (B * H + B * D) * 4  # 20 MiB; measured: 11.9 MiB (reference) to 13.8 MiB (fori_loop)
MIN_BUDGET = 4 * L * B * D * 4  # 8 MiB, four times the layer inputs; measured: 3.8 to 5.8 MiB
# float32 against float64: the reference is off by 1e-8 (loss) and 5e-7 of the largest gradient entry; the
# exact (erf) gelu in place of jax.nn.gelu's tanh approximation is off by 1.4e-4 to 2.8e-4.
LOSS_RTOL, GRAD_RTOL = 1e-5, 2e-5


def _inputs(rng: np.random.Generator) -> tuple[dict[str, jax.Array], jax.Array]:
    """Random params of L residual layers, scaled so activations neither blow up nor vanish, and x."""
    params = {"w1": rng.standard_normal((L, D, H)) / np.sqrt(D), "b1": rng.standard_normal((L, H)) * 0.1,
              "w2": rng.standard_normal((L, H, D)) * 0.3 / np.sqrt(H)}
    x = rng.standard_normal((B, D))
    return {k: jnp.asarray(v, jnp.float32) for k, v in params.items()}, jnp.asarray(x, jnp.float32)


def _spec() -> tuple[dict[str, jax.ShapeDtypeStruct], jax.ShapeDtypeStruct]:
    """The shapes the checks compile for (the values checks call with arrays of the same)."""
    f32 = jnp.float32
    return ({"w1": jax.ShapeDtypeStruct((L, D, H), f32), "b1": jax.ShapeDtypeStruct((L, H), f32),
             "w2": jax.ShapeDtypeStruct((L, H, D), f32)}, jax.ShapeDtypeStruct((B, D), f32))


_C = np.sqrt(2 / np.pi)


def _gelu(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """jax.nn.gelu's tanh approximation and its derivative, in float64 (powers written as products: NumPy's
    float power took nine tenths of the spec's gradients)."""
    zz = z * z
    t = np.tanh(_C * z * (1 + 0.044715 * zz))
    value = 0.5 * z * (1 + t)
    slope = 0.5 * (1 + t) + 0.5 * z * (1 - t * t) * _C * (1 + 3 * 0.044715 * zz)
    return value, slope


def _numpy_loss_and_grads(params: dict[str, jax.Array], x: jax.Array) -> tuple[float, dict[str, np.ndarray]]:
    """The loss and its gradients by hand, in float64: the forward pass, then backprop layer by layer."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    hs, gelus = [np.asarray(x, np.float64)], []
    for i in range(L):
        gelus.append(_gelu(hs[-1] @ p["w1"][i] + p["b1"][i]))  # kept for the backward pass
        hs.append(hs[-1] + gelus[-1][0] @ p["w2"][i])
    out = hs[-1]
    g = 2 * out / out.size
    grads = {k: np.zeros_like(v) for k, v in p.items()}
    for i in reversed(range(L)):
        a, slope = gelus[i]
        grads["w2"][i] = a.T @ g
        dz = (g @ p["w2"][i].T) * slope
        grads["w1"][i] = hs[i].T @ dz
        grads["b1"][i] = dz.sum(axis=0)
        g = g + dz @ p["w1"][i].T
    return float(np.mean(out**2)), grads


def _check_values(submission: ModuleType, rng: np.random.Generator, name: str) -> None:
    """`name(params, x)` gives the loss and the gradients of the spec, within RTOL."""
    params, x = _inputs(rng)
    out = getattr(submission, name)(params, x)  # as the learner calls it: the judge sees only what it returns
    check(isinstance(out, tuple | list) and len(out) == 2,
          f"{name} returned {describe_value(out)}; it returns a pair (loss, grads), as `jax.value_and_grad` does.")
    loss, grads = out
    want_loss, want_grads = _numpy_loss_and_grads(params, x)
    got = assert_is_array(loss, f"{name}'s loss")
    check(got.shape == () and got.dtype == jnp.float32, f"{name}'s loss is {describe_value(got)}; "
                                                        "it is a float32 scalar.")
    value = float(got)
    if not abs(value - want_loss) <= LOSS_RTOL * abs(want_loss):
        hint = ""
        if np.isclose(value, want_loss * B * D, rtol=1e-3):
            hint = f" That is the sum of the squares; the loss is their mean (divide by {B * D})."
        fail(f"{name}: the loss is {value:.6g}, expected {want_loss:.6g} (mean of forward(params, x) ** 2).{hint}")
    check(isinstance(grads, dict) and set(grads) == set(want_grads),
          f"{name}'s grads are {describe_value(grads)}; they are a dict with the keys of params "
          "('w1', 'b1', 'w2'): the gradient with respect to params, not to x.")
    for key, want in want_grads.items():
        scale = float(np.max(np.abs(want)))
        got = assert_is_array(grads[key], f"{name}: grads[{key!r}]")
        if got.shape == want.shape and got.dtype == jnp.float32:
            off = float(np.max(np.abs(np.asarray(got, np.float64) - want))) / scale
            if GRAD_RTOL < off < 1e-3:
                fail(f"{name}: grads[{key!r}] is off by {off:.1e} of its largest entry (allowed {GRAD_RTOL:g}): close, "
                     "but not the spec's function. Is the layer exactly `x + jax.nn.gelu(x @ w1 + b1) @ w2`, with "
                     "gelu's default tanh approximation (not `approximate=False`), all in float32?")
        assert_array(got, want.astype(np.float32), name=f"{name}: grads[{key!r}]", rtol=GRAD_RTOL,
                     atol=GRAD_RTOL * scale)
    _programs_compute(submission, rng, name)


_Case = tuple[dict[str, jax.Array], jax.Array, tuple[float, dict[str, np.ndarray]]]
_FRESH: list[_Case] = []


def _fresh_case(rng: np.random.Generator) -> _Case:
    """Fresh params and x for the programs to run on, and the spec's loss and gradients there: made once for both
    functions' checks, and never sent to the executor."""
    if not _FRESH:
        params, x = _inputs(rng)
        _FRESH.append((params, x, _numpy_loss_and_grads(params, x)))
    return _FRESH[0]


def _programs_compute(submission: ModuleType, rng: np.random.Generator, name: str) -> None:
    """The loss and gradients of the call just made must be what the programs it ran compute: the grader runs them
    itself on fresh params and x, apart from the process running the learner's code. A call that ran no program,
    or an ahead-of-time compiled one, is left to the checks of its jit and its memory."""
    params, x, (want_loss, want_grads) = _fresh_case(rng)
    keys = sorted(want_grads)  # the result's leaves: the loss, then the grads dict's in key order
    values = program_values(
        getattr(submission, name), params, x, needed=1 + len(keys), count=1 + len(keys),
        made_outside=f"the loss and gradients {name} returns are not all computed by the programs its call ran from "
        "`params` and `x`: some are made outside them (by NumPy or Python), while the programs only stand beside. "
        "What the checkpointing saves is memory of the programs that compute the gradients, so they must be "
        "the ones that make them.")
    if values is None:
        return
    name_of = f"as the programs your call of {name} ran compute it, run by the grader on fresh params and x"
    loss = np.asarray(values[0], np.float64)
    check(loss.shape == () and abs(float(loss) - want_loss) <= LOSS_RTOL * abs(want_loss),
          f"the loss {name_of}: {describe_value(values[0])}, expected {want_loss:.6g}.")
    for key, value in zip(keys, values[1:], strict=True):
        scale = float(np.max(np.abs(want_grads[key])))
        assert_array(value, want_grads[key].astype(np.float32), name=f"grads[{key!r}] {name_of}",
                     rtol=GRAD_RTOL, atol=GRAD_RTOL * scale)


@pytest.mark.judge
@pytest.mark.points(1)
def test_values_loss_and_grads(submission: ModuleType, rng: np.random.Generator) -> None:
    """`loss_and_grads` returns the loss mean(forward(params, x) ** 2) and its gradients"""
    _check_values(submission, rng, "loss_and_grads")


@pytest.mark.judge
@pytest.mark.points(1)
def test_values_min_memory(submission: ModuleType, rng: np.random.Generator) -> None:
    """`loss_and_grads_min_memory` returns the same loss and gradients"""
    _check_values(submission, rng, "loss_and_grads_min_memory")


def _checkpoints(closed: Any, path: Path) -> tuple[bool, list[tuple[int | None, bool]]]:
    """(whether a checkpoint recomputes inside a backward scan, [(line, differentiated)] of each that holds a scan).

    A checkpointed scan body shows in a gradient's jaxpr as a `remat2` inside the backward (reverse) scan. A
    checkpoint that autodiff went through is `differentiated`: around a scan, it is a checkpoint of the whole
    scan. One that was never differentiated wraps the gradient computation itself.
    """
    in_backward, around = False, {}
    for eqn, outer in walk_eqns(closed):
        if eqn.primitive.name == "remat2":
            in_backward |= any(e.primitive.name == "scan" and e.params["reverse"] for e in outer)
        if eqn.primitive.name == "scan":
            for e in outer:
                if e.primitive.name == "remat2":
                    around[id(e)] = (learner_line(e, path), bool(e.params.get("differentiated")))
    return in_backward, list(around.values())


def _explain_memory(closed: Any, path: Path, min_memory: bool) -> str:
    """Why the program keeps so much: the saved residuals with their lines, and what to change."""
    residuals = [r for r in scan_residuals(closed, path=path) if r.length == L]
    in_backward, around = _checkpoints(closed, path)
    want = ("Save only each layer's input: `jax.checkpoint` on the scan's body with the default policy "
            "(`jax.checkpoint_policies.nothing_saveable`), so everything inside the layer is recomputed."
            if min_memory else
            "Save only the matmul outputs: `jax.checkpoint(body, policy=jax.checkpoint_policies.dots_saveable)` on "
            "the scan's body (or a `checkpoint_name` on `x @ w1` saved by `save_only_these_names`).")
    if not residuals:
        return (" Its layers are not in a `lax.scan`, so there is no loop for a checkpoint to work across: on XLA "
                "CPU the compiler merges the recomputation of straight-line code back into the forward pass, and "
                "a checkpoint there saves nothing. Put the layers in one `lax.scan`. " + want)
    per_layer = sum(r.nbytes for r in residuals)
    saved = (f" Per layer, the forward pass hands the backward pass {size_text(per_layer)}: "
             f"{describe_residuals(residuals, path)}.")
    for line, differentiated in around:
        where = f" ({line_text(line, path)})" if line else ""
        if not differentiated:
            return saved + (f" Your `jax.checkpoint`{where} wraps the gradient computation itself, so there is "
                            "nothing outside it to differentiate and it changes nothing. " + want)
        return saved + (f" Your `jax.checkpoint`{where} wraps the whole scan: a policy does not reach inside "
                        "a scan, so the backward pass runs the scan again and saves everything. " + want)
    if not in_backward:
        return saved + (" No checkpoint reaches the scan that computes the gradient, so autodiff keeps every "
                        "intermediate of every layer. " + want)
    return saved + " Your checkpoint policy keeps more than that. " + want


def _check_memory(submission: ModuleType, name: str, budget: int, path: Path) -> None:
    """The compiled `name` needs at most `budget` bytes of temporary memory."""
    # Traced where the code runs, compiled here: the memory is what XLA makes of the trace.
    closed = traced(getattr(submission, name), *_spec())
    temp = compile_program(closed, *_spec()).temp_bytes
    if temp <= budget:
        return
    fail(f"{name} needs {size_text(temp)} of temporary memory for L={L} layers of a ({B}, {D}) batch "
         f"(H={H}); the budget is {size_text(budget)}.{_explain_memory(closed, path, budget == MIN_BUDGET)}")


@pytest.mark.judge
@pytest.mark.points(2)
def test_memory_budget_loss_and_grads(submission: ModuleType, submission_path: Path) -> None:
    """The compiled `loss_and_grads` needs at most 20 MiB of temporary memory"""
    _check_memory(submission, "loss_and_grads", BUDGET, submission_path)


@pytest.mark.judge
@pytest.mark.points(2)
def test_no_matmul_recomputed(submission: ModuleType, submission_path: Path) -> None:
    """`loss_and_grads` asks for no more matmul work than the forward pass and its gradients (1611 MFLOP)"""
    closed = traced(submission.loss_and_grads, *_spec())
    found = matmuls_in(closed, path=submission_path)
    total = matmul_flops(found)
    if total is None:
        where = next(m.unknown for m in found if m.times is None)
        fail(f"loss_and_grads runs matmuls {where}, whose trip count is data, so their work cannot be counted: "
             "loop over the layers with `lax.scan` (or a `fori_loop` with Python-int bounds).")
    if total <= MOST_FLOPS:
        return
    head = (f"loss_and_grads asks for {mflop(total)} of matmuls, {mflop(total - MOST_FLOPS)} more than the "
            f"{mflop(MOST_FLOPS)} of the forward pass and its gradients (3 x {mflop(FORWARD_FLOPS)})")
    again = repeated_matmuls(found)
    if not again:
        fail(head + ". Compute each matmul once per layer and differentiate with one `jax.value_and_grad`.")
    passes, backward = _forward_scans(closed, {(m.lhs, m.rhs, m.out) for m, _ in again}, submission_path)
    if len(passes) > 1:
        lines = sorted({line for line in passes if line is not None})
        where = f" (called at {'; '.join(line_text(n, submission_path) for n in lines)})" if lines else ""
        also = (f" (and the backward pass computes {backward} of its matmuls again per layer besides)" if backward
                else ", while the backward pass recomputes no matmul")
        fail(head + f": it runs the layers forward {len(passes)} times, in {len(passes)} scans{where}{also}. A loss "
             "computed apart from its gradient runs every layer again: `jax.value_and_grad` returns the loss and "
             "the gradients from one forward pass.")
    per_layer = sum(n - 1 for _, n in again)
    first = min((m for m, _ in again), key=lambda m: m.line or 0)
    fail(head + f": the backward pass recomputes {per_layer} matmul(s) per layer "
         f"({line_text(first.line, submission_path)}). Save the matmul outputs, so only the cheap gelu is "
         f"recomputed (`jax.checkpoint_policies.dots_saveable`).{_names_text(closed, submission_path)}")


def _forward_scans(closed: Any, repeated: set[tuple[str, str, str]], path: Path) -> tuple[list[int | None], int]:
    """The forward (not reversed) scans that compute a matmul of the `repeated` types, each as the line of the
    learner's file that called it (its outermost frame there), two of them being the layers run forward twice;
    and how many matmuls of those types a backward (reversed) scan computes again."""
    scans: dict[int, int | None] = {}
    backward = 0
    for eqn, outer in walk_eqns(closed):
        loops = [e for e in outer if e.primitive.name == "scan"]
        if eqn.primitive.name != "dot_general" or not loops:
            continue
        if tuple(type_text(v.aval) for v in (*eqn.invars[:2], eqn.outvars[0])) not in repeated:
            continue
        # A forward scan inside a checkpoint is that checkpoint's recomputation, part of the backward pass.
        around = outer[:next(i for i, e in enumerate(outer) if e is loops[-1])]  # what holds the scan (outermost first)
        if any(e.params["reverse"] for e in loops) or any(e.primitive.name == "remat2" for e in around):
            backward += 1
        else:
            scans.setdefault(id(loops[-1]), _called_at(loops[-1], path))
    return list(scans.values()), backward


def _called_at(eqn: Any, path: Path) -> int | None:
    """The outermost line of the learner's file in the traceback that made `eqn`: where its function was called."""
    frames = getattr(getattr(eqn.source_info, "traceback", None), "frames", None) or ()
    lines = [frame.line_num for frame in frames if frame.file_name == str(path)]
    return lines[-1] if lines else None


def _names_text(closed: Any, path: Path) -> str:
    """What the learner's `checkpoint_name`s sit on: a matmul's output (then the spelling is at fault) or not."""
    made = {v: e for e, _ in walk_eqns(closed) for v in e.outvars}
    names = sorted({(str(e.params.get("name")), learner_line(e, path), _named_what(e, made))
                    for e, _ in walk_eqns(closed) if e.primitive.name == "name"}, key=lambda t: t[1] or 0)
    if not names:
        return ""
    listed = ", ".join(f"{n!r}" + (f" (line {line})" if line else "") for n, line, _ in names)
    off = [(n, what) for n, _, what in names if what is not None]
    if off:
        n, what = off[0]
        return (f" Your code names {listed} with `checkpoint_name`, but {n!r} is on {what}, not on a matmul's "
                "output: saving it leaves the backward pass without gelu's input, so x @ w1 is computed again. "
                "Put the name on the matmul's output (x @ w1 + b1, before gelu).")
    return (f" Your code names {listed} with `checkpoint_name`, on matmul outputs: a policy saves a name only when "
            "it lists it spelled the same way (`save_only_these_names(...)`).")


def _named_what(eqn: Any, made: dict[Any, Any]) -> str | None:
    """None when a `name` equation names a matmul's output (or it plus a bias); else what it names, in words."""
    var = eqn.invars[0]
    for _ in range(4):  # through a bias add, a reshape or a convert around the product
        producer = _producer(made, var)
        if producer is None:
            return "a value the grader cannot place"
        if producer.primitive.name == "dot_general":
            return None
        if producer.primitive.name not in ("add", "convert_element_type", "reshape", "broadcast_in_dim"):
            return f"the result of `{producer.primitive.name}` (gelu's output, or a value computed after it)"
        var = next((v for v in producer.invars if getattr(_producer(made, v), "primitive", None) is not None
                    and _producer(made, v).primitive.name == "dot_general"), producer.invars[0])
    return "a value computed from the matmul's output"


def _producer(made: dict[Any, Any], var: Any) -> Any:
    """The equation that made `var`, or None (an input, or a literal, which is not hashable)."""
    try:
        return made.get(var)
    except TypeError:
        return None


@pytest.mark.judge
@pytest.mark.points(2)
def test_memory_budget_min_memory(submission: ModuleType, submission_path: Path) -> None:
    """The compiled `loss_and_grads_min_memory` needs at most 8 MiB of temporary memory"""
    _check_memory(submission, "loss_and_grads_min_memory", MIN_BUDGET, submission_path)


@pytest.mark.judge
@pytest.mark.points(1)
def test_jitted_once(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """Both functions are jitted once: after a first call, calls with the same arguments compile nothing"""
    params, x = _inputs(rng)
    for name in ("loss_and_grads", "loss_and_grads_min_memory"):
        later = later_calls(getattr(submission, name), (params, x), path=submission_path, module=submission)
        check(later.jitted, later.message(name))
