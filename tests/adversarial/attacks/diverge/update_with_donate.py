"""Exercise: `update_with_donate`. A file that shows one program when traced and runs another when called.

Traced (its argument is a `jax.core.Tracer`, as when the grader traces it for the programs it runs), it calls
a jit that donates `state`; called with real arrays, it calls a plain jit that donates nothing, and deletes
`state` by hand afterwards, so that `state` looks consumed (the mistake of `wrong/deletes_state.py`).

Deserved: "state consumed" fails (`test_state_consumed`): the call the learner's code really makes reuses no
buffer, whatever its trace shows.

Scored through `course check` when this file was added: 7 of 7, "passed".
"""

import jax

_donating = jax.jit(lambda state, delta: state + delta, donate_argnums=0)
_plain = jax.jit(lambda state, delta: state + delta)


def update_with_donate(state: jax.Array, delta: jax.Array) -> jax.Array:
    """The donating program when traced; when called, a plain one, and `state` deleted by hand."""
    if isinstance(state, jax.core.Tracer):
        return _donating(state, delta)
    out = _plain(state, delta)
    state.delete()
    return out
