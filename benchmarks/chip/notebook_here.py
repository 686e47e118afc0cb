"""A notebook's process that holds the chip: `course.check` and `course.bench` run in it (the `here` path).

On a TPU, from the repository root with `cli` on PYTHONPATH: `python3 benchmarks/chip/notebook_here.py`.
"""

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp


def main() -> None:
    """Open the chip as a notebook's first cell would, then check and bench two references from this process."""
    workspace = Path(tempfile.mkdtemp()) / "ws"
    subprocess.run([sys.executable, "-m", "course", "init", str(workspace), "--course", "."], check=True,
                   capture_output=True)
    jax.block_until_ready(jnp.ones((8, 128)) * 2)  # this process holds the TPU from here on
    print("devices", jax.devices())
    import course

    for name in ("tiled_matmul", "flash_attention"):
        target = next(workspace.rglob(f"{name}.py"))
        shutil.copyfile(next(Path("solutions").glob(f"*_{name}")) / f"{name}.py", target)
        for verb in (course.check, course.bench):
            started = time.perf_counter()
            report = verb(name, workspace=workspace)
            print(verb.__name__, name, round(time.perf_counter() - started, 1), json.dumps(report.to_json())[:1500])


if __name__ == "__main__":
    main()
