"""Tests of `observe.calls.recompiles`: what later calls of a function compile, build and run."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
from jax import lax

from course.grading.observe.calls.recompiles import later_calls

HERE = Path(__file__)
X = jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4)


def _cumulative(x: jax.Array) -> jax.Array:
    """A scan over rows, eager when called unjitted: its body is traced and compiled anew each call."""
    return lax.scan(lambda c, row: (c + row, c + row), jnp.zeros(x.shape[1]), x)[1]


_jitted = jax.jit(_cumulative)


def _eager_ops(x: jax.Array) -> jax.Array:
    """Three eager operations: each a small program of JAX's own, compiled once and reused."""
    return jnp.tanh(x) * 2 + 1


def _jit_per_call(x: jax.Array) -> jax.Array:
    """A new jitted wrapper on every call."""
    return jax.jit(lambda v: v * 3)(x)


def test_a_jitted_function_compiles_nothing_later_and_runs_one_program() -> None:
    """After its first call, a module-level jit compiles nothing, builds nothing and runs one program."""
    later = later_calls(_jitted, (X,), path=HERE)
    assert later.once and later.jitted
    assert later.programs == ("jit(_cumulative)",)


def test_an_unjitted_scan_recompiles_on_every_call() -> None:
    """An eager `lax.scan` compiles again on each later call, and the message says so with the names."""
    later = later_calls(_cumulative, (X,), path=HERE)
    assert not later.once and len(later.compiles) >= 2
    assert "2 more call(s) with the same arguments compiled" in later.message("_cumulative")
    assert "jit(scan)" in later.message("_cumulative")


def test_eager_operations_run_one_program_each() -> None:
    """Eager operations reuse their programs, but a call runs several: not jitted."""
    later = later_calls(_eager_ops, (X,), path=HERE)
    assert later.once and not later.jitted and len(later.programs) >= 3
    ran = f"one call of `_eager_ops` ran {len(later.programs)} compiled programs"
    assert later.message("_eager_ops").startswith(ran)


def test_a_jit_built_inside_the_call_is_counted() -> None:
    """A `jax.jit` made inside the function is a new wrapper on each later call."""
    later = later_calls(_jit_per_call, lambda: (jnp.ones(3),), path=HERE)
    assert later.builds == 2 and not later.jitted
    assert "built 2 new jitted wrapper(s)" in later.message("_jit_per_call")


FAR = b'''
import jax
import jax.numpy as jnp
from jax import lax
from jax._src import pjit

_ORIGINAL = pjit._pjit_call_impl_python


def _cumulative(x):
    return lax.scan(lambda c, row: (c + row, c + row), jnp.zeros(x.shape[1]), x)[1]


jitted = jax.jit(_cumulative)


def eager(x):
    return jnp.tanh(x) * 2 + 1


def hidden(x):
    """Eager, with JAX's dispatch put back as it was at import while it runs: no recorder sees its programs."""
    put, pjit._pjit_call_impl_python = pjit._pjit_call_impl_python, _ORIGINAL
    try:
        return jax.block_until_ready(jnp.tanh(x) * 2 + 1)
    finally:
        pjit._pjit_call_impl_python = put
'''


def test_seen_from_the_judge_the_calls_are_made_there_and_weighed_here(tmp_path: Path) -> None:
    """From the judge, the executor makes the calls and reports what it saw; a jitted function passes as it
    does beside the code, and eager operations fail, by the programs reported or, when the report hides them,
    by the trace, which holds no jitted call."""
    from support import served

    with served(tmp_path / "far.py", FAR) as module:
        jitted = later_calls(module.jitted, (X,), path=tmp_path / "far.py", module=module)
        eager = later_calls(module.eager, (X,), path=tmp_path / "far.py", module=module)
        hidden = later_calls(module.hidden, (X,), path=tmp_path / "far.py", module=module)
    assert jitted.jitted and jitted.programs == ("jit(_cumulative)",) and not jitted.unjitted
    assert not eager.jitted and len(eager.programs) >= 3 and eager.message("eager").startswith("one call of")
    assert hidden.once and hidden.programs == () and hidden.unjitted and not hidden.jitted
    assert hidden.message("hidden").startswith("`hidden` runs no jitted program: its calls ran no `jax.jit`")
