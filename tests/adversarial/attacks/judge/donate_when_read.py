"""An `update_with_donate` that donates only in the call the grader makes to read its programs.

Called from the grader's `jit_calls` (a frame of `course/grading/observe/calls/donation.py` on its stack), it
calls a jit that donates `state`, so the texts read there show `state`'s buffer reused. Called for its values,
it calls a plain jit that donates nothing, and deletes `state` by hand afterwards, so that `state` looks
consumed (the mistake of `wrong/deletes_state.py`). It never looks at tracers: the two calls are told apart by
the stack alone.

Deserved: 4 of 7. "State consumed" fails, and with it every later check of the judge's (the function behaved
two ways: the call whose deletion was reported ran a program that donated nothing, the call whose texts were
read one that donated `state`); the two checks made beside the learner's code keep their verdicts.

Scored through `course check` when this file was added: 7 of 7, "passed".
"""

import sys

import jax

_donating = jax.jit(lambda state, delta: state + delta, donate_argnums=0)
_plain = jax.jit(lambda state, delta: state + delta)


def _read_for_its_programs() -> bool:
    """Whether a frame of the grader's donation reader is on the stack."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename.replace("\\", "/").endswith("observe/calls/donation.py"):
            return True
        frame = frame.f_back
    return False


def update_with_donate(state: jax.Array, delta: jax.Array) -> jax.Array:
    """The donating program when the grader reads programs; otherwise a plain one, and `state` deleted by hand."""
    if _read_for_its_programs():
        return _donating(state, delta)
    out = _plain(state, delta)
    state.delete()
    return out
