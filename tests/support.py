"""Helpers the tests import by name (a conftest is pytest's to load, and several share that module name)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def git_commit(folder: Path) -> None:
    """Make `folder` a git checkout with one commit, as a cloned course is."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "course"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, env=env, capture_output=True)
