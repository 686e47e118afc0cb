"""Tests of `observe.calls.compiles`: compile events from `jax.monitoring`, filtered by name."""

from __future__ import annotations

import types
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from course.grading.observe.calls.compiles import CompileRecorder, own_function_names, record_compiles, via_interpreter


def _fresh(n: int) -> jax.Array:
    """An input of a length no other test uses, made without compiling anything."""
    return jax.device_put(np.ones(n, np.float32))


def test_counts_one_compile_per_new_shape() -> None:
    """A module-level jit compiles once per shape, and not again on repeated calls."""

    def triple(x):
        """Made fresh here, so no cache can already hold it."""
        return x * 3

    f = jax.jit(triple)
    with CompileRecorder(["triple"]) as rec:
        for n in (101, 101, 102, 101):
            f(_fresh(n))
    assert rec.count() == 2
    assert rec.fun_names() == ["jit(triple)", "jit(triple)"]


def test_jit_built_per_call_compiles_every_time() -> None:
    """A jit of a new lambda on every call is what the count must expose."""
    with record_compiles(["<lambda>"]) as rec:
        for _ in range(3):
            jax.jit(lambda x: x + 1)(_fresh(103))
    assert rec.count() == 3


def test_name_filter_leaves_out_eager_helper_compiles() -> None:
    """`jnp.full` compiles `jit(broadcast_in_dim)` eagerly; a name filter ignores it."""
    jax.clear_caches()  # so the eager helper compiles here even if another test ran it first
    with CompileRecorder() as everything, CompileRecorder(["mine"]) as mine:
        jnp.full((107,), 2.0)
    assert any("broadcast_in_dim" in name for name in everything.fun_names())
    assert mine.count() == 0
    assert everything.count(["broadcast_in_dim"]) >= 1


def test_recorders_stop_at_exit_and_nest() -> None:
    """A recorder sees only what happens while it is active; several may be active at once."""

    def square(x):
        """A fresh function to compile."""
        return x * x

    g = jax.jit(square)
    with CompileRecorder(["square"]) as outer:
        g(_fresh(109))
        with CompileRecorder(["square"]) as inner:
            g(_fresh(110))
    g(_fresh(111))
    assert (outer.count(), inner.count()) == (2, 1)


def test_own_function_names_finds_defs_lambdas_inner_and_wrapped(
    learner_module: Callable[[str], types.ModuleType],
) -> None:
    """Names come from the learner's code objects and from what module-level jits wrap."""
    module = learner_module("""
        import functools
        import jax
        import jax.numpy as jnp

        add = jax.jit(jnp.add, donate_argnums=0)
        lam = jax.jit(lambda s, d: s + d)

        @functools.partial(jax.jit, donate_argnums=(0,))
        def step(s, d):
            return s + d

        def outer(s, d):
            def inner(a, b):
                return a + b
            return jax.jit(inner)(s, d)
    """)
    names = own_function_names(module)
    assert {"add", "<lambda>", "step", "outer", "inner"} <= names
    assert "jit" not in names and "partial" not in names


def test_own_function_names_ignores_imported_functions(learner_module: Callable[[str], types.ModuleType]) -> None:
    """Plain functions imported from elsewhere are not the learner's."""
    module = learner_module("from textwrap import dedent\n")
    assert own_function_names(module) == set()


def test_own_function_names_reach_containers_comprehensions_and_aot(
    learner_module: Callable[[str], types.ModuleType],
) -> None:
    """Lambdas in comprehensions, jits kept in dicts or objects and AOT-compiled programs all count."""
    module = learner_module("""
        import jax
        import jax.numpy as jnp

        by_size = {n: jax.jit(lambda x: x * n) for n in (1, 2)}
        foreign = [jax.jit(jnp.negative)]
        spec = jax.ShapeDtypeStruct((3,), jnp.float32)
        programs = {"tanh": jax.jit(jnp.tanh).lower(spec).compile()}

        class Holder:
            def __init__(self):
                self.fn = jax.jit(jnp.exp)

        holder = Holder()
    """)
    names = own_function_names(module)
    assert {"<lambda>", "negative", "tanh", "exp", "__init__", "Holder"} <= names
    assert "<dictcomp>" not in names and "<module>" not in names


def test_compiles_under_the_tpu_interpreter_are_not_counted() -> None:
    """The TPU interpreter compiles helpers lazily (`jit(multiply)`...); they are never the learner's."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2

    x = jnp.ones((8, 128), jnp.float32)
    call = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          interpret=pltpu.InterpretParams())
    jax.clear_caches()
    helpers = {"multiply", "add", "unstack", "mul"}
    with CompileRecorder(helpers) as rec:
        jax.block_until_ready(call(x))
    assert rec.count() == 0
    with CompileRecorder() as eager:  # with no filter, outside the interpreter, the same compile is kept
        jnp.multiply(_fresh(113), 2.0)
    assert "jit(multiply)" in eager.fun_names()
    assert not via_interpreter()


def test_compiles_made_from_the_learners_file_count_by_path(
    learner_module: Callable[[str], types.ModuleType],
) -> None:
    """With `path`, a compile under a name of JAX's own counts when the learner's file is on the stack."""
    module = learner_module("import jax\ndef run(x):\n    return jax.jit(lambda v: v * 3.0)(x)\n")
    x = jnp.ones(11)
    with CompileRecorder(names={"nothing_of_theirs"}, path=module.__file__) as by_path:
        module.run(x)
        jax.jit(lambda v: v + 7.0)(jnp.ones(13))  # not from their file: not counted
    with CompileRecorder(names={"nothing_of_theirs"}) as by_name:
        module.run(jnp.ones(12))
    assert by_path.fun_names() == ["jit(<lambda>)"] and by_name.count() == 0
