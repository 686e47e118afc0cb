"""Grader for `sharded_donated_step`: values, params consumed and grads kept, shardings, aliasing, compiles."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading import (
    CheckFailed,
    JitCall,
    Source,
    assert_array,
    assert_sharding,
    check,
    consumed_leaves,
    describe_exception,
    describe_value,
    differing_copies,
    fail,
    jit_calls,
    per_device_bytes,
    program_values,
    sharding_text,
    unreported_compiles,
    watched_calls,
)

LAYOUT = {"w1": ((16, 32), P("x", "y")), "b1": ((32,), P("y")), "w2": ((32, 8), P("y", None)), "scale": ((), P())}
NAMES = ("params", "grads", "lr")


def _mesh() -> jax.sharding.Mesh:
    """The 2x4 Explicit mesh the parameters live on."""
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


def _tree(rng: np.random.Generator, mesh: jax.sharding.Mesh) -> tuple[dict[str, jax.Array], dict[str, np.ndarray]]:
    """Random float32 leaves laid out as LAYOUT on `mesh`, each in a fresh buffer, and their NumPy values."""
    host = {k: rng.standard_normal(shape).astype(np.float32) for k, (shape, _) in LAYOUT.items()}
    placed = {k: jax.device_put(v, NamedSharding(mesh, LAYOUT[k][1])) for k, v in host.items()}
    return placed, host


def _lr(rng: np.random.Generator) -> float:
    """A learning rate, a Python float."""
    return float(rng.uniform(1e-3, 0.5))


def _step(sub: ModuleType, params: dict[str, jax.Array], grads: dict[str, jax.Array], lr: float) -> Any:
    """Call `sgd_step` and wait for it, so that consumed inputs are already marked."""
    return jax.block_until_ready(sub.sgd_step(params, grads, lr))


def _as_dict(out: Any) -> dict[str, Any]:
    """The step's result, failing unless it is a dict with the keys of params."""
    if not isinstance(out, dict):
        fail(f"`sgd_step` returned {describe_value(out)}; it should return a dict with the keys of params.")
    check(set(out) == set(LAYOUT), f"`sgd_step` returned keys {sorted(out)}; expected those of params, "
                                   f"{sorted(LAYOUT)}.")
    return out


