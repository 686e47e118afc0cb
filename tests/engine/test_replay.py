"""The judge runs the programs a call ran, read from the wire, on fresh inputs of its own (`judge.replay`)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from course.engine.executor.runs import fed
from course.engine.judge import replay
from course.grading.observe.calls.executions import record_runs


def _sent(fn: Any, *args: Any) -> tuple[dict[str, Any] | None, list[bytes]]:
    """What the executor sends of a plain call of `fn(*args)`: the chain, and the buffers its programs are in."""
    with record_runs(programs=True) as ran:
        result = jax.block_until_ready(fn(*args))
    out: list[bytes] = []
    return fed(ran.runs, list(args), result, out), out


def _kept(fn: Any, *args: Any) -> replay.Chain | None:
    """The judge's chain of a plain call of `fn(*args)`."""
    chain, out = _sent(fn, *args)
    replay.note("f", chain, None if chain is None else list(chain["consts"]), out)
    return replay.last("f")


def _fresh(n: int, seed: int) -> tuple[jax.Array, jax.Array, np.ndarray, np.ndarray]:
    """Two float32[n] arrays and their NumPy copies."""
    rng = np.random.default_rng(seed)
    s, d = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    return jnp.array(s), jnp.array(d), s, d


_donating = jax.jit(lambda s, d, k: s + d * k, donate_argnums=(0,))


def _guarded(state: jax.Array, delta: jax.Array) -> jax.Array:
    """Eager operations, a Python scalar and a donating jit, in one call."""
    delta = jnp.where(jnp.isfinite(delta), delta, 0.0)
    return _donating(state, delta, 0.5) * 2.0


def test_a_chain_of_eager_operations_and_jits_runs_here_on_fresh_inputs() -> None:
    """Each program runs here, fed by the fresh arguments, the outputs before it and the Python scalars."""
    chain = _kept(_guarded, *_fresh(64, 0)[:2])
    assert chain is not None and len(chain.programs) == 4 and not chain.aot
    state, delta, s, d = _fresh(64, 1)
    assert replay.fits(chain, [state, delta])
    (value,) = replay.run(chain, [state, delta])
    np.testing.assert_allclose(np.asarray(value), (s + d * 0.5) * 2.0, rtol=1e-6)
    assert not state.is_deleted()  # the judge's copy donates nothing


def _numpy_beside(state: jax.Array, delta: jax.Array) -> jax.Array:
    """NumPy makes the result; a donating jit runs beside it."""
    total = np.asarray(state) + np.asarray(delta)
    _donating(state, delta, 0.0)
    return jnp.asarray(total)


def test_a_result_made_outside_the_programs_has_no_value_here() -> None:
    """NumPy's sum reaches the result only through `jnp.asarray`'s transfer, fed by something no program made:
    no value stands for it here. A result NumPy returns itself is no program's output at all."""
    chain = _kept(_numpy_beside, *_fresh(8, 2)[:2])
    assert chain is not None and chain.source(0)[0] == "out" and chain.inputs[-1] == (("other",),)
    assert replay.run(chain, list(_fresh(8, 3)[:2])) == [None]
    chain = _kept(lambda s, d: np.asarray(_donating(s, d, 0.0)) + np.asarray(d), *_fresh(8, 4)[:2])
    assert chain is not None and chain.source(0) == ("other",)
    assert replay.run(chain, list(_fresh(8, 5)[:2])) == [None]


def test_a_program_fed_by_something_made_outside_is_not_run() -> None:
    """A jit given NumPy's sum runs here on nothing: what it returns is None, not a value made up."""
    ident = jax.jit(lambda t: t + 0.0)
    chain = _kept(lambda s, d: ident(jnp.asarray(np.asarray(s) + np.asarray(d))), *_fresh(8, 14)[:2])
    assert chain is not None and chain.source(0)[0] == "out"
    assert replay.run(chain, list(_fresh(8, 15)[:2])) == [None]


def test_an_argument_returned_as_it_is_is_the_fresh_one() -> None:
    """A call that returns its argument untouched returns, here, the fresh argument."""
    chain = _kept(lambda s, d: d, *_fresh(4, 6)[:2])
    assert chain is not None and chain.programs == () and chain.source(0) == ("arg", 1)
    state, delta, _, _ = _fresh(4, 7)
    assert replay.run(chain, [state, delta])[0] is delta


def _double_kernel(x_ref: Any, o_ref: Any) -> None:
    o_ref[...] = x_ref[...] * 2.0


