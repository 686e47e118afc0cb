"""How one grading process is invoked: its command line, its environment, its sandbox policy, and its events.

Shared by `course.engine.parent.runner` (one process per grading) and `course.engine.parent.cohort` (several).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path

from course.engine.common import compile_cache
from course.engine.contain import protections, system
from course.engine.contain.protections import Confinement
from course.engine.contain.sandbox import Policy
from course.engine.parent import tree
from course.engine.parent.verdict import CheckEvent, ExerciseResult
from course.registry import Exercise


def cancelled(name: str, seed: int) -> ExerciseResult:
    """The result of a grading stopped on request: no verdict, so nothing to record."""
    return ExerciseResult(name=name, status=tree.CANCELLED, seed=seed, message="the grading was cancelled")


def source_text(submission: Path) -> str | None:
    """The learner's file as text, or None when it cannot be read."""
    try:
        return submission.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def policy(sandbox: Confinement | None, workdir: Path, exercise: Exercise, submission: Path,
           own_graders: bool = False) -> Policy | None:
    """What this grading may touch: its work folder, the grader's folder and the submission's. Not
    sandboxed, a grading still keeps its processes in (`protections.contained`) where the machine can.
    With `own_graders`, the graders it runs are copies in its work folder (`graders_copy`), and the
    course's grader folder, which holds the hidden checks, is not readable at all."""
    if sandbox is None:
        return protections.contained()
    readable = [str(submission.resolve().parent)]
    if not own_graders:
        readable.insert(0, str(exercise.grader_path.parent))
    return sandbox.policy(workdir=str(workdir), read=readable)


def events_for(name: str, on_event: Callable[[CheckEvent], None] | None) -> Callable[[dict], None] | None:
    """Turn the grading's raw event lines into `CheckEvent`s for `on_event`."""
    if on_event is None:
        return None

    def forward(raw: dict) -> None:
        """Pass on one well-formed event."""
        event = CheckEvent.parse(name, raw)
        if event is not None:
            on_event(event)

    return forward


def hand_over(policy: Policy | None, workdir: Path, exercise: Exercise, submission: Path,
              own_graders: bool = False) -> tuple[Path, Path | None]:
    """Where the grading reads its submission and graders from: as they are, or, for a grading that
    runs as a user of its own (`Policy.user`, a root `course`), copies in its work folder, which
    that user then owns; the instructor's folders need not be readable by it. With `own_graders`
    (a sandboxed executor, whose hidden checks run in the judge), the graders are copies without them."""
    if policy is None or policy.user < 0 or os.geteuid() != 0:
        return submission, graders_copy(workdir, exercise, hidden=False) if own_graders and policy is not None else None
    import shutil

    mine = workdir / "submission" / submission.name
    mine.parent.mkdir()
    shutil.copyfile(submission, mine)
    graders = graders_copy(workdir, exercise, hidden=not own_graders)
    for path in (workdir, mine.parent, mine, *(p for p in workdir.iterdir() if p.name != "graders")):
        os.chown(path, policy.user, policy.group, follow_symlinks=False)
    return mine, graders


def graders_copy(workdir: Path, exercise: Exercise, hidden: bool) -> Path:
    """The grader's folder copied into the work folder (its hidden checks only if `hidden`), readable
    and never writable by the grading's user."""
    import shutil

    graders = workdir / "graders"
    skip = ("__pycache__",) if hidden else ("__pycache__", "hidden")
    shutil.copytree(exercise.grader_path.parent, graders, ignore=shutil.ignore_patterns(*skip))
    for path in graders.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    graders.chmod(0o755)
    return graders


def graders_link(workdir: Path, exercise: Exercise) -> Path:
    """A link in the work folder to the grader's folder, so a sandboxed pytest, which lists each
    folder on the way from its root folder to a test file, lists only folders it may read."""
    link = workdir / "graders"
    link.symlink_to(exercise.grader_path.parent, target_is_directory=True)
    return link


_BOOT = ("import os, runpy, sys; sys.path[0:0] = sys.argv.pop(1).split(os.pathsep); "
         "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)")
"""What `python -I -c` runs to put the course's own import path first, then run a module as `-m` would."""


def python_module(module: str, learner: Path | None = None) -> list[str]:
    """The command that runs `module` as `python -I -m module` does, in a fresh interpreter that imports what this
    process imports: the entries of this process's import path that isolated mode leaves out
    (`protections.import_path`) are put first. Isolation's point stands: neither the current folder nor a script's
    folder is ever on it, nor (given the `learner`'s file) that file's folder or the workspace holding it."""
    extra = [p for p in protections.import_path() if learner is None or not _learners(Path(p), learner)]
    if not extra:
        return [sys.executable, "-I", "-m", module]
    return [sys.executable, "-I", "-c", _BOOT, os.pathsep.join(extra), module]


def _learners(folder: Path, learner: Path) -> bool:
    """True when `folder` is the learner's file's folder or lies beneath it, or is the workspace that holds it
    (`exercises/NN_name/name.py`)."""
    own = learner.resolve().parent
    workspace = own.parent.parent if own.parent.name == "exercises" else own
    here = folder.resolve()
    return here in (workspace, own) or own in here.parents


