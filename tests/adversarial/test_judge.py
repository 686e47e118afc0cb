"""Attacks on the split grading: the learner's code shares a process with the executor, never with the judge.

Each attack in `attacks/judge/` is a file for the real `update_with_donate` (or, where named, another
exercise), graded by the real `course check` in a fresh `course init` workspace, and then through
`course grade` with the sandbox; each must score exactly what it deserves (`DESERVED`). Every attack that
returns wrong values must fail the values check, which the judge decides: patching NumPy, the grader's
helpers or pytest in the learner's process, or hunting for the judge's process, changes nothing it sees.
An executor that goes away fails the judge's checks as the learner's doing (exit 1, recorded), never the
platform's (exit 3). Nothing the learner's code does to what either side writes can raise a score: a report
removed, emptied or put back to an earlier one, tampering on either side, or a killed judge, voids every
check; an exit keeps the verdicts of the checks that finished.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from course.engine.contain import protections
from course.registry import load_course

REPO = Path(__file__).resolve().parents[2]
ATTACKS = Path(__file__).parent / "attacks" / "judge"
COURSE_BIN = Path(sys.executable).with_name("course")
CHECKS = ["test_values", "test_dtype_and_shape", "test_state_consumed", "test_helper_aliases_state",
          "test_helper_built_once", "test_no_read_after_donate", "test_no_copy_before_donate"]
SOLUTION = REPO / "solutions" / "01_update_with_donate" / "update_with_donate.py"
WRONG_VALUES = r"differs from the expected value"
GONE = r"ended|os\._exit|sys\.exit"
ENDED = r"ended before reporting"
TAMPERED = r"grading machinery was tampered with"
REMOVED = r"report was removed or changed while your code ran"
UNVOUCHED = r"does not vouch for every answer the judge received"
DAMAGED = r"grading report was damaged"
# attack on update_with_donate -> (the score of 7 it deserves through `course check`, through `course grade`
# with the sandbox, and a pattern of what the learner reads through `course check`: the exercise's message, then
# each check's as "id: message")
DESERVED = {
    "rebind_less_equal": (6.0, 6.0, r"6 of 7 checks passed"),
    "hunt_judge": (6.0, 6.0, r"6 of 7 checks passed"),
    "patch_everything": (0.0, 0.0, TAMPERED),
    "exit_in_call": (0.0, 0.0, ENDED),
    "close_link": (0.0, 0.0, ENDED),
    "hide_recompiles": (6.0, 6.0, r"6 of 7 checks passed"),
    "remove_own_report": (0.0, 0.0, REMOVED),
    # Under `course grade` the executor's temporary folder is its own: the judge's report is out of reach.
    "remove_judge_report": (0.0, 6.0, REMOVED),
    "hide_tampering": (0.0, 0.0, REMOVED),
    "tamper_in_executor": (0.0, 0.0, TAMPERED + r".*is_consumed"),
    # Its child truncates the report once it reads complete, racing the executor's own last rewrite of it: the
    # report is then found emptied (removed or changed) or cut mid-write (damaged). Each is 0 points; which one
    # depends on the machine's load (a loaded suite run met the second).
    "truncate_report": (0.0, 0.0, f"{REMOVED}|{DAMAGED}"),
    # Its child writes the old report back with a plain write, racing the grading's end: read before, during or
    # after that write, the report says the machinery was tampered with, is damaged, or does not vouch for the
    # answers. Each is 0 points; which one depends on the machine's load.
    "replay_report": (0.0, 0.0, f"{UNVOUCHED}|{DAMAGED}|{TAMPERED}"),
    "exit_in_own_check": (5.0, 5.0, r"test_no_read_after_donate: .*" + ENDED),
    "exit_in_last_check": (6.0, 6.0, r"test_no_copy_before_donate: .*" + ENDED),
    "kill_judge": (6.0, 6.0, r"6 of 7 checks passed"),  # in a PID namespace its judge cannot be seen
    "donate_when_read": (4.0, 4.0, r"test_state_consumed: `update_with_donate` behaves two ways"),
    # Right values from NumPy, `state` donated to a program beside them: the judge runs the call's programs itself.
    # Length 0 passes: an empty result holds nothing, and an empty array is a constant of the chain.
    "side_program": (6.0, 6.0, r"test_values: for length 1, the result is not computed by the jitted program"),
}
# attack on remat_policy -> the part of the machinery it rebinds (each deserves 0 of 9: tampering)
REBINDS = {"rebind_dispatch": r"course\.engine\.executor\.asks\._dispatch",
           "rebind_watch": r"course\.grading\.observe\.calls\.warmup\.watch"}
REMAT = REPO / "solutions" / "17_remat_policy" / "remat_policy.py"
# Attacks on other exercises than update_with_donate: attack -> (the exercise's folder, the checks it loses in the
# grader's order, a pattern of one of their messages).
OTHER_EXERCISES = {
    "hide_smem_recompiles": ("05_smem_scalar", "test_new_lengths_compile_nothing",
                             r"runs a program that no earlier call ran"),
    "delete_not_donate": ("03_aliasing_order", "test_x_consumed", r"deleting an array is not donating it"),
    "alias_order_patched": ("03_aliasing_order", "test_swap_halves_kernel_under_aliasing", WRONG_VALUES),
    "alias_declared_patched": ("03_aliasing_order", "test_aliasing_declared", r"declares `input_output_aliases=\{\}`"),
    "named_ref_patched": ("08_named_ref", "test_under_jit", WRONG_VALUES),
    "time_step_patched": ("19_no_host_sync", "test_time_step_uses_clock", r"should return 0\.25; it returned 0\.75"),
    "mp_rows_patched": ("25_multi_process", "test_reads_own_rows", r"not those rows in order"),
    # Hiding its programs also hides its matmuls from the check that reads them from what the call ran.
    "hide_eager_programs": ("18_mixed_precision", "test_train_step_matmuls test_train_step_jitted",
                            r"its calls ran no `jax.jit` of yours"),
}
# Right values made outside the programs a call ran, a program of the learner's beside them for its facts: attack ->
# (the exercise's folder, the one check it loses, a pattern of its message). The judge runs the call's programs
# itself on fresh inputs (`course.grading.rerun`); `side_program` above is the same for `update_with_donate`.
SIDE_PROGRAMS = {
    "sharded_side_program": ("12_sharded_donated_step", "test_values",
                             r"not all computed by the programs your call of `sgd_step` ran"),
    "scan_side_program": ("16_scan_layers", "test_forward_values", r"is not computed by the programs your call ran"),
    "mixed_side_program": ("18_mixed_precision", "test_small_updates_kept",
                           r"not all computed by the programs its call ran"),
    "remat_side_program": ("17_remat_policy", "test_values_loss_and_grads test_values_min_memory",
                           r"not all computed by the programs its call ran"),
    "budget_side_program": ("07_compile_budget", "test_values", r"is not computed by the programs your call ran"),
    # A kernel's values come from the grader's own jit of the learner's function: the judge reads that program and
    # fails values that pass through a host callback in it (its kernel check also sees the pass after the kernel).
    "kernel_callback": ("13_tiled_matmul", "test_values_float32 test_values_bfloat16_accumulate_in_float32 "
                        "test_kernel_does_the_work", r"calls back into Python on the host|made by `pure_callback`"),
}
# attack -> (the values check's message, a pattern), for attacks on update_with_donate
EXPECTED = {
    "rebind_less_equal": WRONG_VALUES,
    "patch_everything": TAMPERED,  # its tampering voids every check, the values check included
    "hunt_judge": WRONG_VALUES,
    "exit_in_call": GONE,
    "close_link": r"ended before reporting|process running your code ended",
    "side_program": r"the result is not computed by the jitted program your call ran",
}


def _check(root: Path, attack: Path, folder: str = "01_update_with_donate",
           env: dict[str, str] | None = None) -> tuple[int, dict, Path]:
    """Grade one file as the exercise in `folder` of a fresh workspace with `course check --json`."""
    workspace, name = root / attack.stem, _name(folder)
    init = subprocess.run([str(COURSE_BIN), "init", str(workspace), "--course", str(REPO)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert init.returncode == 0, init.stderr
    shutil.copyfile(attack, workspace / "exercises" / folder / f"{name}.py")
    done = subprocess.run([str(COURSE_BIN), "check", name, "--json", "-w", str(workspace),
                           "--course", str(REPO)], capture_output=True, text=True, timeout=900, check=False, env=env)
    assert done.stdout.strip(), done.stderr[-2000:]
    return done.returncode, json.loads(done.stdout)["exercises"][0], workspace


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, dict, Path]]:
    """Every attack and the reference solution, each graded once, two at a time."""
    root = tmp_path_factory.mktemp("judge")
    files = [*sorted(ATTACKS.glob("*.py")), SOLUTION]
    files = [f for f in files if f.stem not in ("hidden_lookup", "mp_zeros_patched", "hide_compiles",
                                                "hide_budget_compiles", *OTHER_EXERCISES, *REBINDS,
                                                *SIDE_PROGRAMS)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip([f.stem for f in files], pool.map(lambda f: _check(root, f), files), strict=True))


def _course_of(tmp_path: Path, *folders: str) -> Path:
    """A course of exercises of the real course (`folder`, such as `12_sharded_donated_step`), numbered from 01."""
    course, names = tmp_path / "course", [folder.split("_", 1)[1] for folder in folders]
    for number, (folder, name) in enumerate(zip(folders, names, strict=True), start=1):
        for top in ("exercises", "graders", "solutions"):
            shutil.copytree(REPO / top / folder, course / top / f"{number:02d}_{name}",
                            ignore=shutil.ignore_patterns("__pycache__"))
    (course / "course.toml").write_text(f'format_version = 1\ntitle = "One"\nexercises = {json.dumps(names)}\n',
                                        encoding="utf-8")
    return course


def _graded_class(tmp_path: Path, course: Path, name: str, files: dict[str, Path | dict[str, Path]]) -> dict[str, dict]:
    """Each student's results.json after `course grade` (with the sandbox) of their file for `name` (or of their
    files, by exercise name)."""
    subs = tmp_path / "subs"
    for student, source in files.items():
        (subs / student).mkdir(parents=True)
        for exercise, path in (source if isinstance(source, dict) else {name: source}).items():
            shutil.copyfile(path, subs / student / f"{exercise}.py")
    done = subprocess.run([str(COURSE_BIN), "grade", str(subs), "--out", str(tmp_path / "out"), "--course",
                           str(course), "--json", "--jobs", "2"], capture_output=True, text=True, timeout=900,
                          check=False)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    return {s: json.loads((tmp_path / "out" / s / "results.json").read_text(encoding="utf-8")) for s in files}


def test_the_reference_passes_split(checked: dict[str, tuple[int, dict, Path]]) -> None:
    """The control: the reference solution passes every check, the judge's and the executor's."""
    code, result, _ = checked["update_with_donate"]
    assert code == 0 and result["status"] == "passed", result


@pytest.mark.parametrize("attack", sorted(EXPECTED))
def test_the_judge_decides_the_values(checked: dict[str, tuple[int, dict, Path]], attack: str) -> None:
    """Whatever the learner's process does to itself, the values check fails, in plain words, as the
    learner's doing (exit 1, recorded), and the other checks still have their own verdicts."""
    code, result, workspace = checked[attack]
    values = next(c for c in result["checks"] if c["id"] == "test_values")
    assert code == 1 and result["status"] == "failed", result
    assert values["status"] == "failed"
    assert re.search(EXPECTED[attack], values["message"]), values["message"]
    assert len(result["checks"]) == 7 and result["checks"][0]["id"] == "test_values"  # the grader's order
    progress = json.loads((workspace / ".course" / "progress.json").read_text(encoding="utf-8"))
    assert "update_with_donate" not in json.dumps(progress.get("passed", [])), progress


