"""Tests of `observe.calls.steps`: consumed and donated leaves, the jit behind a wrapper, compiles after warm-up."""

from __future__ import annotations

import types
from collections.abc import Callable

import jax
import numpy as np
import pytest
from eight_devices import on_eight_devices
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading.observe.calls.compiles import own_function_names
from course.grading.observe.calls.steps import (
    compiles_per_call,
    consumed_leaves,
    donated_leaves,
    jitted_candidates,
    jitted_step,
)
from course.grading.observe.traces.sharding import per_device_bytes

NAMES = ("params", "grads", "lr")


def _tree(n: int = 5) -> dict[str, jax.Array]:
    """Two float32 leaves in fresh buffers."""
    return {"w": jax.device_put(np.ones((n, 3), np.float32)), "b": jax.device_put(np.zeros(n, np.float32))}


def _sgd(params, grads, lr):
    """The plain update, leaf by leaf."""
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)


def test_consumed_leaves_names_each_donated_leaf() -> None:
    """After a donating call every params leaf is consumed and no grads leaf is."""
    params, grads = _tree(), _tree()
    jax.jit(_sgd, donate_argnums=0)(params, grads, 0.1)
    assert consumed_leaves(params, "params") == ["params['b']", "params['w']"]
    assert consumed_leaves(grads, "grads") == []


def test_donated_leaves_from_args_info() -> None:
    """A jitted step reports what it asks to donate, positional or by name, and static arguments are skipped."""
    params, grads = _tree(), _tree()
    both = jax.jit(_sgd, donate_argnums=(0, 1))
    with pytest.warns(UserWarning, match="donated buffers were not usable"):  # one output per pair of leaves
        assert donated_leaves(both, params, grads, 0.1, names=NAMES) == [
            "params['b']", "params['w']", "grads['b']", "grads['w']"]
    static = jax.jit(_sgd, donate_argnums=0, static_argnums=2)
    assert donated_leaves(static, params, grads, 0.1, names=NAMES) == ["params['b']", "params['w']"]
    by_name = jax.jit(_sgd, donate_argnames="grads")
    assert donated_leaves(by_name, params, grads, 0.1, names=NAMES) == ["grads['b']", "grads['w']"]
    assert not params["w"].is_deleted()  # lowering consumes nothing


def test_donated_leaves_through_a_wrapper_follows_the_leaves() -> None:
    """A wrapper that passes its arguments to the jit in another order still has its own leaves named."""
    swapped = jax.jit(lambda g, p, lr: _sgd(p, g, lr), donate_argnums=1)

    def wrapper(params, grads, lr):
        """Calls the jit with grads first."""
        return swapped(grads, params, lr)

    assert donated_leaves(wrapper, _tree(), _tree(), 0.1, names=NAMES) == ["params['b']", "params['w']"]

    def copying(params, grads, lr):
        """Donates copies, so none of the caller's leaves."""
        return swapped(grads, jax.tree.map(lambda p: p * 1.0, params), lr)

    assert donated_leaves(copying, _tree(), _tree(), 0.1, names=NAMES) == []


def test_jitted_candidates_look_in_closures_tables_and_objects(
    learner_module: Callable[[str], types.ModuleType],
) -> None:
    """A jit kept in a dict, on an object or in a closure is found; plain functions are not."""
    module = learner_module("""
        import jax

        class Holder:
            def __init__(self):
                self.step = jax.jit(lambda p, g, lr: p - lr * g)

        TABLE = {"sgd": jax.jit(lambda p, g, lr: p - lr * g, donate_argnums=0)}
        HOLDER = Holder()

        def make():
            inner = jax.jit(lambda p, g, lr: p - lr * g)
            return lambda p, g, lr: inner(p, g, lr)

        wrapped = make()

        def plain(p, g, lr):
            return p - lr * g
    """)
    assert set(jitted_candidates(module.plain, module)) == {"TABLE['sgd']", "HOLDER.step"}
    assert set(jitted_candidates(module.wrapped)) == {"inner"}


def test_jitted_step_finds_what_a_wrapper_runs(learner_module: Callable[[str], types.ModuleType]) -> None:
    """Of two jits, the one the wrapper calls is the step, even with its arguments reordered or by keyword."""
    module = learner_module("""
        import jax

        def update(lr, grads, *, params):
            return jax.tree.map(lambda a, b: a - lr * b, params, grads)

        keep = jax.jit(lambda p, g, lr: jax.tree.map(lambda a, b: a - lr * b, p, g))
        step = jax.jit(update, donate_argnames="params")

        def sgd_step(params, grads, lr):
            return step(lr, grads, params=params)
    """)
    name, lowered = jitted_step(module.sgd_step, _tree(), _tree(), 0.1, module=module)
    assert name == "update"
    assert lowered.compile().memory_analysis().alias_size_in_bytes == 5 * 3 * 4 + 5 * 4
    assert jitted_step(module.keep, _tree(), _tree(), 0.1)[1].compile().memory_analysis().alias_size_in_bytes == 0
    assert jitted_step(lambda p: p, _tree()) is None


