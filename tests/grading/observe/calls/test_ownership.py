"""Tests of `observe.calls.ownership`: JAX's own jitted helpers are never counted as the learner's."""

from __future__ import annotations

import types
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from course.grading.observe.calls.compiles import CompileRecorder
from course.grading.observe.calls.donation import jit_calls
from course.grading.observe.calls.executions import RunRecorder
from course.grading.observe.calls.ownership import eqn_is_jax_helper

LEARNER = """
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.experimental import pallas as pl

    add = jax.jit(jnp.add, donate_argnums=0)
    lax_add = jax.jit(lax.add)

    def _double(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    def eager(x):
        guarded = jnp.where(jnp.isfinite(x), x, 0.0)
        padded = jnp.pad(guarded, (0, 3))
        return jnp.clip(jnp.add(padded[:-3], 1.0), -9.0, 9.0)

    def theirs(x, y):
        return lax_add(add(x, y), y)

    def kernel_unjitted(x):
        return pl.pallas_call(_double, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)
"""
# Names the eager helpers above compile under, some of which the learner's own jits share.
HELPERS = {"_where", "_pad", "clip", "add", "dynamic_slice", "isfinite"}


def _fresh(n: int) -> jax.Array:
    """An input of a length no other test uses, made without compiling anything."""
    return jax.device_put(np.ones(n, np.float32))


def test_eager_operations_never_count_even_under_the_learners_names(
    learner_module: Callable[[str], types.ModuleType],
) -> None:
    """`jnp.where`, `jnp.pad`, slicing, `jnp.clip` and an eager `jnp.add` compile JAX's own jits: not counted."""
    module = learner_module(LEARNER)
    jax.clear_caches()
    with CompileRecorder(HELPERS) as named, CompileRecorder(HELPERS, path=module.__file__) as by_path, \
            CompileRecorder() as everything:
        module.eager(_fresh(211))
    assert named.count() == 0 and by_path.count() == 0
    assert {"jit(_where)", "jit(_pad)", "jit(clip)"} <= set(everything.fun_names())


def test_the_learners_jits_of_jax_functions_still_count(learner_module: Callable[[str], types.ModuleType]) -> None:
    """`jax.jit(jnp.add)` and `jax.jit(lax.add)` built by the learner compile as `jit(add)`: theirs."""
    module = learner_module(LEARNER)
    jax.clear_caches()
    with CompileRecorder({"add"}) as rec, RunRecorder({"add"}) as runs:
        module.theirs(_fresh(212), _fresh(212))
        module.theirs(_fresh(212), _fresh(212))
    assert rec.fun_names() == ["jit(add)", "jit(add)"]
    assert runs.fun_names() == ["jit(add)"] * 4


def test_an_unjitted_pallas_call_counts_by_path(learner_module: Callable[[str], types.ModuleType]) -> None:
    """A `pallas_call` compiles as Pallas's `jit(wrapped)`: the learner's kernel, so it stays counted by path."""
    module = learner_module(LEARNER)
    with CompileRecorder(set(), path=module.__file__) as rec:
        module.kernel_unjitted(jnp.ones((8, 128), jnp.float32))
    assert rec.fun_names() == ["jit(wrapped)"]


def test_eager_runs_are_not_the_learners_programs(learner_module: Callable[[str], types.ModuleType]) -> None:
    """A run recorder filtered by name leaves out what eager operations run, whatever their name."""
    module = learner_module(LEARNER)
    with RunRecorder(HELPERS) as runs:
        module.eager(_fresh(213))
    assert runs.count() == 0


def test_traced_calls_of_jax_helpers_are_told_apart(learner_module: Callable[[str], types.ModuleType]) -> None:
    """In a jaxpr, `_where` and `clip` equations are JAX's; the learner's held jits are not."""
    module = learner_module(LEARNER)
    spec = jax.ShapeDtypeStruct((5,), jnp.float32)
    eqns = [e for e in jax.make_jaxpr(lambda x: module.theirs(module.eager(x), x))(spec).jaxpr.eqns
            if e.primitive.name == "jit"]
    mine = {e.params["name"]: eqn_is_jax_helper(e) for e in eqns}
    assert mine["_where"] and mine["clip"]
    assert [eqn_is_jax_helper(e) for e in eqns if e.params["name"] == "add"][-2:] == [False, False]
    assert [c.name for c in jit_calls(module.theirs, spec, spec)] == ["add", "add"]
    assert jit_calls(module.eager, spec) == []
