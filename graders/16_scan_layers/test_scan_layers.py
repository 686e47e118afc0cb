"""Grader of `scan_layers`: stacking, values, gradients, one loop of L trips, a program that stays one layer long."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading.feedback import check, fail
from course.grading.judge.arrays import assert_array, assert_is_array
from course.grading.judge.source import describe_exception, learner_location
from course.grading.observe.calls.programs import compile_program, grad_of_sum
from course.grading.observe.calls.reruns import program_values
from course.grading.observe.calls.warmup import after_warmup, watched_calls
from course.grading.observe.traces.jaxprs import traced
from course.grading.observe.traces.loops import jaxpr_size, line_text, loops_in
from course.grading.observe.traces.matmuls import matmuls_of

B, D = 16, 64
TOL = 2e-5  # float32 layers against float64 NumPy: the error stays near 1e-6


def _layers(rng: np.random.Generator, n: int) -> list[dict[str, np.ndarray]]:
    """n random layers whose tanh neither saturates nor fades, so the order of layers shows in the result."""
    return [{"w": (rng.standard_normal((D, D)) * 1.3 / np.sqrt(D)).astype(np.float32),
             "b": (rng.standard_normal(D) * 0.3).astype(np.float32)} for _ in range(n)]


def _stacked(layers: list[dict[str, np.ndarray]]) -> dict[str, jax.Array]:
    """The grader's own stacking, so a mistake in `stack_layers` fails only its own check."""
    return {k: jnp.asarray(np.stack([layer[k] for layer in layers])) for k in ("w", "b")}


def _spec(n: int) -> tuple[dict[str, jax.ShapeDtypeStruct], jax.ShapeDtypeStruct]:
    """Shapes of n stacked layers and of x, for tracing and compiling without data."""
    f32 = jnp.float32
    return ({"w": jax.ShapeDtypeStruct((n, D, D), f32), "b": jax.ShapeDtypeStruct((n, D), f32)},
            jax.ShapeDtypeStruct((B, D), f32))


def _x(rng: np.random.Generator) -> np.ndarray:
    """A random batch of activations (B, D)."""
    return rng.standard_normal((B, D)).astype(np.float32)


def _numpy_forward(layers: list[dict[str, np.ndarray]], x: np.ndarray) -> np.ndarray:
    """The layers in order, in float64."""
    h = x.astype(np.float64)
    for layer in layers:
        h = np.tanh(h @ layer["w"].astype(np.float64) + layer["b"])
    return h


def _rows(n: int) -> str:
    """'1 layer', '3 layers'."""
    return f"{n} layer" if n == 1 else f"{n} layers"


@pytest.mark.judge
@pytest.mark.points(1)
def test_stack_layers(submission: ModuleType, rng: np.random.Generator) -> None:
    """`stack_layers` stacks L layers into w (L, D, D) and b (L, D), layer l at index l"""
    for n in (1, 3):
        layers = _layers(rng, n)
        given = [{k: jnp.asarray(v) for k, v in layer.items()} for layer in layers]
        out = submission.stack_layers(given)
        name = f"stack_layers(<{_rows(n)}>)"
        check(isinstance(out, dict) and set(out) == {"w", "b"},
              f"{name} returned {type(out).__name__}"
              f"{' with keys ' + repr(sorted(out)) if isinstance(out, dict) else ''}: return a dict with the "
              "keys 'w' and 'b', like each layer's.")
        for key, shape in (("w", (n, D, D)), ("b", (n, D))):
            got = assert_is_array(out[key], f"{name}[{key!r}]")
            if tuple(got.shape) != shape:
                fail(f"{name}[{key!r}] has shape {tuple(got.shape)}, expected {shape}: stack the layers on a new "
                     "leading axis (`jnp.stack`), so that entry l along it is layer l.")
            assert_array(got, np.stack([layer[key] for layer in layers]), name=f"{name}[{key!r}]")


def _classify(got: np.ndarray, layers: list[dict[str, np.ndarray]], x: np.ndarray) -> str:
    """What a wrong forward computed instead, when it matches a usual mistake."""
    def near(want: np.ndarray) -> bool:
        return got.shape == want.shape and np.allclose(got, want, rtol=TOL, atol=TOL)

    if len(layers) > 1 and near(_numpy_forward(layers[::-1], x)):
        return " It equals the layers applied in reverse order (the last layer first): layer 0 comes first."
    if len(layers) > 1 and near(_numpy_forward(layers[-1:], x)):
        return (" It equals the last layer applied to x alone. Each layer must take the previous layer's output "
                "as its input: carry the activation from one step to the next.")
    if len(layers) > 1 and near(_numpy_forward(layers[:1], x)):
        return " It equals the first layer alone: the later layers were never applied to its output."
    return ""