@pytest.mark.parametrize("attack", sorted(DESERVED))
def test_each_attack_scores_what_it_deserves(checked: dict[str, tuple[int, dict, Path]], attack: str) -> None:
    """Through `course check`, each attack scores exactly what it deserves, as the learner's doing (exit 1),
    with every check of the grader listed in its order, and no pass recorded in progress."""
    code, result, workspace = checked[attack]
    deserved, _, said = DESERVED[attack]
    if attack == "kill_judge" and protections.contained() is None:  # no namespace: the judge was killed
        deserved, said = 0.0, r"judge process was ended by signal"
    assert code == 1 and result["status"] == "failed", result
    assert (result["score"], result["max_score"]) == (deserved, 7.0), [(c["id"], c["message"]) for c in
                                                                       result["checks"]]
    words = "\n".join([result["message"], *(f'{c["id"]}: {c["message"]}' for c in result["checks"])])
    assert re.search(said, words), words
    assert [c["id"] for c in result["checks"]] == CHECKS
    recorded = json.loads((workspace / ".course" / "progress.json").read_text(encoding="utf-8"))["exercises"]
    assert (recorded["update_with_donate"]["status"], recorded["update_with_donate"]["score"]) == ("failed",
                                                                                               deserved), recorded


def test_a_judge_killed_where_no_namespace_hides_it_voids_the_grading(tmp_path: Path) -> None:
    """Without a PID namespace (`COURSE_PORTABLE=1`), the learner's code can find its judge and kill it: that is
    the learner's doing, a failure with no check counted (0 of 7, exit 1), never the platform's error (exit 3)."""
    env = {**os.environ, "COURSE_PORTABLE": "1"}
    code, result, _ = _check(tmp_path, ATTACKS / "kill_judge.py", env=env)
    assert (code, result["status"], result["score"], result["max_score"]) == (1, "failed", 0.0, 7.0), result
    assert "judge process was ended by signal 9" in result["message"], result["message"]
    assert [c["id"] for c in result["checks"]] == CHECKS


