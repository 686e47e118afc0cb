"""Where `course` keeps its own files: one `.course` folder in each workspace, and one in the course.

Every path to a file of ours is derived here, so the folder's name is written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

STATE_DIR = ".course"


@dataclass(frozen=True)
class WorkspacePaths:
    """The files `course` keeps in a learner's workspace."""

    root: Path

    @property
    def state(self) -> Path:
        """The `.course` folder itself."""
        return self.root / STATE_DIR

    @property
    def progress(self) -> Path:
        """Stored results, one signed entry per exercise."""
        return self.state / "progress.json"

    def progress_backup(self, n: int) -> Path:
        """Where the `n`th damaged progress file is kept: `progress.json.bak`, then `.bak.2`, `.bak.3`."""
        return self.state / ("progress.json.bak" if n == 1 else f"progress.json.bak.{n}")

    @property
    def progress_lock(self) -> Path:
        """The lock two `course` runs take before updating progress."""
        return self.state / "progress.lock"

    @property
    def key(self) -> Path:
        """The key that signs progress entries."""
        return self.state / "key"

    @property
    def hints(self) -> Path:
        """The hint level reached per exercise."""
        return self.state / "hints.json"

    @property
    def bench(self) -> Path:
        """The best time `course bench` measured of each exercise's calls, per chip."""
        return self.state / "bench.json"

    @property
    def notices(self) -> Path:
        """What this workspace has been told once, not to be told again."""
        return self.state / "notices.json"

    @property
    def backups(self) -> Path:
        """Learners' files kept by `course reset`."""
        return self.state / "backups"

    @property
    def cache(self) -> Path:
        """JAX's compilation cache for this workspace's gradings."""
        return self.state / "xla-cache"

    @property
    def marker(self) -> Path:
        """Written by `course init`: marks a workspace and records its course."""
        return self.state / "workspace.toml"


def registry_memo(course_root: Path) -> Path:
    """Where a course keeps its validated registry, keyed by the files' hashes."""
    return course_root / STATE_DIR / "registry.json"


def marker_rel() -> Path:
    """The workspace marker relative to any folder, for searching upward."""
    return Path(STATE_DIR) / "workspace.toml"