@jax.jit
def _doubled(x: jax.Array) -> jax.Array:
    """A Pallas kernel over a grid of two blocks."""
    return pl.pallas_call(_double_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                          in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)), interpret=True)(x)


def test_a_kernel_runs_here_under_the_strict_interpreter() -> None:
    """A `pallas_call` read from the wire runs here, under the judge's own strict interpreter."""
    chain = _kept(_doubled, jnp.ones((16, 128), jnp.float32))
    assert chain is not None
    fresh = np.random.default_rng(8).standard_normal((16, 128)).astype(np.float32)
    (value,) = replay.run(chain, [jnp.array(fresh)])
    np.testing.assert_array_equal(np.asarray(value), fresh * 2.0)


def test_a_scan_runs_here() -> None:
    """A loop's program runs here too."""
    scanned = jax.jit(lambda c: jax.lax.scan(lambda c, _: (c * 2.0, c.sum()), c, None, length=3))
    chain = _kept(scanned, jnp.ones(4, jnp.float32))
    assert chain is not None
    carry, sums = replay.run(chain, [jnp.arange(4, dtype=jnp.float32)])
    np.testing.assert_array_equal(np.asarray(carry), np.arange(4) * 8.0)
    np.testing.assert_array_equal(np.asarray(sums), [6.0, 12.0, 24.0])


def test_an_ahead_of_time_program_says_so() -> None:
    """A compiled ahead-of-time program keeps no program to run: the chain says only that."""
    compiled = jax.jit(lambda s: s + 1.0).lower(jnp.ones(4)).compile()
    chain = _kept(lambda s, d: compiled(s), *_fresh(4, 9)[:2])
    assert chain is not None and chain.aot and chain.programs == ()


def test_inputs_of_other_types_do_not_fit() -> None:
    """Fresh inputs must be arrays of the types the programs took."""
    chain = _kept(_guarded, *_fresh(16, 10)[:2])
    assert chain is not None
    assert not replay.fits(chain, list(_fresh(8, 11)[:2]))
    assert not replay.fits(chain, [jnp.zeros(16, jnp.int32), _fresh(16, 12)[1]])
    assert not replay.fits(chain, [[0.0] * 16, _fresh(16, 12)[1]])
    assert replay.fits(chain, [np.zeros(16, np.float32), _fresh(16, 12)[1]])  # a NumPy argument is one too


@pytest.mark.parametrize("change", [
    lambda c: c["result"].append(["out", 9, 0]),
    lambda c: c["result"].append(["out", 0, 5]),
    lambda c: c["inputs"][0].append(["arg", 0]),
    lambda c: c["inputs"][1].__setitem__(0, ["out", 1, 0]),  # a program fed by itself
    lambda c: c["inputs"][0].__setitem__(0, ["const", 3]),
    lambda c: c["inputs"][0].__setitem__(0, ["arg", -1]),
    lambda c: c["inputs"][0].__setitem__(0, ["arg", True, 1]),
    lambda c: c["programs"].__setitem__(0, ["seen", 10**6]),
    lambda c: c["programs"].__setitem__(0, ["sent", 99, 10**6]),
    lambda c: c["programs"].__setitem__(0, ["made", 0]),
    lambda c: c.__setitem__("result", "all"),
    lambda c: c["programs"].extend([c["programs"][0]] * 260),
])
def test_a_malformed_chain_is_none(change: Any) -> None:
    """Sources out of range, of an unknown kind, a program fed by itself or too many: no chain at all."""
    chain, out = _sent(_guarded, *_fresh(8, 13)[:2])
    assert chain is not None
    change(chain)
    replay.note("f", chain, list(chain["consts"]), out)
    assert replay.last("f") is None


def test_programs_that_differ_only_in_a_baked_constant_each_run_with_their_own() -> None:
    """A jit per learning rate, cached: each call's program carries its own rate, and runs here with it."""
    scaled = {rate: jax.jit(lambda x, rate=rate: x * rate) for rate in (0.5, 3.0)}
    for rate in (0.5, 3.0, 0.5):
        chain = _kept(lambda s, d, rate=rate: scaled[rate](s), *_fresh(4, 16)[:2])
        assert chain is not None
        state, delta, s, _ = _fresh(4, 17)
        np.testing.assert_allclose(np.asarray(replay.run(chain, [state, delta])[0]), s * rate, rtol=1e-6)


