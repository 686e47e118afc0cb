"""The compilation cache's cost per compile as it fills: JAX bounding it itself (every write lists the folder,
as gradings did before `course.engine.common.compile_cache`) against the unbounded cache gradings write now.

For a cache of 0, 1,000 and 3,000 entries (a pass over the whole course writes about 450, 10 KB each),
one process per setting compiles six small programs that are not in the cache, as a save of new code
does; the figure is the median time of one compile, and the ratio is now against before, in one run.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import RUNS, load_average

SIZES = (0, 1000, 3000)
PROGRAM = r"""
import json, sys, time
import jax, numpy as np
from course.engine.common import compile_cache
folder, bounded = sys.argv[1], sys.argv[2] == "1"
jax.config.update("jax_compilation_cache_dir", folder)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
jax.config.update("jax_compilation_cache_max_size", 256 * 2**20 if bounded else -1)
if not bounded:
    compile_cache.in_grading()
f = jax.jit(lambda s, d: (s + d) * 2.0, donate_argnums=(0,))
jax.block_until_ready(f(jax.device_put(np.ones(2, np.float32)), np.ones(2, np.float32)))  # JAX's start-up
times = []
for n in (3, 5, 7, 9, 11, 13):
    s, d = jax.device_put(np.ones(n, np.float32)), jax.device_put(np.ones(n, np.float32))
    t = time.perf_counter()
    jax.block_until_ready(f(s, d))
    times.append(time.perf_counter() - t)
print(json.dumps(times))
"""


def filled(size: int, bounded: bool) -> Path:
    """A cache folder holding `size` entries of 10 KB (with JAX's access-time files when it bounds it)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-cache-"))
    for i in range(size):
        (folder / f"jit_f-{i:064x}-cache").write_bytes(os.urandom(10_000))
        if bounded:
            (folder / f"jit_f-{i:064x}-atime").write_bytes(i.to_bytes(8, "little"))
    return folder


def compiles(size: int, bounded: bool) -> list[float]:
    """Seconds per compile of new programs in a cache of `size` entries, one fresh process."""
    folder = filled(size, bounded)
    try:
        done = subprocess.run([sys.executable, "-c", PROGRAM, str(folder), "1" if bounded else "0"],
                              capture_output=True, text=True, check=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    """Before against now at each size, alternating, RUNS processes each."""
    print(f"load average before: {load_average()}")
    for size in SIZES:
        found: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(RUNS):
            for bounded in (True, False):
                found[bounded] += compiles(size, bounded)
        before, now = statistics.median(found[True]), statistics.median(found[False])
        print(f"{size:5d} entries: one compile {before * 1000:.1f} ms bounded by JAX (before), "
              f"{now * 1000:.1f} ms unbounded (now): ratio {now / before:.2f}")
    print(f"load average after: {load_average()}")


if __name__ == "__main__":
    main()