@pytest.mark.parametrize("attack", sorted(REBINDS))
def test_the_executors_request_machinery_is_guarded(tmp_path: Path, attack: str) -> None:
    """A `remat_policy` left unjitted that rebinds what answers the judge (`asks._dispatch`, or the recorder
    `warmup.watch`) to run a jitted copy scored 9 of 9 while those modules were imported after the guard's
    snapshot. They are loaded before it now: the rebinding is tampering, and no check counts (0 of 9)."""
    code, result, _ = _check(tmp_path, ATTACKS / f"{attack}.py", "17_remat_policy")
    assert (code, result["status"], result["score"], result["max_score"]) == (1, "failed", 0.0, 9.0), result
    assert re.search(TAMPERED + ".*" + REBINDS[attack], result["message"]), result["message"]


def test_patching_numpy_passed_before_the_split(tmp_path: Path) -> None:
    """The same file, with every check in its own process (as graders without judge checks run), passes:
    the attack is real, and only the judge stops it."""
    from course.engine.parent import runner

    course = _course_of(tmp_path, "01_update_with_donate")
    exercise = load_course(course).get("update_with_donate")
    grader = exercise.grader_path
    grader.write_text(grader.read_text(encoding="utf-8").replace("@pytest.mark.judge\n", ""), encoding="utf-8")
    result = runner.grade(exercise, ATTACKS / "rebind_less_equal.py", skip_stub=False)
    assert result.passed, [(c.id, c.message) for c in result.checks]