def test_an_input_the_program_never_reads_may_come_from_anywhere() -> None:
    """An input made outside the programs that the program never reads blocks nothing; one it reads does."""
    unused = jax.jit(lambda s, d, scale: s + d, donate_argnums=(0,))
    chain = _kept(lambda s, d: unused(s, d, np.asarray(d) * 2), *_fresh(8, 18)[:2])
    assert chain is not None and ("other",) in [source for feeds in chain.inputs for source in feeds]
    state, delta, s, d = _fresh(8, 19)
    np.testing.assert_allclose(np.asarray(replay.run(chain, [state, delta])[0]), s + d, rtol=1e-6)
    used = jax.jit(lambda s, d, scale: s + d * scale)
    chain = _kept(lambda s, d: used(s, d, np.asarray(d) * 2), *_fresh(8, 20)[:2])
    assert chain is not None and replay.run(chain, list(_fresh(8, 21)[:2])) == [None]


def test_a_number_made_outside_is_the_calls_own_here() -> None:
    """A number made on the host from an array's values (a 0-d array, as JAX's own eager operations pass theirs)
    is sent as a constant: run on fresh inputs, the programs compute with the call's number, not one made from
    the fresh inputs, so a value check on fresh inputs tells it apart."""
    used = jax.jit(lambda s, d, scale: s + d * scale)
    chain = _kept(lambda s, d: used(s, d, jnp.asarray(np.float32(np.asarray(d).sum()))), *_fresh(8, 20)[:2])
    assert chain is not None and chain.inputs[0] == (("const", 0),)
    _, _, _, d_call = _fresh(8, 20)
    state, delta, s, d = _fresh(8, 21)
    (value,) = replay.run(chain, [state, delta])
    np.testing.assert_allclose(np.asarray(value), s + d * np.float32(d_call.sum()), rtol=1e-5)
    assert not np.allclose(np.asarray(value), s + d * np.float32(d.sum()))


@jax.custom_vjp
def _clipped_gradient(x: jax.Array) -> jax.Array:
    """The identity, whose gradient is clipped: a derivative rule that is a Python function."""
    return x


_clipped_gradient.defvjp(lambda x: (x, None), lambda _, g: (jnp.clip(g, -1.0, 1.0),))


def test_custom_derivatives_and_checkpoints_run_forward() -> None:
    """`jax.nn.relu` (a custom JVP), a custom VJP and `jax.checkpoint` run here as their functions: their rules,
    Python functions of the process that traced them, are not needed forward."""
    layer = jax.jit(lambda s, d: jax.checkpoint(lambda a: jax.nn.relu(a) * 2.0)(s) + _clipped_gradient(d))
    chain = _kept(layer, *_fresh(8, 22)[:2])
    assert chain is not None
    state, delta, s, d = _fresh(8, 23)
    np.testing.assert_allclose(np.asarray(replay.run(chain, [state, delta])[0]), np.maximum(s, 0) * 2 + d,
                               rtol=1e-6)


def test_an_argument_put_on_the_device_is_followed_through_the_transfer() -> None:
    """A NumPy argument made a device array by `jnp.asarray` (a transfer, no program) reaches the jit that takes it:
    the fresh argument is put here and fed on. A NumPy value made from an array's contents is not an argument."""
    scaled = jax.jit(lambda x, t: x / t)
    chain = _kept(lambda x, t: scaled(x, jnp.asarray(t, jnp.float32)), jnp.ones(4, jnp.float32),
                  np.array(2.0, np.float32))
    assert chain is not None and isinstance(chain.programs[0], replay.Put) and chain.inputs[0] == (("arg", 1),)
    x = jnp.arange(4, dtype=jnp.float32)
    np.testing.assert_allclose(np.asarray(replay.run(chain, [x, np.array(4.0, np.float32)])[0]), np.arange(4) / 4.0)
    chain = _kept(lambda x, t: scaled(x, jnp.asarray(np.asarray(x) + t)), jnp.ones(4, jnp.float32),
                  np.array(2.0, np.float32))
    assert chain is not None and chain.inputs[0] == (("other",),)
    assert replay.run(chain, [x, np.array(4.0, np.float32)]) == [None]


