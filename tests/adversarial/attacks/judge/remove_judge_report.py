"""An `update_with_donate` that adds `delta` twice (it fails "values"), and whose import has a child process
remove the folder where its judge writes its report (a `course-judge-*/report` in the temporary folder whose
report names this grading's seed). Under `course check` the judge is another process of the learner's own
user, so its folder can be reached; under `course grade` with the sandbox, the executor's temporary folder is
its own and there is nothing to find.

Deserved: where the judge's report was removed, 0 of 7 (no check of the judge's can be trusted, and the
executor's cannot stand for the whole grader); where it could not be reached, 6 of 7 (values fails). Before,
with the judge's report removed, the executor's two checks were scored alone: 2 of 2, "passed"."""

import subprocess
import sys
import tempfile

import jax

# Its own judge's, not another grading's: the judge's first report names the run's seed, which is on this
# process's command line too.
_REMOVE = """
import glob, shutil
for place in {places!r}:
    for folder in glob.glob(place + '/course-judge-*/report'):
        for path in glob.glob(folder + '/*.json'):
            try:
                with open(path, 'rb') as fh:
                    mine = {seed!r} in fh.read()
            except OSError:
                mine = False
            if mine:
                shutil.rmtree(folder, ignore_errors=True)
"""
_SEED = 'seed\\":' + sys.argv[sys.argv.index("--course-seed") + 1] + ","
_PLACES = sorted({tempfile.gettempdir(), "/tmp"})
subprocess.run([sys.executable, "-I", "-c", _REMOVE.format(places=_PLACES, seed=_SEED.encode())], check=False)

_add = jax.jit(lambda s, d: s + 2 * d, donate_argnums=0)


def update_with_donate(state: jax.Array, delta: jax.Array) -> jax.Array:
    """state + 2 * delta: wrong on purpose."""
    return _add(state, delta)