@pytest.mark.judge
@pytest.mark.points(2)
def test_forward_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`forward` applies tanh(x @ w[l] + b[l]) for l = 0..L-1, in order"""
    for n in (1, 3, 12):
        layers, x = _layers(rng, n), _x(rng)
        stacked, xj = _stacked(layers), jnp.asarray(x)
        out = submission.forward(stacked, xj)  # as the learner calls it: the judge sees only what it returns
        name = f"forward(<{_rows(n)}>, x)"
        got = assert_is_array(out, name)
        want = _numpy_forward(layers, x)
        if tuple(got.shape) == (n, B, D):
            fail(f"{name} has shape {tuple(got.shape)}, one output per layer: every layer was applied to x itself "
                 "(as `vmap` or `lax.map` over the layers do). The layers form a chain: each takes the previous "
                 f"one's output, and forward returns the last one, of shape {(B, D)}.")
        got_np = np.asarray(got)
        if got_np.shape == want.shape and not np.allclose(got_np, want, rtol=TOL, atol=TOL):
            worst = float(np.max(np.abs(got_np - want)))
            fail(f"{name} is off by up to {worst:.2e} (allowed {TOL:g}).{_classify(got_np, layers, x)}")
        assert_array(got, want.astype(np.float32), name=name, rtol=TOL, atol=TOL)
        _check_program_values(submission, rng, n)


def _check_program_values(submission: ModuleType, rng: np.random.Generator, n: int) -> None:
    """The call just made must return what the programs it ran compute: the grader runs them itself on fresh
    layers and x, apart from the process running the learner's code. A call of an ahead-of-time compiled program
    (which keeps no program to run) is left to the other checks."""
    layers, x = _layers(rng, n), _x(rng)
    name = f"forward(<{_rows(n)}>, x)"
    values = program_values(
        submission.forward, _stacked(layers), jnp.asarray(x), skip_without_programs=False,
        made_outside=f"{name} is not computed by the programs your call ran (or it ran more than 256): its result is "
        "made outside them (by NumPy or Python on the host, say), while the programs only stand beside it. The "
        "forward pass is the scan's work: return what the scan computes, as it is.")
    if values is not None:
        assert_array(values[0], _numpy_forward(layers, x).astype(np.float32), name=f"{name} as the programs your "
                     "call ran compute it, run by the grader on fresh layers and x", rtol=TOL, atol=TOL)


def _numpy_grads(layers: list[dict[str, np.ndarray]], x: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Gradients of sum(forward) with respect to the stacked w and b and to x, by hand in float64."""
    hs = [x.astype(np.float64)]
    for layer in layers:
        hs.append(np.tanh(hs[-1] @ layer["w"].astype(np.float64) + layer["b"]))
    g = np.ones_like(hs[-1])
    dw, db = [], []
    for i in reversed(range(len(layers))):
        gz = g * (1 - hs[i + 1] ** 2)
        dw.append(hs[i].T @ gz)
        db.append(gz.sum(axis=0))
        g = gz @ layers[i]["w"].astype(np.float64).T
    return {"w": np.stack(dw[::-1]), "b": np.stack(db[::-1])}, g


