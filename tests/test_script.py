"""`course run SCRIPT`: a learner's own script, its kernels strictly interpreted where JAX has no TPU, run for real."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

KERNEL = '''\
import sys

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

import helper


def double_kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2


x = jnp.arange(8 * 128, dtype=jnp.float32).reshape(8, 128)
y = pl.pallas_call(double_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
print("sum", float(y.sum()), "args", sys.argv[1:], helper.NAME, __name__)
if "--fail" in sys.argv:
    helper.fail()
if "--exit" in sys.argv:
    sys.exit(int(sys.argv[-1]))
'''
HELPER = 'NAME = "helper beside it"\n\n\ndef fail():\n    raise ValueError("the script failed")\n'
READ_ANY = '''\
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def read_hbm(x_ref, o_ref):
    o_ref[...] = x_ref[...]


x = jnp.ones((8, 128))
pl.pallas_call(read_hbm, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
               in_specs=[pl.BlockSpec(memory_space=pl.ANY)], interpret=True)(x).block_until_ready()
print("the forgiving interpreter ran it")
'''


@pytest.fixture
def script(tmp_path: Path) -> Path:
    """A script with a kernel and no `interpret=`, and a module of its own beside it."""
    (tmp_path / "helper.py").write_text(HELPER)
    path = tmp_path / "my_kernels.py"
    path.write_text(KERNEL)
    return path


def _run(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m course ARGV` in `cwd`, as a learner types it."""
    return subprocess.run([sys.executable, "-m", "course", *argv], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


@pytest.mark.slow
def test_a_kernel_with_no_interpret_runs_on_the_cpu(script: Path) -> None:
    """The script runs as `__main__` with its arguments, its own folder importable, the kernel interpreted;
    the same script under plain Python fails, as JAX refuses to compile a kernel for a CPU."""
    done = _run("run", script.name, "first", "--second", cwd=script.parent)
    assert done.returncode == 0, done.stderr
    assert "sum 1047552.0 args ['first', '--second'] helper beside it __main__" in done.stdout
    assert done.stderr.count("No TPU: Pallas kernels run in the strict TPU interpreter") == 1
    plain = subprocess.run([sys.executable, script.name], capture_output=True, text=True, cwd=script.parent,
                           timeout=300)
    assert plain.returncode != 0 and "Only interpret mode is supported on CPU backend" in plain.stderr


@pytest.mark.slow
def test_the_exit_code_and_the_traceback_are_the_scripts(script: Path) -> None:
    """`sys.exit(N)` is the exit code; an exception is told as Python tells it, from the script's own frames."""
    assert _run("run", script.name, "--exit", "7", cwd=script.parent).returncode == 7
    failed = _run("run", str(script), "--fail", cwd=script.parent.parent)
    assert failed.returncode == 1
    trace = failed.stderr[failed.stderr.index("Traceback"):]
    assert f'File "{script}", line' in trace and "helper.py" in trace and "ValueError: the script failed" in trace
    assert "runpy" not in trace and "course" not in trace.replace(str(script.parent), "")


@pytest.mark.slow
def test_the_strict_interpreter_overrides_interpret_true(tmp_path: Path) -> None:
    """A script that asks for the forgiving interpreter gets the strict one, which refuses to read HBM directly."""
    (tmp_path / "any_read.py").write_text(READ_ANY)
    assert "forgiving interpreter ran it" in subprocess.run(
        [sys.executable, "any_read.py"], capture_output=True, text=True, cwd=tmp_path, timeout=300).stdout
    strict = _run("run", "any_read.py", cwd=tmp_path)
    assert strict.returncode == 1 and "forgiving" not in strict.stdout


def test_a_missing_script_is_one_sentence(tmp_path: Path) -> None:
    """A path that is not there: exit 2 and what to give instead."""
    done = _run("run", "nowhere.py", cwd=tmp_path)
    assert done.returncode == 2 and "there is no file nowhere.py" in done.stderr


def test_the_decision_waits_for_the_first_kernel(tmp_path: Path) -> None:
    """The mode is set before the script runs, yet JAX's backend starts at the first kernel: a device count
    the script sets after that still counts, the announcement comes once, and undoing it restores
    `interpret=` as written."""
    code = '''
from course import interpreter
interpreter.interpret_where_no_tpu(lambda: print("announced"))
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=3"
import jax, jax.numpy as jnp
from jax.experimental import pallas as pl
from jax._src import config
def k(x_ref, o_ref):
    o_ref[...] = x_ref[...] + 1
call = lambda x: pl.pallas_call(k, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
x = jnp.zeros((8, 128))
print(float(call(x)[0, 0]), float(call(x + 1)[0, 0]), len(jax.devices()))
print(jax.make_jaxpr(call)(x).eqns[0].params["interpret"].__class__.__name__.endswith("NoTpu"))
interpreter.interpret_as_written()
print(config.pallas_tpu_interpret_mode_context_manager.get_global())
'''
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["announced", "1.0 2.0 3", "True", "None"]