def test_jitted_step_keeps_the_shardings_a_jit_was_given() -> None:
    """A wrapper's jit with its own `out_shardings` is rebuilt with them, so its aliasing is measured as it is."""
    mesh = jax.make_mesh((1,), ("d",), axis_types=(AxisType.Explicit,))
    x = jax.device_put(np.ones(8, np.float32), NamedSharding(mesh, P("d")))
    step = jax.jit(lambda a: a * 2, donate_argnums=0, out_shardings=NamedSharding(mesh, P()))
    _, lowered = jitted_step(lambda a: step(a), x)
    assert jax.tree_util.tree_leaves(lowered.out_info)[0].sharding.spec == P()  # one output, as the jit returns it


def test_jitted_step_falls_back_to_candidates_for_a_static_argument(
    learner_module: Callable[[str], types.ModuleType],
) -> None:
    """A wrapper around a jit with a static lr cannot be traced; the module's jit that accepts the arguments is used."""
    module = learner_module("""
        import functools
        import jax

        @functools.partial(jax.jit, donate_argnums=0, static_argnums=2)
        def _step(p, g, lr):
            return jax.tree.map(lambda a, b: a - lr * b, p, g)

        def sgd_step(params, grads, lr):
            return _step(params, grads, lr)
    """)
    params, grads = _tree(), _tree()
    name, lowered = jitted_step(module.sgd_step, params, grads, 0.1, module=module)
    assert name == "_step"
    assert donated_leaves(lowered, names=NAMES) == ["params['b']", "params['w']"]
    assert "_step" in own_function_names(module)


@on_eight_devices
def test_jitted_step_aliases_every_sharded_param() -> None:
    """On a 2x4 mesh, a donating step aliases exactly one device's bytes of all params shards (548)."""
    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    layout = {"w1": ((16, 32), P("x", "y")), "b1": ((32,), P("y")), "w2": ((32, 8), P("y", None)), "scale": ((), P())}

    def tree() -> dict[str, jax.Array]:
        """Params or grads laid out as the exercise lays them out."""
        return {k: jax.device_put(np.ones(s, np.float32), NamedSharding(mesh, p)) for k, (s, p) in layout.items()}

    params = tree()
    step = jax.jit(_sgd, donate_argnums=0)
    _, lowered = jitted_step(step, params, tree(), 0.5)
    assert lowered.compile().memory_analysis().alias_size_in_bytes == per_device_bytes(params) == 548
    replicated = jax.jit(lambda p, g, lr: jax.tree.map(
        lambda a: jax.sharding.reshard(a, NamedSharding(mesh, P())), _sgd(p, g, lr)), donate_argnums=0)
    _, lowered = jitted_step(replicated, params, tree(), 0.5)
    assert lowered.compile().memory_analysis().alias_size_in_bytes == 4  # only the replicated scalar


def test_compiles_per_call_sees_a_static_value_compile_again(learner_module: Callable[[str], types.ModuleType]) -> None:
    """A traced learning rate compiles once; a static one compiles per value; eager helpers are not counted."""
    module = learner_module("""
        import functools
        import jax

        @functools.partial(jax.jit, static_argnums=2)
        def static_step(p, g, lr):
            return p - lr * g

        @jax.jit
        def traced_step(p, g, lr):
            return p - lr * g
    """)
    names = own_function_names(module)
    calls = [(_tree(7)["w"], _tree(7)["w"], lr) for lr in (0.1, 0.2, 0.3)]
    assert [len(c) for c in compiles_per_call(module.traced_step, calls, names)] == [1, 0, 0]
    seen = compiles_per_call(module.static_step, calls, names)
    assert seen == [["jit(static_step)"]] * 3


def test_a_wrapper_is_traced_over_its_arrays_only() -> None:
    """A Python lr stays a Python float: a step cached per learning rate is read, not crashed on."""
    import functools

    @functools.lru_cache
    def for_rate(lr):
        """A donating update with `lr` baked in (hashing a tracer would raise TypeError)."""
        return jax.jit(lambda p, g: _sgd(p, g, lr), donate_argnums=0)

    def cached(params, grads, lr):
        """The jit of this learning rate."""
        return for_rate(lr)(params, grads)

    params, grads = _tree(), _tree()
    assert donated_leaves(cached, params, grads, 0.1, names=NAMES) == ["params['b']", "params['w']"]
    name, lowered = jitted_step(cached, params, grads, 0.1)
    assert name == "<lambda>" and lowered.compile().memory_analysis().alias_size_in_bytes == per_device_bytes(params)
    assert not params["w"].is_deleted()
