"""Wraps a module-level function in a new jax.jit on every call of forward: nothing recompiles, but the jit is not built once at module scope; must fail test_compiles_once."""

import jax
import jax.numpy as jnp
from jax import lax


def stack_layers(layers: list[dict]) -> dict:
    """Stack every parameter of the L layers on a new leading axis: w (L, D, D), b (L, D)."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *layers)


def _layer(x: jax.Array, params: dict) -> tuple[jax.Array, None]:
    """One step of the scan: the layer whose parameters the scan sliced out, applied to the carry."""
    return jnp.tanh(x @ params["w"] + params["b"]), None


def forward(stacked: dict, x: jax.Array) -> jax.Array:
    """The jitted forward pass, its jit built on every call."""
    return jax.jit(_forward)(stacked, x)


def _forward(stacked: dict, x: jax.Array) -> jax.Array:
    """The L layers in order; the scan traces `_layer` once, whatever L is."""
    out, _ = lax.scan(_layer, x, stacked)
    return out