def command(exercise: Exercise, submission: Path, workdir: Path, report_path: Path, seed: int, hidden: bool,
            folder: Path | None = None, first_failure: bool = False) -> list[str]:
    """The pytest command line; `{keyfd}` and `{eventsfd}` are filled in by the launcher. The
    graders are read from `folder` when given (a link to the grader's folder), else where they are.
    With `first_failure`, pytest stops at the first check that fails (`-x`)."""
    folder = folder or exercise.grader_path.parent
    graders = [str(folder / exercise.grader_path.name)]
    if hidden and exercise.hidden_grader_path.is_file():
        graders.append(str(folder / "hidden" / exercise.hidden_grader_path.name))
    ini = workdir / "pytest.ini"
    ini.write_text("[pytest]\n", encoding="utf-8")
    return [
        *python_module("pytest", learner=submission),
        *graders,
        "-p",
        "course.engine.child.plugin",
        "--noconftest",
        "-p",
        "no:cacheprovider",
        # These two only warn about exceptions nobody caught, and their clean-up runs the
        # garbage collector over JAX's large heap several times: a quarter second per grading.
        "-p",
        "no:unraisableexception",
        "-p",
        "no:threadexception",
        "-c",
        str(ini),
        "--rootdir",
        str(workdir),
        "-q",
        "-s",
        # Nobody reads pytest's own account of a failure (its terminal output is taken away, and
        # each message is the plugin's): the one-line style spares it parsing the grader's source
        # and resolving every frame's module for each failed check.
        "--tb=line",
        "--course-report",
        str(report_path),
        "--course-submission",
        str(submission.resolve()),
        "--course-seed",
        str(seed),
        "--course-key-fd",
        "{keyfd}",
        "--course-events-fd",
        "{eventsfd}",
        "--course-go-fd",
        "{gofd}",
        "--course-hard-exit",
        *(["--exitfirst"] if first_failure else []),
    ]


# XLA's CPU fusion emitters, its default, take about twice as long to compile a small program as its
# older emitters, and a grading compiles dozens: the 25 reference solutions grade in 0.87 of the time
# (`benchmarks/bench_compile.py`). The programs keep their operations, buffers and aliasing; only
# single operations are no longer wrapped in fusions of their own, which no check reads.
FAST_COMPILE = "--xla_cpu_use_fusion_emitters=false"
FAST_COMPILE_JAXLIB = "0.10."
"""The jaxlib releases known to accept FAST_COMPILE: XLA aborts at start-up on a flag it does not know."""


def environment(exercise: Exercise, cache_dir: Path | None, read_only_cache: bool = False) -> dict[str, str]:
    """A small, clean environment: CPU JAX with the device count the grader needs, compiling fast."""
    env = {**base_environment(cache_dir), "XLA_FLAGS": xla_flags(exercise.meta.devices)}
    if cache_dir is not None and read_only_cache:
        env.update(compile_cache.environment(cache_dir, read_only=True))
    return env


def xla_flags(devices: int) -> str:
    """XLA_FLAGS of a grading: `devices` CPU devices, and the fast compiler where the jaxlib accepts it."""
    flags = [f"--xla_force_host_platform_device_count={devices}"]
    if jaxlib_version().startswith(FAST_COMPILE_JAXLIB):
        flags.append(FAST_COMPILE)
    return " ".join(flags)


@functools.cache
def jaxlib_version() -> str:
    """The installed jaxlib's version, or ''. Read from the name of its `.dist-info` folder on the import path, as
    importlib.metadata would find it first: importing that would hold every `course check` up by 15 ms before its
    grading starts (and importing jaxlib, by a second). A jaxlib installed otherwise (an egg) is asked of it."""
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        found = [name for name in names if name.startswith("jaxlib-") and name.endswith(".dist-info")]
        if found:
            return found[0][len("jaxlib-"):-len(".dist-info")]
    from importlib import metadata

    try:
        return metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        return ""


def base_environment(cache_dir: Path | None = None) -> dict[str, str]:
    """The grading environment without the device count, which a warm worker sets per grading.

    With `cache_dir`, JAX's persistent compilation cache keeps every executable there: a
    re-check of unchanged code loads its programs instead of compiling them again, which is most
    of a grading's time on the CPU. Compile events still fire on a cache hit, so compile counts
    are unchanged. `course.engine.common.compile_cache` keeps it within its size.
    """
    # TMPDIR too: the learner's temporary folder (macOS gives each user one) stays theirs, not the machine's.
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "USER", "TZ", "TMPDIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        {
            "JAX_PLATFORMS": "cpu",
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            # Inherited by every descendant: lets the sweep recognise an escaped one as ours.
            system.GRADING_MARKER[0]: system.GRADING_MARKER[1],
            "TF_CPP_MIN_LOG_LEVEL": "2",
        }
    )
    if cache_dir is not None:
        env.update(compile_cache.environment(cache_dir))
    return env
