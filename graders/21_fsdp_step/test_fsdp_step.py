"""Grader for `fsdp_step`: parameters sharded on their leading axis, loss and gradients right, the batch kept
sharded, each weight gathered whole, and every gradient reduce-scattered back to the device that owns it."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading import (
    CheckFailed,
    Traced,
    assert_array,
    assert_is_array,
    assert_sharding,
    call_explained,
    describe_value,
    fail,
    hlo_collective_shapes,
    jaxpr_collectives,
    learner_line,
    line_text,
    per_device_bytes,
    shard_mismatches,
    sharding_text,
    spec_text,
    traced_once,
    walk_eqns,
)

AXIS = "fsdp"
DEVICES = 8
NAMES = ("w1", "b1", "w2", "b2")
FIXED = (24, 40, 16, 48)  # (D, H, O, B): no two parameters, batch arrays or activations of one size
REDUCING = ("psum", "psum_invariant")


def _mesh() -> jax.sharding.Mesh:
    """The grader's own 1-D Explicit mesh of 8 devices named 'fsdp'."""
    return jax.make_mesh((DEVICES,), (AXIS,), axis_types=(AxisType.Explicit,))


def _shapes(d: int, h: int, o: int) -> dict[str, tuple[int, ...]]:
    """The parameter shapes for input width d, hidden width h and output width o."""
    return {"w1": (d, h), "b1": (h,), "w2": (h, o), "b2": (o,)}


def _sizes(run_seed: int) -> list[tuple[int, int, int, int]]:
    """(D, H, O, B), all multiples of 8: the smallest, the fixed one, and one drawn for the run."""
    rng = np.random.default_rng(run_seed)
    drawn = tuple(DEVICES * int(n) for n in rng.integers(1, 6, size=4))
    return [(8, 8, 8, 8), FIXED, drawn]


def _host(rng: np.random.Generator, d: int, h: int, o: int, b: int) -> tuple[dict[str, np.ndarray], tuple]:
    """float32 parameters scaled so about half the hidden units are active, and a batch (x, y).

    Each b1 entry is nudged until no pre-activation lies within 1e-3 of relu's kink, so float32 and
    float64 always agree on which units are on and the gradients compare for every seed.
    """
    params = {"w1": rng.standard_normal((d, h)) / np.sqrt(d), "b1": rng.normal(0.1, 0.5, h),
              "w2": rng.standard_normal((h, o)) / np.sqrt(h), "b2": rng.normal(0.0, 0.5, o)}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    x, y = (rng.standard_normal(s).astype(np.float32) for s in ((b, d), (b, o)))
    pre = x.astype(np.float64) @ params["w1"]
    for j in range(h):
        while np.abs(pre[:, j] + params["b1"][j]).min() < 1e-3:
            params["b1"][j] += np.float32(2e-3)
    return params, (x, y)


def _placed(mesh: jax.sharding.Mesh, params: dict[str, np.ndarray], batch: tuple) -> tuple[dict, tuple]:
    """Everything placed P('fsdp') by the grader, so a wrong `shard_params` fails only its own check."""
    spec = NamedSharding(mesh, P(AXIS))
    return {k: jax.device_put(v, spec) for k, v in params.items()}, tuple(jax.device_put(v, spec) for v in batch)


# Hidden layers other than the task's that a file may compute by mistake: {form: the layer, in words}.
FORMS = {"bias_after_relu": "relu(x @ w1) + b1, the bias added after the relu",
         "no_relu": "x @ w1 + b1, with no relu"}
MODEL = ("h = relu(x @ w1 + b1), out = h @ w2 + b2 and the mean of (out - y) ** 2 over all B * O elements, every "
         "device using the whole w1, b1, w2 and b2 on its own rows of the batch")


