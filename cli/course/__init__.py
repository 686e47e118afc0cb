"""`course`: a graded coding-exercise platform for JAX performance; this package never imports JAX.

From Python and Jupyter, `course.check(NAME)` and `course.inspect(NAME)` grade and inspect an
exercise, `course.bench(NAME)` times its kernels on a TPU (or estimates them without one), and
`%load_ext course` adds the `%course` and `%%course` magics (`course.notebook`); they are loaded
on first use, so `import course` stays light.
"""

from typing import Any

__version__ = "0.1.0"

_NOTEBOOK = ("bench", "check", "inspect", "load_ipython_extension", "unload_ipython_extension")


def __getattr__(name: str) -> Any:
    """`course.check`, `course.inspect`, `course.bench` and IPython's hook, from `course.notebook` on first use."""
    if name in _NOTEBOOK:
        from course import notebook

        return getattr(notebook, name)
    raise AttributeError(f"module 'course' has no attribute {name!r}")
