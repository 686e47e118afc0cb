"""Run tests on 8 CPU devices even when this pytest process already started JAX with one.

JAX fixes the CPU device count when its backend starts, and the rest of the suite starts it with
one device. A test decorated with `@on_eight_devices` therefore runs in a child pytest, started
once per test file with `--xla_force_host_platform_device_count=8`, for all the decorated tests
of that file at once; in this process it reports the child's verdict, with the child's failure
text. When this process already has 8 devices (or is that child), the test runs here directly.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

DEVICES = 8
_CHILD = "COURSE_TEST_ON_EIGHT_DEVICES"
_REPO = Path(__file__).resolve().parents[2]
_registered: dict[str, list[str]] = defaultdict(list)


def on_eight_devices(test: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a test that needs 8 CPU devices; it runs in a child pytest unless this process has them."""
    path = str(Path(test.__code__.co_filename).resolve())
    _registered[path].append(test.__name__)

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        """Run the test here when 8 devices exist, else take its verdict from the child."""
        if _has_eight_devices():
            return test(*args, **kwargs)
        status, text = _child_results(path).get(test.__name__, ("missing", "the child run did not report it"))
        if status != "passed":
            pytest.fail(f"on {DEVICES} devices (child pytest): {status}\n{text}", pytrace=False)
        return None

    return wrapper


def _has_eight_devices() -> bool:
    """True in the child, or when this process's JAX already has 8 devices."""
    if os.environ.get(_CHILD) == "1":
        return True
    import jax

    return jax.device_count() >= DEVICES


@functools.cache
def _child_results(path: str) -> dict[str, tuple[str, str]]:
    """Run the decorated tests of one file in a child pytest with 8 devices: {name: (status, text)}."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        env = {**os.environ, _CHILD: "1", "JAX_PLATFORMS": "cpu",
               "XLA_FLAGS": f"--xla_force_host_platform_device_count={DEVICES}"}
        ids = [f"{path}::{name}" for name in _registered[path]]
        proc = subprocess.run(  # noqa: S603 - our own interpreter running our own test file
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(_REPO),
             f"--junitxml={report}", *ids],
            cwd=_REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
        )
        if not report.exists():
            tail = (proc.stdout + proc.stderr)[-3000:]
            return {name: ("error", f"the child pytest wrote no report:\n{tail}") for name in _registered[path]}
        return _parse(report)


def _parse(report: Path) -> dict[str, tuple[str, str]]:
    """{test name: (status, failure text)} from a JUnit XML report."""
    results = {}
    for case in ET.parse(report).iter("testcase"):
        status, text = "passed", ""
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                status = {"failure": "failed"}.get(child.tag, child.tag)
                text = (child.get("message") or "") + "\n" + (child.text or "")
        results[case.get("name", "")] = (status, text.strip())
    return results