@pytest.mark.judge
@pytest.mark.points(1)
def test_grads_flow(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`jax.grad` goes through `forward`: the gradients of sum(forward(stacked, x)) are right"""
    layers, x = _layers(rng, 3), _x(rng)
    stacked, xj = _stacked(layers), jnp.asarray(x)
    try:  # in the judge, the executor differentiates and runs it; only the gradients come back
        dstacked, dx = grad_of_sum(submission.forward, stacked, xj, argnums=(0, 1))
    except Exception as exc:  # noqa: BLE001 - differentiating the learner's code is what this check tries
        where = learner_location(exc.__traceback__, submission_path)
        raised = describe_exception(exc).rstrip(".")
        fail(f"jax.grad of forward raised {raised}{where}. A `lax.while_loop` (or a `fori_loop` with traced bounds) "
             "has no reverse-mode derivative: use `lax.scan`, or `lax.fori_loop` with Python-int bounds, which "
             "becomes a scan.")
    want, want_x = _numpy_grads(layers, x)
    for key in ("w", "b"):
        assert_array(dstacked[key], want[key].astype(np.float32), name=f"the gradient of sum(forward) for {key!r}",
                     rtol=1e-4, atol=1e-4)
    assert_array(dx, want_x.astype(np.float32), name="the gradient of sum(forward) for x", rtol=1e-4, atol=1e-4)


@pytest.mark.judge
@pytest.mark.points(2)
def test_one_loop_over_layers(submission: ModuleType, submission_path: Path) -> None:
    """Every matmul of `forward` runs inside one loop of L trips (L = 8)"""
    n = 8
    found = matmuls_of(submission.forward, *_spec(n), path=submission_path)
    check(found, "forward runs no matmul at all (no `dot_general` in its jaxpr): compute x @ w[l] for each layer.")
    outside = [m for m in found if not m.loops]
    at_once = [m for m in outside if m.batch > 1 or max(m.lhs.count(","), m.rhs.count(","), m.out.count(",")) > 1]
    if at_once:  # an operand or the result has three dimensions or more: every layer in one matmul
        m = at_once[0]
        fail(f"with L={n}, one matmul multiplies x by all {n} layers at once ({m.describe()}, "
             f"{line_text(m.line, submission_path)}): that applies every layer to x itself, as `vmap` over the "
             "layers does. The layers form a chain: loop over them, one layer per trip.")
    if outside:
        where = line_text(outside[0].line, submission_path)
        fail(f"with L={n}, {len(outside)} matmul(s) run outside any loop ({where}): the layers are written out "
             "one by one, so the program grows with every layer. Put them in one "
             "`lax.scan` over the stacked layers.")
    for m in found:
        trips = [t for _, t, _ in m.loops if t is not None]
        if any(kind == "while" for kind, _, _ in m.loops) or n in trips:
            continue
        kind, length, line = m.innermost_loop() or ("scan", None, None)
        over = f", over the {B} rows of x" if length == B else ""
        fail(f"the loop at {line_text(line, submission_path)} runs {length} times{over}, and holds "
             f"{sum(1 for f in found if f.loops == m.loops)} matmul(s) written out inside it ({m.describe()}). "
             f"It should run L={n} times, one layer per trip, with the activation as its carry.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_jaxpr_size_constant(submission: ModuleType) -> None:
    """`forward`'s jaxpr has the same number of equations at L = 2, 8 and 32"""
    sizes = {n: jaxpr_size(traced(submission.forward, *_spec(n))) for n in (2, 8, 32)}
    if len(set(sizes.values())) > 1:
        listed = ", ".join(f"L={n}: {s}" for n, s in sizes.items())
        fail(f"forward's jaxpr grows with depth ({listed} equations): a Python loop over the layers writes each "
             "layer out again while JAX traces it. `lax.scan` traces its body once, whatever L is.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_compiled_size_constant(submission: ModuleType, submission_path: Path) -> None:
    """The compiled `forward` has the same size at L = 12 and 24 (HLO instructions, within 10%)"""
    # Traced where the code runs, compiled here: the sizes are what XLA makes of the traces.
    traces = {n: traced(submission.forward, *_spec(n)) for n in (12, 24)}
    small, large = (compile_program(traces[n], *_spec(n)).hlo_size for n in (12, 24))
    if large <= 1.1 * small and small <= 1.1 * large:
        return
    listed = f"L=12: {small}, L=24: {large} HLO instructions"
    unrolled = [lp for lp in loops_in(traces[24], path=submission_path)
                if lp.kind == "scan" and lp.length and lp.unroll >= lp.length]
    if unrolled:
        where = line_text(unrolled[0].line, submission_path)
        fail(f"the compiled forward grows with depth ({listed}): the scan at {where} is fully unrolled "
             "(`unroll=True` or `unroll=L`), which hands XLA every layer written out. Keep the "
             "unroll a small constant that divides L (1, 2 or 4).")
    fail(f"the compiled forward grows with depth ({listed}): the loop is unrolled, so XLA gets one copy of the "
         "layer per layer. One `lax.scan` with a small constant unroll compiles to the same program at every depth.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_compiles_once(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`forward` is jitted once: new arrays of the same shapes run your program and compile nothing"""
    cases = [(_stacked(_layers(rng, 4)), jnp.asarray(_x(rng))) for _ in range(4)]
    # The first call is the warm-up. The compiles are reported where the calls ran, and weighed here
    # against the programs' own texts: a call that runs a program no earlier call ran compiled it.
    later = after_warmup(watched_calls(submission.forward, cases, module=submission, path=submission_path))
    if later.compiles:
        why = (f"; each call builds {later.built // 3 or 1} new jax.jit wrapper(s), which JAX has never seen"
               if later.built else "")
        fail(f"3 more calls of forward with new arrays of the same shapes compiled {later.compiles} time(s) "
             f"({later.names}){why}. Build the jitted function once, at module scope.")
    # A function that cannot be traced (a host read before its jit) may still run a jit: not said of it.
    check(later.ran_jit,
          "forward ran no jitted program of yours: its layers ran op by op. Jit it once at module scope "
          "(`@jax.jit`, or `forward = jax.jit(...)`), so a call runs one compiled program.")
    check(not later.built,
          f"3 more calls of forward built {later.built} new jax.jit wrapper(s): the jit is made inside the call, "
          "a new function object each time, which JAX must look up (or trace) again before it runs. Jit it once "
          "at module scope (`@jax.jit`, or `forward = jax.jit(...)`).")