@pytest.mark.judge
@pytest.mark.points(2)
def test_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`sgd_step` returns {k: params[k] - lr * grads[k]} in float32, for three learning rates."""
    mesh = _mesh()
    for _ in range(3):
        (params, p), (grads, g), lr = _tree(rng, mesh), _tree(rng, mesh), _lr(rng)
        out = _as_dict(_step(submission, params, grads, lr))
        for k in LAYOUT:
            name = f"the new params[{k!r}] for lr = {lr:.4g}"
            try:
                assert_array(out[k], p[k] - np.float32(lr) * g[k], name=name, rtol=1e-6, atol=1e-6)
            except CheckFailed as exc:
                fail(f"{exc}.{_why_values(np.asarray(out[k]), p[k], g[k], lr)}")
        _check_program_values(submission, rng, mesh, lr)


def _check_program_values(submission: ModuleType, rng: np.random.Generator, mesh: jax.sharding.Mesh,
                          lr: float) -> None:
    """The new params of the call just made must be what the programs it ran compute: the grader runs them itself
    on fresh params and grads (the same `lr`), apart from the process running the learner's code. A call that ran
    no program, or an ahead-of-time compiled one, is left to the donation checks."""
    (params, p), (grads, g) = _tree(rng, mesh), _tree(rng, mesh)
    expected = jax.tree_util.tree_leaves({k: p[k] - np.float32(lr) * g[k] for k in LAYOUT})
    values = program_values(
        submission.sgd_step, params, grads, lr, needed=len(expected), count=len(expected),
        made_outside="the new params are not all computed by the programs your call of `sgd_step` ran from "
        "`params`, `grads` and `lr`: some are made outside them (by NumPy or Python), while a donating program "
        "only stands beside. Donation saves memory only when the step's own output takes over each param's "
        "buffer, so the update must be the jitted step's output, returned as it is.")
    if values is None:
        return
    for k, value, want in zip(sorted(LAYOUT), values, expected, strict=True):
        assert_array(value, want, name=f"params[{k!r}] as the programs your call ran compute it, run by the "
                     f"grader on fresh params and grads (lr = {lr:.4g})", rtol=1e-6, atol=1e-6)


def _why_values(got: np.ndarray, p: np.ndarray, g: np.ndarray, lr: float) -> str:
    """A guess at what the learner computed instead, from the values they returned."""
    if got.shape != p.shape or got.dtype != np.float32:
        return ""
    guesses = {
        " That is params + lr * grads: the step must go against the gradient.": p + np.float32(lr) * g,
        " That is the update computed in bfloat16 and cast back: it keeps only about 3 significant digits, "
        "so small updates vanish. Compute in float32.": _bf16(_bf16(p) - _bf16(_bf16(np.float32(lr)) * _bf16(g))),
        " That is params - grads: lr was left out.": p - g,
    }
    for why, value in guesses.items():
        if np.allclose(got, value, rtol=1e-2, atol=1e-2):
            return why
    return ""


def _bf16(x: np.ndarray) -> np.ndarray:
    """`x` rounded to bfloat16 and back to float32, as JAX would compute it."""
    return np.asarray(jnp.asarray(x, jnp.bfloat16).astype(jnp.float32))


def _jit_calls(sub: ModuleType, mesh: jax.sharding.Mesh, rng: np.random.Generator) -> list[JitCall]:
    """The jitted calls `sgd_step` makes on fresh arrays, traced where it runs, what each reuses read here from
    its programs' texts; failing in the learner's words when it cannot be traced."""
    params, grads, lr = _tree(rng, mesh)[0], _tree(rng, mesh)[0], _lr(rng)
    try:
        return jit_calls(sub.sgd_step, params, grads, lr)
    except CheckFailed:
        raise
    except Exception as exc:  # noqa: BLE001 - the learner's code may not trace; say so in their words
        fail(f"`sgd_step` could not be traced to inspect its jitted calls: it raised {describe_exception(exc)}. "
             "Keep the step traceable: no NumPy conversions or Python branches on values.")


def _leaf(source: Source) -> str | None:
    """The argument leaf a jitted call's input is (params first, then grads, as JAX flattens them), or None
    when it is a value computed from one, or from none."""
    leaves = [f"{tree}[{k!r}]" for tree in NAMES[:2] for k in sorted(LAYOUT)]
    if source.via is None and source.arg is not None and 0 <= source.arg < len(leaves):
        return leaves[source.arg]
    return None


def _asked(calls: list[JitCall]) -> list[str]:
    """The argument leaves the step's jitted calls ask to donate, themselves and not a copy."""
    return [leaf for c in calls for d, s in zip(c.donated, c.sources, strict=True) if d and (leaf := _leaf(s))]


@pytest.mark.judge
@pytest.mark.points(1)
def test_params_consumed(submission: ModuleType, rng: np.random.Generator) -> None:
    """Every leaf of params is consumed: donated, its buffer is where the step's program writes the new param."""
    mesh = _mesh()
    (params, _), (grads, _), lr = _tree(rng, mesh), _tree(rng, mesh), _lr(rng)
    _step(submission, params, grads, lr)
    gone = consumed_leaves(params, "params")
    alive = [f"params[{k!r}]" for k in sorted(LAYOUT) if f"params[{k!r}]" not in gone]
    calls = _jit_calls(submission, mesh, rng)
    if not alive:
        _check_reused(calls)
        return
    verb = "is" if len(alive) == 1 else "are"
    asked = _asked(calls)
    if asked and not any(leaf.startswith("params") for leaf in asked):
        fail(f"{', '.join(alive)} {verb} still alive after the call: your step donates {asked[0]}"
             f"{' and more' if len(asked) > 1 else ''}, not params. Donate argument 0, params: donate_argnums=0.")
    donating = [c for c in calls if any(c.donated)]
    if donating:
        call, full = max(donating, key=lambda c: c.alias_bytes), per_device_bytes(params)
        if call.alias_bytes == full:
            fail(f"{', '.join(alive)} {verb} still alive after the call, although `{call.name}` donates and "
                 "reuses every params buffer it is given: so what it received was a copy (jnp.copy, jnp.array, "
                 "p + 0). The copy needs new buffers on every device, which is what donation should save; "
                 "pass params itself.")
        fail(f"{', '.join(alive)} {verb} still alive after the call: `{call.name}` asks for donations, but its "
             f"outputs can take only {call.alias_bytes} of {full} bytes per device, so JAX kept the rest. An "
             "output reuses a param's buffer only with the same dtype, shape and sharding.")
    fail(f"{', '.join(alive)} {verb} still alive after the call: {'not every' if gone else 'no'} leaf of params "
         "was donated. Build the step with jax.jit(..., donate_argnums=0) at module scope, and return float32 "
         "results sharded like params.")


