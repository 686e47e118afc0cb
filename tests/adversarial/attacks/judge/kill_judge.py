"""An `update_with_donate` that adds `delta` twice (it fails "values"), and whose import looks for the process
judging it (the one started with this grading's seed) and kills it, so that the judge never finishes its
report. Where the grading has no PID namespace (`COURSE_PORTABLE=1`, or a machine without user namespaces)
the judge is another process of the learner's own user and can be found; in a namespace it cannot be seen,
and the file is graded as it is.

Deserved, where the judge was killed: 0 of 7, "failed" (exit 1): killing it is the learner's doing, never the
platform's error, and no check counts. Before, a judge ended by a signal read as the machine's fault: status
"error", exit 3. Where the judge cannot be seen: 6 of 7 ("values" fails)."""

import os
import signal
import sys

import jax

# Its own judge, not another grading's: the one started with this grading's seed.
_SEED = sys.argv[sys.argv.index("--course-seed") + 1].encode()
for _pid in os.listdir("/proc"):
    try:
        with open(f"/proc/{_pid}/cmdline", "rb") as _fh:
            _argv = _fh.read().split(b"\0")
    except OSError:
        continue
    if b"--course-role" in _argv and b"judge" in _argv and _SEED in _argv and int(_pid) != os.getpid():
        try:
            os.kill(int(_pid), signal.SIGKILL)
        except OSError:
            pass

_add = jax.jit(lambda s, d: s + 2 * d, donate_argnums=0)


def update_with_donate(state: jax.Array, delta: jax.Array) -> jax.Array:
    """state + 2 * delta: wrong on purpose."""
    return _add(state, delta)
