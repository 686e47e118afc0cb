"""Grading runs on the CPU: a learner who asks JAX for an accelerator is told why, and how to try one.

Every grading sets `JAX_PLATFORMS=cpu` (SPEC §5), so a verdict never depends on the learner's
hardware. A learner who set `JAX_PLATFORMS=cuda`, or has an accelerator plugin installed,
would otherwise not know their GPU is unused. An explicit `JAX_PLATFORMS` is answered on
every grading command; an installed plugin, which is always there, only the first time in a
workspace. Nothing here imports JAX.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping

from course.files import write_atomic
from course.paths import WorkspacePaths

PLUGIN_PREFIXES = ("jax_cuda", "jax_rocm", "jax_metal", "jax_tpu", "libtpu", "jax_plugins")
"""Folders an accelerator backend for JAX installs (its package, its `.dist-info`, or JAX's plugin
namespace package), as they appear in site-packages."""
ADVICE = (
    "grading runs on the CPU whatever JAX is asked for ({why}), so every learner gets the same verdict; "
    "on a TPU, `course check` then compiles your kernels on the chip and `course bench` times them; to try "
    "your code on another accelerator, run it in your own script or notebook that imports your file "
    "(`course run my_script.py` runs one, its kernels compiled on a TPU and interpreted elsewhere)."
)


def notice(paths: WorkspacePaths, env: Mapping[str, str] | None = None) -> str | None:
    """The sentence to say before grading, or None when there is nothing to say (or it was said)."""
    env = os.environ if env is None else env
    value = env.get("JAX_PLATFORMS", "").strip()
    if any(p.strip() not in ("", "cpu") for p in value.lower().split(",")):
        return ADVICE.format(why=f"JAX_PLATFORMS={value}")
    plugin = installed_plugin()
    if plugin is None or _told(paths, plugin):
        return None
    return ADVICE.format(why=f"{plugin} is installed")


def installed_plugin(path: list[str] | None = None) -> str | None:
    """The name of an installed accelerator plugin for JAX, if any, found by listing the import path's
    folders (importlib.metadata would take a tenth of a second to say the same)."""
    import sys

    for folder in sys.path if path is None else path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in sorted(names):
            if name.lower().replace("-", "_").startswith(PLUGIN_PREFIXES):
                return name.split("-")[0]
    return None


def _told(paths: WorkspacePaths, plugin: str) -> bool:
    """True when this workspace was already told about `plugin`; remembers it otherwise."""
    try:
        told = json.loads(paths.notices.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        told = {}
    if not isinstance(told, dict):
        told = {}
    if told.get("plugin") == plugin:
        return True
    told["plugin"] = plugin
    with contextlib.suppress(OSError):  # a read-only workspace is told every time
        write_atomic(paths.notices, json.dumps(told), private=True)
    return False