def _reference(params: dict[str, np.ndarray], batch: tuple, form: str = "task") -> tuple[float, dict[str, np.ndarray]]:
    """The loss and its gradients, by hand in float64 NumPy, for the task's model or one of FORMS."""
    p = {k: v.astype(np.float64) for k, v in params.items()}
    x, y = (v.astype(np.float64) for v in batch)
    after = form == "bias_after_relu"
    pre = x @ p["w1"] + (0.0 if after else p["b1"])
    on = np.ones(pre.shape, bool) if form == "no_relu" else pre > 0
    h = np.where(on, pre, 0.0) + (p["b1"] if after else 0.0)
    r = h @ p["w2"] + p["b2"] - y
    dout = 2.0 * r / r.size
    dh = dout @ p["w2"].T
    dpre = dh * on
    grads = {"w1": x.T @ dpre, "b1": dh.sum(0) if after else dpre.sum(0), "w2": h.T @ dout, "b2": dout.sum(0)}
    return float(np.mean(r**2)), grads


def _model_why(params: dict[str, np.ndarray], batch: tuple, what: str,
               matches: Callable[[float, dict[str, np.ndarray]], bool]) -> str:
    """The other hidden layer whose loss and gradients `matches` accepts, named with the task's model; else ''.
    `what` opens the sentence: "That is the loss", "They are the gradients"."""
    for form, layer in FORMS.items():
        if matches(*_reference(params, batch, form)):
            return f" {what} of a model whose hidden layer is {layer}. The task's model is {MODEL}."
    return ""


def _run(sub: ModuleType, path: Path, mesh: jax.sharding.Mesh, params: dict, batch: tuple) -> tuple[Traced, Any, dict]:
    """`loss_and_grads(params, batch, mesh)` traced, compiled and run once; (the case, loss, grads)."""
    case = traced_once(sub.loss_and_grads, params, batch, static=(mesh,), name="`loss_and_grads`", path=path)
    return case, *_pair(case.out)


def _call(sub: ModuleType, path: Path, mesh: jax.sharding.Mesh, params: dict, batch: tuple) -> tuple[Any, dict]:
    """`loss_and_grads(params, batch, mesh)` run under `jax.jit` (in the judge: jitted and run beside their code),
    a tracing mistake told in the course's words, as `test_traceable` tells it."""
    return _pair(call_explained(sub.loss_and_grads, params, batch, mesh, name="`loss_and_grads`", path=path))


def _pair(out: Any) -> tuple[Any, dict]:
    """(loss, grads) of what `loss_and_grads` returned, failing unless it is an array and a dict like params."""
    if not isinstance(out, tuple | list) or len(out) != 2:
        fail(f"`loss_and_grads` returned {describe_value(out)}; it should return a pair (loss, grads).")
    loss, grads = out
    assert_is_array(loss, "the loss")
    if not isinstance(grads, dict) or set(grads) != set(NAMES):
        keys = sorted(grads) if isinstance(grads, dict) else describe_value(grads)
        fail(f"the grads returned by `loss_and_grads` are {keys}; they should be a dict like params, "
             f"with keys {sorted(NAMES)}.")
    return loss, grads


def _fixed_call(sub: ModuleType, path: Path, rng: np.random.Generator) -> tuple[Any, dict]:
    """The fixed-size case, called as the learner wrote it: (loss, grads)."""
    mesh = _mesh()
    return _call(sub, path, mesh, *_placed(mesh, *_host(rng, *FIXED)))


def _fixed_case(sub: ModuleType, path: Path, rng: np.random.Generator) -> tuple[Traced, Any, dict, dict]:
    """The fixed-size case, with the parameters' global shapes."""
    d, h, o, b = FIXED
    mesh = _mesh()
    params, batch = _placed(mesh, *_host(rng, d, h, o, b))
    case, loss, grads = _run(sub, path, mesh, params, batch)
    return case, loss, grads, _shapes(d, h, o)