@pytest.mark.parametrize("name", ["update_with_donate", "sharded_donated_step", "scan_layers", "no_host_sync",
                                  "grad_accumulation", "compile_budget"])
def test_graders_that_ask_the_executor_pass_the_reference_unsplit(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A grader whose judge checks ask the executor for programs and compiles (`jit_calls`, `watched_calls`)
    grades the same when every check runs beside the learner's code, as under a bare `pytest`."""
    from course.engine.parent import judging, runner

    exercise = load_course(REPO).get(name)
    monkeypatch.setattr(judging, "wanted", lambda exercise, hidden: False)
    result = runner.grade(exercise, next((REPO / "solutions").glob(f"*_{name}")) / f"{name}.py", skip_stub=False)
    assert result.passed, [(c.id, c.message) for c in result.checks]


def test_hidden_checks_are_out_of_the_learners_reach(mini_course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that looks for the hidden checks in its own process (modules, functions) finds nothing:
    they run only in the judge, so it returns the right values and every check passes."""
    from course.engine.parent import judging
    from course.engine.parent.runner import grade

    exercise = load_course(mini_course).get("ex_fail")
    result = grade(exercise, ATTACKS / "hidden_lookup.py", hidden=True, skip_stub=False)
    assert result.passed, [(c.id, c.message) for c in result.checks]
    assert [c.id for c in result.checks if c.hidden] == ["test_negative"]
    # The control: graded in one process, as before the split, it finds them and fails.
    monkeypatch.setattr(judging, "wanted", lambda exercise, hidden: False)
    assert not grade(exercise, ATTACKS / "hidden_lookup.py", hidden=True, skip_stub=False).passed


@pytest.mark.parametrize("landlock", [True, False], ids=["this machine's sandbox", "the sandbox without Landlock"])
def test_a_sandboxed_executor_cannot_read_the_hidden_checks(mini_course: Path, tmp_path: Path, landlock: bool) -> None:
    """With the sandbox, the executor gets a copy of the public grader only: the hidden grader's file,
    which it could otherwise read from the course's grader folder, is out of its reach. Without Landlock
    (a machine that lacks it, or this one's sandbox with it taken away) the weaker promise of
    docs/security.md holds instead: the grading's file access is the instructor user's (here the course
    sits in /tmp, which the grading's own mount namespace empties, so the read may still fail), and the
    hidden checks still run in the judge alone."""
    import dataclasses

    from course.engine.contain import protections
    from course.engine.parent.runner import grade

    sandbox = protections.confinement()
    if not landlock:
        sandbox = dataclasses.replace(sandbox, protections=dataclasses.replace(sandbox.protections, landlock_abi=0))
    exercise = load_course(mini_course).get("ex_fail")
    hidden = exercise.hidden_grader_path
    attack = tmp_path / "student" / "ex_fail.py"  # a folder of its own: the course is in tmp_path too
    attack.parent.mkdir()
    attack.write_text(f"""import os


def double(x):
    \"\"\"Twice x, unless the hidden grader can be read from here.\"\"\"
    try:
        with open({str(hidden)!r}) as fh:
            fh.read()
    except OSError:
        return 2 * x
    return 2 * x + 1
""", encoding="utf-8")
    result = grade(exercise, attack, hidden=True, sandbox=sandbox, skip_stub=False)
    assert [c.id for c in result.checks if c.hidden] == ["test_negative"]
    if not sandbox.protections.landlock_abi:
        assert result.status in ("passed", "failed"), (result.status, result.message)  # graded, never an error
        return
    assert result.passed, [(c.id, c.message) for c in result.checks]
    unsandboxed = grade(exercise, attack, hidden=True, skip_stub=False)  # the control: it can read it there
    assert not unsandboxed.passed


def test_compiles_hidden_from_the_count_show_in_update_with_donates_programs(
        checked: dict[str, tuple[int, dict, Path]]) -> None:
    """An `update_with_donate` that compiles a new program on every call and renames JAX's compile event after
    its first call scored 7 of 7 while the count was all the evidence. Through `course check`, the judge reads
    each call's program: a new shape's program, reported as no compile, fails "compiles once" alone."""
    code, result, _ = checked["hide_recompiles"]
    failed = [c for c in result["checks"] if c["status"] != "passed"]
    assert code == 1 and [c["id"] for c in failed] == ["test_helper_built_once"], result
    assert "runs a program that no earlier call ran" in failed[0]["message"], failed[0]


def test_values_made_beside_the_programs_fail(tmp_path: Path) -> None:
    """Each of `SIDE_PROGRAMS` scored full marks while the judge compared only what the call returned; through
    `course check` it now fails its values check alone, in words that say the result was made outside the
    programs its call ran."""
    folders = sorted({folder for folder, _, _ in SIDE_PROGRAMS.values()})
    results = _checked_all(tmp_path / "ws", _course_of(tmp_path, *folders), folders,
                           {folder: attack for attack, (folder, _, _) in SIDE_PROGRAMS.items()})
    for attack, (folder, check, said) in SIDE_PROGRAMS.items():
        result = results[folder.split("_", 1)[1]]
        failed = [c for c in result["checks"] if c["status"] != "passed"]
        assert [c["id"] for c in failed] == check.split(), (attack, result)
        assert all(re.search(said, c["message"]) for c in failed), failed


def test_several_processes_are_judged_too(tmp_path: Path) -> None:
    """`multi_process`, graded by two processes at once, with a mean of zeros in processes where every
    NumPy closeness test says yes: NumPy's own `isclose` and `allclose` are rebound, which the guard sees,
    so the processes' reports say the machinery was tampered with, and no check counts (0 points), the
    judges' included. (`mp_rows_patched`, through `course grade`, rebinds only what the guard does not note:
    there each process's judge decides, and the one check it forged fails.)"""
    from course.engine.parent.runner import grade

    exercise = load_course(REPO).get("multi_process")
    result = grade(exercise, ATTACKS / "mp_zeros_patched.py", skip_stub=False)
    assert (result.status, result.score, result.tampered) == ("failed", 0.0, True), result.message
    assert re.search(TAMPERED + r".*numpy\.(allclose|isclose)", result.message), result.message
    assert result.checks[0].id == "test_imports" and len(result.checks) == 5  # the grader's order


def test_course_grade_judges_the_values_too(tmp_path: Path) -> None:
    """Through `course grade` with the sandbox, as an instructor grades a class: the file that patches
    NumPy scores the points of the checks it can forge in its own process, never the values check, and
    every attack scores what it deserves (`DESERVED`, `REBINDS`: what removing, emptying or replaying a
    report, tampering, exiting or rebinding the executor's machinery earns), while its classmate's reference
    solutions score everything."""
    course = _course_of(tmp_path, "01_update_with_donate", "17_remat_policy")
    students: dict[str, Path | dict[str, Path]] = {
        "ada": {"update_with_donate": SOLUTION, "remat_policy": REMAT},
        **{attack: {"update_with_donate": ATTACKS / f"{attack}.py"} for attack in DESERVED},
        **{attack: {"remat_policy": ATTACKS / f"{attack}.py"} for attack in REBINDS}}
    graded = _graded_class(tmp_path, course, "", students)
    assert graded["ada"]["score"] == 16.0, graded["ada"]["output"]
    mallory = graded["rebind_less_equal"]
    values = [t for t in mallory["tests"] if "Returns state + delta" in t["name"]]
    assert len(values) == 1 and values[0]["score"] == 0, mallory["tests"]
    assert mallory["extra_data"]["exercises"]["update_with_donate"]["status"] == "failed"
    # Compiles hidden from the count, in the sandbox too: the programs' texts give them away.
    lost = [t for t in graded["hide_recompiles"]["tests"] if t["score"] < t["max_score"]
            and t["name"].startswith("update_with_donate: ")]
    assert len(lost) == 1 and lost[0]["name"].endswith("Compiles once per shape, not once per call."), lost
    assert "runs a program that no earlier call ran" in lost[0]["output"], lost[0]
    scores = {attack: graded[attack]["score"] for attack in [*DESERVED, *REBINDS]}
    assert scores == {**{a: d[1] for a, d in DESERVED.items()}, **dict.fromkeys(REBINDS, 0.0)}, scores
    for attack in [*DESERVED, *REBINDS]:  # every check of the grader is listed, none dropped
        name = "remat_policy" if attack in REBINDS else "update_with_donate"
        tests = [t for t in graded[attack]["tests"] if t["name"].startswith(f"{name}: ")]
        assert sum(t["max_score"] for t in tests) == (9.0 if attack in REBINDS else 7.0), (attack, tests)


def test_reported_facts_are_checked_against_the_programs(tmp_path: Path) -> None:
    """Facts only the learner's process can report, checked against the programs it compiled, and values it
    computed, compared in the judge: `smem_scalar` with a new program on every call and its compiles hidden from
    the count, `aliasing_order` that deletes `x` by hand instead of donating it, `aliasing_order` whose kernels
    are wrong under aliasing, `named_ref` whose reads are wrong inside the grader's `jax.jit`, `no_host_sync`
    whose `time_step` returns the total time, and `multi_process` (two processes) whose `load_shard` returns its
    rows reversed, each of those four in a process where NumPy's comparisons say yes, and `mixed_precision` whose
    unjitted `train_step` hides its eager programs from the recorder of programs run. Each scored full marks
    while its process had the last word. Through `course grade` with the sandbox (each attack a student of its
    own) and through `course check`, each now fails the check it forged (`mixed_precision`'s also the one that
    reads its matmuls from the programs its call ran, which it hid). The same `course grade` grades
    `HIDDEN_COMPILES` beside a classmate's reference solutions."""
    folders = sorted({folder for folder, _, _ in OTHER_EXERCISES.values()} | {f for f, *_ in HIDDEN_COMPILES})
    course = _course_of(tmp_path, *folders)
    pairs = [(attack, folder) for attack, (folder, _, _) in OTHER_EXERCISES.items()]
    pairs += [(attack, folder) for folder, attack, *_ in HIDDEN_COMPILES]
    students: dict[str, Path | dict[str, Path]] = {
        attack: {_name(folder): ATTACKS / f"{attack}.py"} for attack, folder in pairs}
    students["ada"] = {_name(f): REPO / "solutions" / f / f"{_name(f)}.py" for f, *_ in HIDDEN_COMPILES}
    graded = _graded_class(tmp_path, course, "", students)
    _hidden_compiles_lose_one_check(graded)
    for attack, (folder, check, said) in OTHER_EXERCISES.items():
        name = folder.split("_", 1)[1]
        tests = [t for t in graded[attack]["tests"] if t["name"].startswith(f"{name}: ")]
        lost = [t for t in tests if t["score"] < t["max_score"]]
        assert len(tests) > 1 and [t["extra_data"]["check"] for t in lost] == check.split(), (attack, tests)
        assert any(re.search(said, t["output"]) for t in lost), lost
    # Through `course check --all`: as few workspaces as hold one attack per exercise, each graded by one command.
    workspaces: list[dict[str, str]] = []
    for attack, (folder, _, _) in OTHER_EXERCISES.items():
        free = next((w for w in workspaces if folder not in w), None)
        if free is None:
            workspaces.append(free := {})
        free[folder] = attack
    for k, chosen in enumerate(workspaces):
        results = _checked_all(tmp_path / f"check{k}", course, folders, chosen)
        for folder, attack in chosen.items():
            _, check, said = OTHER_EXERCISES[attack]
            result = results[folder.split("_", 1)[1]]
            failed = [c for c in result["checks"] if c["status"] != "passed"]
            assert [c["id"] for c in failed] == check.split(), (attack, result)
            assert any(re.search(said, c["message"]) for c in failed), failed


def _checked_all(workspace: Path, course: Path, folders: list[str], files: dict[str, str]) -> dict[str, dict]:
    """`course check --all --json` in a fresh workspace of `course` holding each attack of `files` (by folder)."""
    init = subprocess.run([str(COURSE_BIN), "init", str(workspace), "--course", str(course)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert init.returncode == 0, init.stderr
    for folder, attack in files.items():
        name = folder.split("_", 1)[1]
        shutil.copyfile(ATTACKS / f"{attack}.py",
                        workspace / "exercises" / f"{folders.index(folder) + 1:02d}_{name}" / f"{name}.py")
    done = subprocess.run([str(COURSE_BIN), "check", "--all", "--json", "-w", str(workspace), "--course", str(course)],
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 1, done.stderr[-2000:]
    return {e["name"]: e for e in json.loads(done.stdout)["exercises"]}


# folder, attack, the reference's score, the one check the attack loses (its title), the attack's score
HIDDEN_COMPILES = [
    ("12_sharded_donated_step", "hide_compiles", 11.0, "learning rates compile nothing", 9.0),
    ("07_compile_budget", "hide_budget_compiles", 8.0, "compile your code at most 11 times", 6.0),
]


def _hidden_compiles_lose_one_check(graded: dict[str, dict]) -> None:
    """A file that makes a new program where it should not (`sharded_donated_step` with a static lr,
    `compile_budget` that never pads) and renames JAX's compile event after its first call scored full marks
    while the compile count was all the evidence (the executor reports it). Through `course grade` with the
    sandbox, the judge reads each call's program text: a new program, reported as no compile, fails the
    compile check and that check only; a classmate's reference solutions score everything."""
    for folder, attack, full, lost_check, score in HIDDEN_COMPILES:
        name = folder.split("_", 1)[1]
        ada = [t for t in graded["ada"]["tests"] if t["name"].startswith(f"{name}: ")]
        assert sum(t["score"] for t in ada) == full, graded["ada"]["output"]
        lost = [t for t in graded[attack]["tests"] if t["score"] < t["max_score"] and t["name"].startswith(f"{name}: ")]
        assert len(lost) == 1 and lost_check in lost[0]["name"], graded[attack]["tests"]
        assert "runs a program that no earlier call ran" in lost[0]["output"], lost[0]
        assert graded[attack]["score"] == score


def _name(folder: str) -> str:
    """The exercise's name of its folder: `compile_budget` for `07_compile_budget`."""
    return folder.split("_", 1)[1]