def _check_reused(calls: list[JitCall]) -> None:
    """params being gone is reported by the process that ran the step; a program compiled for the step must
    also write an output into each param's own buffer, as its text shows, for that to be donation."""
    reused = {_leaf(c.sources[i]) for c in calls for i in c.reused}
    lost = [f"params[{k!r}]" for k in sorted(LAYOUT) if f"params[{k!r}]" not in reused]
    if lost:
        fail(f"{', '.join(lost)} {'was' if len(lost) == 1 else 'were'} deleted by the step, but no jitted call of "
             "yours writes a new param into its buffer: deleting an array is not donating it. Build the step "
             "with jax.jit(..., donate_argnums=0) and pass params itself, so that XLA reuses its buffers.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_grads_not_donated(submission: ModuleType, rng: np.random.Generator) -> None:
    """No leaf of grads is consumed, nor asked to be donated."""
    mesh = _mesh()
    (params, _), (grads, _), lr = _tree(rng, mesh), _tree(rng, mesh), _lr(rng)
    _step(submission, params, grads, lr)
    gone = consumed_leaves(grads, "grads")
    if gone:
        fail(f"{', '.join(gone)} {'was' if len(gone) == 1 else 'were'} consumed by the step: you donated "
             "grads. The caller may still need them (to log a norm, or accumulate), and the new params "
             "should reuse the old params' buffers, not the gradients'. Donate argument 0 only.")
    calls = _jit_calls(submission, mesh, rng)
    asked = [leaf for leaf in _asked(calls) if leaf.startswith("grads")]
    if asked:
        warned = next((f" (JAX warns: \"{c.not_usable[0]}\")" for c in calls if c.not_usable), "")
        fail(f"your step asks to donate {', '.join(asked)}{warned}. Each output can reuse one buffer, and the "
             "params already fill every output, so the grads' donation is wasted, and on an Explicit mesh "
             "JAX refuses it with a warning. Donate params only: donate_argnums=0.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_output_sharding(submission: ModuleType, rng: np.random.Generator) -> None:
    """Each new param keeps the sharding of the param it replaces."""
    mesh = _mesh()
    (params, _), (grads, _), lr = _tree(rng, mesh), _tree(rng, mesh), _lr(rng)
    before = {k: v.sharding for k, v in params.items()}
    out = _as_dict(_step(submission, params, grads, lr))
    for k in LAYOUT:
        assert_sharding(out[k], before[k], name=f"the new params[{k!r}]",
                        hint="An elementwise update keeps its input's sharding by itself; forcing another one "
                             "(out_shardings, reshard) moves data between devices and stops the new value "
                             "from reusing the old buffer.")
        # Every device's block crosses to the judge, so copies that differ still differ here.
        differ = differing_copies(out[k])
        check(not differ, f"the new params[{k!r}] is sharded {sharding_text(out[k])}, but the devices that should "
                          f"hold the same copy of it hold different values: {differ}. Every device's copy must be "
                          "the update; reading the array whole shows one copy only.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_alias_bytes(submission: ModuleType, rng: np.random.Generator) -> None:
    """The compiled step reuses every params shard: its program aliases one device's params bytes (548)."""
    mesh = _mesh()
    calls = _jit_calls(submission, mesh, rng)
    if not calls:
        fail("found no function made by jax.jit that `sgd_step` calls with (params, grads, lr): make `sgd_step` "
             "itself the jitted step, or have it call one built once at module scope.")
    call = max(calls, key=lambda c: (c.alias_bytes, any(c.donated)))
    want = per_device_bytes(_tree(rng, mesh)[0])
    if call.alias_bytes == want:
        return
    dtypes = sorted({str(o.dtype) for o in jax.tree_util.tree_leaves(call.out_info) if o.dtype != np.float32})
    why = (f" Some outputs are {', '.join(dtypes)}, not float32: a buffer can only be reused by an output of "
           "its own dtype, shape and sharding, so XLA dropped those donations without a word." if dtypes else
           " Outputs reuse a donated buffer only when dtype, shape and sharding all match the param's.")
    fail(f"`{call.name}` compiles to a program that reuses {call.alias_bytes} bytes per device; each device holds "
         f"{want} bytes of params shards (w1 256, b1 32, w2 256, scale 4), and all of them should be reused.{why}")


@pytest.mark.judge
@pytest.mark.points(1)
def test_no_unusable_donation(submission: ModuleType, rng: np.random.Generator) -> None:
    """No donated buffer goes unused: JAX would warn that it was not usable."""
    for call in _jit_calls(submission, _mesh(), rng):
        if call.not_usable:
            fail(f"JAX warns \"{call.not_usable[0]}\" when it compiles `{call.name}`: it was given buffers that "
                 "no output could take. Donate params only, and keep each output's dtype, shape and sharding "
                 "equal to its param's.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_no_compile_after_warmup(fresh_submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """After a warm-up call, new arrays and learning rates compile nothing."""
    mesh = _mesh()
    calls = [(_tree(rng, mesh)[0], _tree(rng, mesh)[0], lr) for lr in (0.1, _lr(rng), _lr(rng), _lr(rng))]
    watched = watched_calls(fresh_submission.sgd_step, calls, module=fresh_submission, path=submission_path)
    # The compiles are reported where the calls ran; a call whose program text is new needed one anyway.
    missing = unreported_compiles(watched)
    if missing:
        fail(f"call {missing[0] + 1} of `sgd_step` runs a program that no earlier call ran (its text differs), "
             "yet the record of that call says nothing was compiled: a new program is always compiled. Keep "
             "lr a traced argument of one jit built at import, so that every call runs the same program.")
    if not watched[0].compiled:
        fail("no compile of your code was seen on the first call of `sgd_step`: does it run a jax.jit of a "
             "function written in your file?")
    again = [(i, lr, w.compiled) for i, ((_, _, lr), w) in enumerate(zip(calls, watched, strict=True))
             if i and w.compiled]
    if not again:
        return
    i, lr, fns = again[0]
    head = (f"call {i + 1} (lr = {lr:.4g}, new arrays of the same shapes and shardings) compiled "
            f"{', '.join(fns)} again, and {len(again)} of the 3 calls after the warm-up compiled.")
    built = sum(w.built for w in watched[1:])
    if built:
        fail(f"{head} Those calls built {built} new jax.jit wrapper(s) of your code, and a new wrapper "
             "starts with an empty cache: a jit made per call, or kept per learning rate (in an lru_cache or a "
             "dict keyed by lr), compiles a new program for every value. Keep lr a traced argument of one jit "
             "built at import.")
    step = max(watched[i].programs, key=lambda c: len(c.donated), default=None)
    if step is not None and len(step.donated) < 2 * len(LAYOUT) + 1:
        fail(f"{head} `{step.name}` takes lr as a static argument, so each value is a new cache key and a new "
             "program. Leave it traced: a Python float passed to a jit is a weakly typed float32 scalar, "
             "one type for every value.")
    fail(f"{head} Each learning rate should reuse the program of the first call: keep lr a traced argument "
         "(not static, not used to pick or build a program) of one jit built at import.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_jit_built_once(fresh_submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`sgd_step` runs a jax.jit built once, at import: no call builds one."""
    mesh = _mesh()
    calls = [(_tree(rng, mesh)[0], _tree(rng, mesh)[0], _lr(rng)) for _ in range(2)]
    # The wrappers built are reported where the calls ran (only that process sees them); the jitted calls are
    # read here from the traces of the calls.
    watched = watched_calls(fresh_submission.sgd_step, calls, module=fresh_submission, path=submission_path)
    first, second = (w.built for w in watched)
    if second:
        which = "each of 2 calls" if first else "the second of 2 calls"
        fail(f"{which} of `sgd_step` (with different learning rates) built a new jitted wrapper: a wrapper made "
             "during a call starts with an empty cache, so it compiles again. Build the jit once at module "
             "scope and call that.")
    if first:
        fail(f"the first call of `sgd_step` built {first} jitted wrapper(s) and the second none: the jit is made "
             "lazily, inside the call, and kept for later. Build it at import, at module scope (a decorator "
             "or an assignment), so that no call builds one and the step is there to inspect before it runs.")
    if not any(w.programs for w in watched) and all(w.traced for w in watched):
        fail("`sgd_step` runs no function made by jax.jit: eagerly, every leaf's update is a separate dispatch "
             "and nothing is donated. Decorate it with jax.jit(..., donate_argnums=0), or have it call a jit "
             "built at import.")
