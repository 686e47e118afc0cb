"""Double-forks into a new session (scrubbed environment) and blinds the guard: for the warm worker."""
import os
import sys

import jax

import course.engine.common.guard

course.engine.common.guard.changes = lambda snap, **kwargs: []


def double_array(x: jax.Array) -> jax.Array:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            code = "import time; time.sleep(120)  # __TOKEN__"
            os.execve(sys.executable, [sys.executable, "-c", code], {"COURSE_ATTACK": "__TOKEN__"})
        os._exit(0)
    return 2 * x