@pytest.mark.judge
@pytest.mark.points(2)
def test_shard_params(submission: ModuleType, rng: np.random.Generator) -> None:
    """`shard_params` keeps every value and shards every leaf P('fsdp') on its leading axis: 1/8 per device."""
    mesh = _mesh()
    want = NamedSharding(mesh, P(AXIS))
    for d, h, o, b in _sizes(int(rng.integers(1 << 30)))[1:]:
        params, _ = _host(rng, d, h, o, b)
        got = submission.shard_params({k: jax.device_put(v) for k, v in params.items()}, mesh)
        if not isinstance(got, dict) or set(got) != set(NAMES):
            fail(f"`shard_params` returned {describe_value(got)}; it should return a dict with the keys of "
                 f"params, {sorted(NAMES)}.")
        for k in NAMES:
            leaf = assert_array(got[k], params[k], name=f"`shard_params(...)[{k!r}]`")
            lead = "rows" if leaf.ndim == 2 else "elements"
            assert_sharding(leaf, want, name=f"`shard_params(...)[{k!r}]` of shape {leaf.shape}",
                            hint=f"FSDP cuts every leaf on its leading axis: each device keeps 1/8 of the "
                                 f"{lead}, {spec_text(P(AXIS))} (a matrix sharded on its columns is tensor "
                                 "parallelism, and a replicated leaf is plain data parallelism, 8 full copies).")
        held, total = per_device_bytes(got), sum(v.nbytes for v in params.values())
        if held * DEVICES != total:
            fail(f"each device holds {held} bytes of the sharded params; FSDP keeps total / 8 = "
                 f"{total // DEVICES} of the {total}.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_traceable(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """`loss_and_grads` can be traced and compiled (under `jax.jit`) and returns (loss, grads like params)."""
    _fixed_case(submission, submission_path, rng)


def _ratio_why(got: float, want: float, what: str, b: int = 0, o: int = 0) -> str:
    """A guess at the mistake from how far off a value is: a divisor other than the global count B * O."""
    counts = {"B * O": b * o, "B": b, "O": o, "B / 8": b // DEVICES, "B / 8 * O": b // DEVICES * o, "1": 1}
    for name, count in counts.items():
        ratio = b * o / count if count else 0
        if b and o and ratio not in (1, DEVICES) and np.isclose(got, ratio * want, rtol=1e-3):
            return (f" That is {ratio:g} times the right {what}, the sum of squared errors divided by {name} = "
                    f"{count} instead of by the number of elements B * O = {b * o}: the mean is over every "
                    "element of every device's rows (inside shard_map, psum the sum and divide by the global count).")
    if np.isclose(got, DEVICES * want, rtol=1e-3):
        return (f" That is {DEVICES} times the right {what}: each device took the mean of its own rows and "
                "the 8 local means were added (a psum), a sum over devices. Divide by the global count "
                "B * O (inside shard_map, `y.size` is one device's count), or average the means with pmean.")
    if np.isclose(got, want / DEVICES, rtol=1e-3):
        return f" That is the right {what} divided by {DEVICES}: the count was divided in twice."
    return ""


@pytest.mark.judge
@pytest.mark.points(2)
def test_loss_values(submission: ModuleType, submission_path: Path, rng: np.random.Generator, run_seed: int) -> None:
    """The loss is mean((relu(x @ w1 + b1) @ w2 + b2 - y) ** 2) over all B * O elements, a float32 scalar."""
    mesh = _mesh()
    for d, h, o, b in _sizes(run_seed):
        params, batch = _host(rng, d, h, o, b)
        want, _ = _reference(params, batch)
        loss, _ = _call(submission, submission_path, mesh, *_placed(mesh, params, batch))
        name = f"the loss for D, H, O, B = {d}, {h}, {o}, {b}"
        _loss_agrees(loss, params, batch, name)
        if loss.shape == () and not np.isclose(float(loss), want, rtol=1e-4):
            if len({b, o, DEVICES}) < 3:  # a divisor of B, of O and a sum of 8 local means look alike here
                telling = _telling_loss(submission, submission_path, rng)
                name, loss, want, b, o, params, batch = telling or (name, loss, want, b, o, params, batch)
            got = float(loss)
            why = _ratio_why(got, want, "loss", b, o) or _model_why(
                params, batch, "That is the loss", lambda other, _, v=got: bool(np.isclose(v, other, rtol=1e-4))) or (
                f" Compare your code with the task's model: {MODEL}.")
            fail(f"{name} is {got:.6g}, expected {want:.6g}.{why}")
        assert_array(loss, np.float32(want), name=name, rtol=1e-4, atol=1e-6)
        if shard_mismatches(loss, np.float32(want), rtol=1e-4, atol=1e-6):
            fail(f"{name} is right on some devices and not on others, though it claims to be replicated.")


def _telling_loss(submission: ModuleType, path: Path, rng: np.random.Generator) -> tuple | None:
    """(name, loss, want, B, O, params, batch) at the fixed sizes, where B, O and the device count differ, if the
    loss is wrong."""
    params, batch = _host(rng, *FIXED)
    want, _ = _reference(params, batch)
    loss, _ = _call(submission, path, _mesh(), *_placed(_mesh(), params, batch))
    if loss.shape != () or np.isclose(float(loss), want, rtol=1e-4):
        return None
    _, _, o, b = FIXED
    return f"the loss for D, H, O, B = {', '.join(map(str, FIXED))}", loss, want, b, o, params, batch


def _loss_agrees(loss: jax.Array, params: dict[str, np.ndarray], batch: tuple, name: str) -> None:
    """Fail when the devices hold different losses, saying whether each holds the mean of its own rows only."""
    if loss.shape != ():
        return
    held = [float(np.asarray(s.data)) for s in sorted(loss.addressable_shards, key=lambda s: s.device.id)]
    if np.allclose(held, held[0], rtol=1e-6, atol=0.0):
        return
    x, y = batch
    rows = x.shape[0] // DEVICES
    own = [_reference(params, (x[i * rows:(i + 1) * rows], y[i * rows:(i + 1) * rows]))[0] for i in range(DEVICES)]
    mine = " (each the mean of that device's own rows)" if np.allclose(held, own, rtol=1e-4) else ""
    fail(f"{name} is not one number: the 8 devices hold {', '.join(f'{v:.4g}' for v in held[:4])}, ...{mine}, "
         "while the result claims to be replicated. Only a psum (or pmean) over 'fsdp' combines the devices' "
         "partial results into one loss.")


@pytest.mark.judge
@pytest.mark.points(3)
def test_grads_values(submission: ModuleType, submission_path: Path, rng: np.random.Generator, run_seed: int) -> None:
    """Every gradient matches float64 NumPy, in the block each device holds."""
    mesh = _mesh()
    for d, h, o, b in _sizes(run_seed):
        params, batch = _host(rng, d, h, o, b)
        _, want = _reference(params, batch)
        _, grads = _call(submission, submission_path, mesh, *_placed(mesh, params, batch))
        for k in NAMES:
            name = f"grads[{k!r}] for D, H, O, B = {d}, {h}, {o}, {b}"
            try:
                _grad_close(assert_is_array(grads[k], name), want[k], name, ambiguous=len({b, o, DEVICES}) < 3)
            except CheckFailed as exc:
                fail(f"{exc}{_grads_model_why(grads, want, params, batch)}")


def _grads_model_why(grads: dict, want: dict[str, np.ndarray], params: dict[str, np.ndarray], batch: tuple) -> str:
    """The other model whose gradients every one of `grads` equals, in words; '' when none does (or a shape is off)."""
    got = {k: np.asarray(grads[k], np.float64) for k in NAMES if isinstance(grads[k], jax.Array)}
    if set(got) != set(NAMES) or any(got[k].shape != want[k].shape for k in NAMES):
        return ""
    return _model_why(params, batch, "They are the gradients", lambda _, other: all(
        np.allclose(got[k], other[k], rtol=1e-3, atol=1e-4 * float(np.abs(other[k]).max()) + 1e-7) for k in NAMES))


def _grad_close(got: jax.Array, want: np.ndarray, name: str, ambiguous: bool = False) -> None:
    """Fail naming the devices whose block of a gradient is wrong, and how far off the whole is."""
    atol = 1e-4 * float(np.abs(want).max()) + 1e-7
    if got.dtype != np.float32:
        fail(f"{name} is {got.dtype}; gradients of float32 parameters are float32.")
    if got.shape != want.shape:
        fail(f"{name} has shape {got.shape}, expected {want.shape}: a gradient has its parameter's shape.")
    bad = shard_mismatches(got, want, rtol=1e-3, atol=atol)
    if not bad:
        return
    whole = np.asarray(got).astype(np.float64)
    why = ""
    if np.allclose(whole, DEVICES * want, rtol=1e-3, atol=DEVICES * atol) and ambiguous:
        why = (f" It is {DEVICES} times the gradient: the loss was divided by a count {DEVICES} times too small "
               "(here B, O and the device count are alike: a mean over B or O alone, or 8 local means added). "
               "Take the mean over all B * O elements (divide by the global count).")
    elif np.allclose(whole, DEVICES * want, rtol=1e-3, atol=DEVICES * atol):
        why = (f" It is {DEVICES} times the gradient: a sum over the 8 devices of each one's gradient of its "
               "own local mean. Take the mean over all B * O elements (divide by the global count).")
    elif np.allclose(whole, want / DEVICES, rtol=1e-3, atol=atol):
        why = f" It is the gradient divided by {DEVICES}."
    where = ", ".join(f"device {m.device} {m.block}" for m in bad[:3]) + (" and more" if len(bad) > 3 else "")
    fail(f"{name} differs from the float64 reference on {len(bad)} of the {DEVICES} devices' blocks ({where}; "
         f"largest error {max(m.worst for m in bad):.3g}).{why}")


@pytest.mark.judge
@pytest.mark.points(1)
def test_loss_replicated(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The loss is one scalar held whole by every device (P())."""
    mesh = _mesh()
    loss, _ = _fixed_call(submission, submission_path, rng)
    if loss.shape != ():
        fail(f"the loss has shape {loss.shape}, sharded {sharding_text(loss)}; it is one scalar that every "
             "device holds whole.")
    assert_sharding(loss, NamedSharding(mesh, P()), name="the loss",
                    hint="Reduce the local sums over 'fsdp' (psum or pmean, or jnp.mean in explicit mode).")


@pytest.mark.judge
@pytest.mark.points(1)
def test_grads_sharded(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Every gradient comes back sharded like its parameter, P('fsdp'): each device keeps 1/8 of it."""
    mesh = _mesh()
    _, grads = _fixed_call(submission, submission_path, rng)
    for k in NAMES:
        assert_sharding(grads[k], NamedSharding(mesh, P(AXIS)), name=f"grads[{k!r}]",
                        hint="In FSDP each device keeps only its 1/8 of every gradient, the part its optimizer "
                             "updates. Take the gradient with respect to the sharded params themselves, not a "
                             "gathered copy, so it comes back sharded like them.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_batch_stays_sharded(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The devices gather only whole parameters: every all-gather has a parameter's shape, and nothing else moves."""
    case, _, _, shapes = _fixed_case(submission, submission_path, rng)
    d, h, o, b = FIXED
    batch = {"x": (b, d), "y": (b, o)}
    # Sizes, not shapes: a gather without tiled=True gathers (8, D/8, H), and XLA may transpose.
    wanted = {math.prod(s) for s in shapes.values()}
    for op in hlo_collective_shapes(case.hlo):
        if op.op in ("all-to-all", "collective-permute"):
            fail(f"the compiled `loss_and_grads` runs an {op.op} ({op.text()}): FSDP needs only all-gathers of "
                 "the weights and reductions of the gradients; the batch stays where it is.")
        if op.op == "all-gather" and op.elements not in wanted:
            what = next((f"the whole batch {k}" for k, s in batch.items() if math.prod(s) == op.elements),
                        "not a whole parameter")
            fail(f"the compiled `loss_and_grads` all-gathers {op.text()}, {what}. In FSDP each device "
                 "keeps its own rows of the batch and gathers only the weights, one whole parameter at a "
                 f"time (shapes {', '.join(f'{k} {s}' for k, s in shapes.items())}).")


@pytest.mark.judge
@pytest.mark.points(2)
def test_grads_reduce_scattered(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Gradients are reduce-scattered, never psummed whole, and the loss crosses the devices as one number."""
    case, _, _, shapes = _fixed_case(submission, submission_path, rng)
    whole = {math.prod(s): k for k, s in shapes.items()}
    padded = _padded_psums(case.jaxpr, submission_path)
    for c in jaxpr_collectives(case.jaxpr, path=submission_path):
        hits = [whole[math.prod(s)] for s in c.shapes if math.prod(s) in whole]
        if c.primitive in REDUCING and hits and c.line in padded:
            fail(f"`loss_and_grads` makes a {c.lax_name} of the whole {', '.join(sorted(hits))} at "
                 f"{line_text(c.line, submission_path)}, of a shard padded with zeros (`{padded[c.line]}`): that "
                 "gathers the parameter by adding 8 mostly-zero arrays, an all-reduce with 8 times the traffic "
                 "of an all-gather, and its gradient is not reduce-scattered back to the owner. Gather with "
                 "`lax.all_gather(p, 'fsdp', tiled=True)`, whose gradient `jax.grad` reduce-scatters for you.")
        if c.primitive in REDUCING and hits:
            plural = "s" if len(hits) > 1 else ""
            fail(f"`loss_and_grads` makes a {c.lax_name} of the whole {', '.join(sorted(hits))} gradient{plural} "
                 f"at {line_text(c.line, submission_path)}: every device receives the full sum, 8 times what "
                 "it keeps. Reduce-scatter instead: `lax.psum_scatter(g, 'fsdp', scatter_dimension=0, "
                 "tiled=True)`, which `jax.grad` writes for you as the transpose of a tiled all_gather.")
    total = sum(int(np.prod(s)) for s in shapes.values())
    reduced = [op for op in hlo_collective_shapes(case.hlo) if op.op == "all-reduce"]
    moved = sum(op.elements for op in reduced)
    if moved > total + 1:
        listed = ", ".join(op.text() for op in reduced[:6])
        fail(f"the compiled `loss_and_grads` all-reduces {moved} floats per device ({listed}), more than the "
             f"{total} of all the parameters plus the loss: something besides the gradients is summed whole "
             "across devices.")
    _loss_reduced_as_one_number(reduced, whole)


def _loss_reduced_as_one_number(reduced: list[Any], whole: dict[int, str]) -> None:
    """Besides whole gradients (named above), the only thing summed across devices is the loss, one number."""
    for op in reduced:
        if op.elements > 1 and op.elements not in whole:
            fail(f"the compiled `loss_and_grads` all-reduces {op.text()}, {op.elements} floats per device that "
                 "are neither a parameter nor the loss: are the squared errors summed across devices "
                 "before they are summed on each device? Reduce each device's errors to one number first "
                 "(`jnp.sum`), then psum that scalar: one float crosses the devices instead of "
                 f"{op.elements}.")


_PADDING = frozenset({"pad", "dynamic_update_slice", "concatenate", "scatter", "scatter-add", "scatter_add"})


def _padded_psums(closed: Any, path: Path) -> dict[int | None, str]:
    """{learner's line: padding primitive} for each psum whose operand was made by padding a shard with zeros."""
    made = {v: e for e, _ in walk_eqns(closed) for v in e.outvars}
    found: dict[int | None, str] = {}
    for eqn, _ in walk_eqns(closed):
        if eqn.primitive.name not in REDUCING:
            continue
        for var in eqn.invars:
            try:
                producer = made.get(var)
            except TypeError:  # a literal
                continue
            if producer is not None and producer.primitive.name in _PADDING:
                found.setdefault(learner_line(eqn, path), producer.primitive.name)
    return found
