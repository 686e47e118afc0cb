"""Tests of `observe.traces.residuals`: what a differentiated scan keeps for its backward pass, and its origin."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from course.grading.observe.traces.residuals import describe_residuals, residuals_of

SOURCE = """
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.ad_checkpoint import checkpoint_name


    def layer(x, p):
        z = checkpoint_name(x @ p["w1"], "z")
        return x + jnp.tanh(z) @ p["w2"]


    def grads(params, x, policy, *, remat=True):
        step = (lambda h, p: (layer(h, p), None))
        step = jax.checkpoint(step, policy=policy) if remat else step

        def loss(params, x):
            return jnp.mean(lax.scan(step, x, params)[0] ** 2)

        return jax.grad(loss)(params, x)
"""


def _inputs(layers: int = 3) -> tuple[dict[str, jax.Array], jax.Array]:
    """Stacked params of a residual tanh block (D=4, H=8) and a batch of 2."""
    return ({"w1": jnp.ones((layers, 4, 8)) * 0.1, "w2": jnp.ones((layers, 8, 4)) * 0.1}, jnp.ones((2, 4)))


def test_without_a_checkpoint_every_intermediate_is_saved(learner_module) -> None:
    """A plain scan keeps the layer input, the matmul output and tanh's output, per step."""
    module = learner_module(SOURCE)
    found = residuals_of(lambda p, x: module.grads(p, x, None, remat=False), *_inputs(), path=module.__file__)
    assert {(r.type, r.source, r.primitive) for r in found} >= {("float32[2, 8]", "op", "tanh")}
    assert all(r.length == 3 for r in found) and sum(r.nbytes for r in found) >= 2 * 8 * 4
    assert any(r.source == "carry" and r.type == "float32[2, 4]" for r in found)


def test_a_policy_decides_what_is_saved_and_names_are_seen_through(learner_module) -> None:
    """dots_saveable keeps the matmul output (behind its reduce_precision) and the layer input; names show."""
    module = learner_module(SOURCE)
    path = module.__file__
    found = residuals_of(lambda p, x: module.grads(p, x, jax.checkpoint_policies.dots_saveable), *_inputs(), path=path)
    dots = [r for r in found if r.source == "op"]
    assert [(r.type, r.primitive, r.line) for r in dots] == [("float32[2, 8]", "dot_general", 9)]
    assert [r.origin() for r in found if r.source == "carry"] == ["a loop input: the carry, each step's input"]
    named = residuals_of(lambda p, x: module.grads(p, x, jax.checkpoint_policies.save_only_these_names("z")),
                         *_inputs(), path=path)
    assert {(r.primitive, r.name) for r in named if r.source == "op"} == {("dot_general", "z")}
    nothing = residuals_of(lambda p, x: module.grads(p, x, jax.checkpoint_policies.nothing_saveable), *_inputs(),
                           path=path)
    assert [r.source for r in nothing] == ["carry"]


def test_a_forward_scan_not_differentiated_saves_nothing() -> None:
    """lax.map's stacked outputs feed a sum, not a backward scan: they are results, not residuals."""
    assert residuals_of(lambda x: jnp.sum(lax.map(jnp.sin, x)), jnp.ones((4, 3))) == []
    assert residuals_of(jax.grad(lambda x: jnp.sum(jnp.sin(x) ** 2)), jnp.ones(3)) == []


def test_residuals_are_found_inside_a_jit_and_described_for_a_message(learner_module) -> None:
    """The scans of a jitted grad sit inside its jit equation; the description groups equal types."""
    module = learner_module(SOURCE)
    fn = jax.jit(lambda p, x: module.grads(p, x, None, remat=False))
    found = residuals_of(fn, *_inputs(), path=module.__file__)
    text = describe_residuals(found, module.__file__)
    assert text == ("float32[2, 4] (a loop input: the carry, each step's input); float32[2, 8] x2 (outputs of sub, "
                    'tanh; line 10: return x + jnp.tanh(z) @ p["w2"])')


def test_a_jit_split_in_two_by_autodiff_still_shows_what_its_forward_half_saves() -> None:
    """grad of a jitted forward: the forward scan's saved values leave its jit and reach the backward one."""
    forward = jax.jit(lambda w, x: lax.scan(lambda h, wl: (jnp.tanh(h @ wl), None), x, w)[0])
    found = residuals_of(jax.grad(lambda w, x: jnp.sum(forward(w, x))), jnp.ones((5, 4, 4)) / 8, jnp.ones((2, 4)))
    assert {(r.type, r.source, r.primitive) for r in found} >= {("float32[2, 4]", "carry", None),
                                                                 ("float32[2, 4]", "op", "tanh")}
    assert {r.length for r in found} == {5}