def test_a_chain_that_cannot_be_made_is_not_sent_and_leaves_nothing_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should making a chain fail (a program the wire cannot write, say), the answer goes without one, none of its
    programs is left in the buffers, and no program is remembered as sent: a later call sends it whole."""
    from course.engine.executor import runs

    never_sent = jax.jit(lambda s: s * 3.0 + 1.0)  # a program no other test sent
    with record_runs(programs=True) as ran:
        result = jax.block_until_ready(never_sent(_fresh(8, 24)[0]))
    out: list[bytes] = [b"earlier"]
    known = dict(runs._SENT)
    monkeypatch.setattr("course.engine.wire.jaxprs.encode", lambda closed: (_ for _ in ()).throw(ValueError("no")))
    assert fed(ran.runs, [], result, out) is None
    assert out == [b"earlier"]
    assert known == runs._SENT


def test_a_number_passed_as_an_argument_is_a_fresh_one_of_the_programs_type() -> None:
    """A NumPy scalar the call passed is an argument of its program: a fresh number stands for it here, cast to the
    type the program takes (as `jax.jit` casts it), never baked in as the call's own."""
    scaled = jax.jit(lambda x, k: x * k)
    chain = _kept(scaled, jnp.arange(4.0), np.float32(3.0))
    assert chain is not None and chain.inputs[0][1] == ("arg", 1)
    assert replay.fits(chain, [jnp.ones(4), np.float32(2.0)]) and replay.fits(chain, [jnp.ones(4), 2])
    assert not replay.fits(chain, [jnp.ones(4), np.ones(2, np.float32)])
    (value,) = replay.run(chain, [jnp.ones(4), 2])
    assert value.dtype == jnp.float32 and np.asarray(value).tolist() == [2.0] * 4


def test_an_unjitted_gradient_runs_here_with_the_numbers_jax_made_for_it() -> None:
    """Eager `jax.value_and_grad` feeds its programs numbers of JAX's own making (a derivative's seed, a mean's
    count, as 0-d NumPy arrays): they are sent as constants, so every leaf of the result is computed here."""
    def loss(w: jax.Array, x: jax.Array) -> jax.Array:
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    grad = jax.value_and_grad(loss)
    w, x = jnp.full((4, 3), 0.1, jnp.float32), jnp.ones((5, 4), jnp.float32)
    chain = _kept(grad, w, x)
    assert chain is not None and all(s[0] != "other" for feeds in chain.inputs for s in feeds)
    fresh_w = jnp.asarray(np.random.default_rng(3).standard_normal((4, 3)), jnp.float32)
    value, dw = replay.run(chain, [fresh_w, x])
    want_value, want_dw = grad(fresh_w, x)
    np.testing.assert_allclose(np.asarray(value), np.asarray(want_value), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(dw), np.asarray(want_dw), rtol=1e-5)


def test_a_program_the_answer_already_carries_is_encoded_once() -> None:
    """The learner's jit is both in the list of programs a call ran and in its chain: the answer carries one buffer
    of it, which the chain names, and the judge runs the chain from that buffer."""
    from course.engine.executor.runs import ran_entries

    _donating_once = jax.jit(lambda s, d: s - d, donate_argnums=(0,))  # a program no earlier test sent
    state, delta, _, _ = _fresh(16, 4)
    with record_runs(programs=True) as ran:
        result = jax.block_until_ready(_donating_once(state, delta))
    out: list[bytes] = []
    encoded: dict[int, int] = {}
    entries = ran_entries(ran.runs, set(), out, encoded=encoded)
    chain = fed(ran.runs, [state, delta], result, out, encoded)
    assert chain is not None and len(out) == 1 and len(entries) == 1
    assert chain["programs"] == [["sent", entries[0][2], chain["programs"][0][2]]]
    replay.note("once", chain, list(chain["consts"]), out)
    fresh, other, s, d = _fresh(16, 5)
    (value,) = replay.run(replay.last("once"), [fresh, other])
    np.testing.assert_allclose(np.asarray(value), s - d, rtol=1e-6)


def _padded_whole(x: jax.Array) -> jax.Array:
    """`x` written into zeros of its own shape with `.at[:n].set`: JAX's scatter gets an empty index array."""
    return jnp.zeros(x.shape, x.dtype).at[: x.shape[0]].set(x) * 2.0


def test_an_empty_array_jax_made_is_the_calls_own_here() -> None:
    """An empty array holds nothing but its type, so it is a constant of the chain, not something made outside."""
    chain = _kept(_padded_whole, jnp.ones((16, 4), jnp.float32))
    fresh = jnp.arange(64, dtype=jnp.float32).reshape(16, 4)
    assert chain is not None and replay.fits(chain, [fresh])
    (value,) = replay.run(chain, [fresh])
    assert value is not None
    np.testing.assert_allclose(np.asarray(value), np.asarray(fresh) * 2.0)
