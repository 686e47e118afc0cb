"""Tests of `observe.calls.warmup`: each call's compiles and builds, its programs' texts, and a report they belie."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

from course.grading import CheckFailed, after_warmup, unreported_compiles, watched_calls
from course.grading.observe.calls.warmup import _judged, watch
from support import served

LEARNER = b'''
import functools

import jax
import numpy as np

_traced = jax.jit(lambda x, lr: x - lr * x, donate_argnums=0)


@functools.partial(jax.jit, static_argnums=1)
def _static(x, lr):
    return x - lr * x


def traced(x, lr):
    return _traced(x, lr)


def static(x, lr):
    return _static(x, lr)


def reads_first(x, lr):
    scale = float(x.sum()) * 0 + 1.0  # a value read on the host: runs, but cannot be traced
    return _traced(x, lr * scale)


_first = jax.jit(lambda x: x * 2)
_second = jax.jit(lambda x: x * 2)
_second.__wrapped__.__name__ = "second"


def by_name(x, lr):
    return _first(x) if lr < 0.25 else _second(x)


def closed_over(x, lr):
    return jax.jit(lambda x: x * np.full(8, lr, np.float32))(x)


@functools.cache
def _adder():
    return jax.jit(jax.numpy.add, donate_argnums=0)  # made on first use, of a function of JAX's own


def lazy_add(x, lr):
    return _adder()(x, x * lr)


_hands_back = jax.jit(lambda x: x + 1, donate_argnums=0)


def returns_donated(x, lr):
    _hands_back(x)
    return x
'''


def _module(tmp_path: Path) -> types.ModuleType:
    """The learner's module, imported here."""
    path = tmp_path / "learner.py"
    path.write_bytes(LEARNER)
    module = types.ModuleType("learner")
    module.__file__ = str(path)
    exec(compile(LEARNER, str(path), "exec"), module.__dict__)  # noqa: S102 - our own fixture
    return module


def _calls() -> list[tuple[Any, float]]:
    """A warm-up call and three more, with new arrays and new learning rates."""
    return [(jax.numpy.arange(8.0), lr) for lr in (0.1, 0.2, 0.3, 0.4)]


def test_a_traced_learning_rate_compiles_once_and_runs_one_program(tmp_path: Path) -> None:
    """Only the warm-up compiles; every call runs the same program, so no report is belied."""
    module = _module(tmp_path)
    watched = watched_calls(module.traced, _calls(), module=module, path=Path(module.__file__))
    assert [bool(w.compiled) for w in watched] == [True, False, False, False]
    assert len({w.programs[0].program for w in watched}) == 1 and watched[0].programs[0].reused == (0,)
    assert unreported_compiles(watched) == []


def test_a_static_learning_rate_is_a_new_program_per_value(tmp_path: Path) -> None:
    """Each learning rate is baked into a program of its own, and each call compiles it."""
    module = _module(tmp_path)
    watched = watched_calls(module.static, _calls(), module=module, path=Path(module.__file__))
    assert all(w.compiled for w in watched) and len({w.programs[0].program for w in watched}) == 4
    assert all(len(w.programs[0].donated) == 1 for w in watched)  # lr is no input of the program
    assert unreported_compiles(watched) == []


def test_programs_that_differ_only_in_a_constant_are_told_apart(tmp_path: Path) -> None:
    """A jit made per call over an array of the learning rate: the programs differ only in that constant, and
    a program is compiled once per distinct text, never taken for an earlier one."""
    module = _module(tmp_path)
    watched = watched_calls(module.closed_over, _calls(), module=module, path=Path(module.__file__))
    assert len({w.programs[0].program for w in watched}) == 4 and all(w.built == 1 for w in watched)


def test_a_function_that_cannot_be_traced_is_watched_with_the_programs_it_ran(tmp_path: Path) -> None:
    """A step that reads a value on the host before its jit cannot be traced, but its programs are those its calls
    ran: each call shows the one jitted program it ran, and the same program again compiles nothing new."""
    module = _module(tmp_path)
    watched = watched_calls(module.reads_first, _calls(), module=module, path=Path(module.__file__))
    assert [bool(w.compiled) for w in watched] == [True, False, False, False]
    assert all(w.traced and [p.name for p in w.programs] == ["<lambda>"] for w in watched)
    assert unreported_compiles(watched) == []


def test_one_body_under_two_names_is_two_programs(tmp_path: Path) -> None:
    """Two jits of the same body under different names lower to two modules: each call's text is its own."""
    module = _module(tmp_path)
    watched = watched_calls(module.by_name, _calls(), module=module, path=Path(module.__file__))
    texts = [w.programs[0].program for w in watched]
    assert texts[0] == texts[1] != texts[2] == texts[3] and "second" in texts[2]


def test_a_report_of_no_compile_for_a_new_program_is_caught(tmp_path: Path) -> None:
    """A record that says the later calls compiled nothing, while their programs are new, is named call by
    call: the programs' texts are read where the report cannot reach."""
    module = _module(tmp_path)
    records = watch(module.static, _calls(), module=module, path=Path(module.__file__))
    forged = [records[0], *({**r, "compiled": []} for r in records[1:])]
    assert unreported_compiles(_judged(forged, 4)) == [1, 2, 3]
    later = after_warmup(_judged(forged, 4))
    assert later.compiled == () and later.compiles == 3 and "no earlier call ran" in later.names
    honest = after_warmup(_judged(records, 4))
    assert honest.compiles == 3 and honest.names == "jit(_static)" and honest.ran_jit and honest.built == 0
    same = watch(module.traced, _calls(), module=module, path=Path(module.__file__))
    assert unreported_compiles(_judged([same[0], *({**r, "compiled": []} for r in same[1:])], 4)) == []


@pytest.mark.parametrize("records", [
    "no list", [], [{"compiled": "jit(f)", "built": 0, "programs": [], "traced": True}] * 4,
    [{"compiled": [], "built": 0, "programs": [], "traced": "yes"}] * 4,
    [{"compiled": [], "built": -1, "programs": [], "traced": True}] * 4, [{"compiled": [], "built": 0}] * 4,
    [{"compiled": [], "built": 0, "programs": [], "traced": True, "ran": [["jit(f)", [[-1]]]]}] * 4,
    [{"compiled": [], "built": 0, "programs": [], "traced": True, "ran": "jit(f)"}] * 4,
])
def test_malformed_records_fail_the_check(records: Any) -> None:
    """Whatever else comes back fails the check in one sentence."""
    with pytest.raises(CheckFailed, match="came back malformed"):
        _judged(records, 4)


def test_the_judge_watches_through_the_executor(tmp_path: Path) -> None:
    """Seen from the judge, the calls are made in the executor and read here: the same compiles and programs,
    and the judge's own arrays are consumed where the executor's call donated them."""
    calls = _calls()
    with served(tmp_path / "learner.py", LEARNER) as module:
        far = watched_calls(module.traced, calls, module=module)
        static = watched_calls(module.static, _calls(), module=module)
    assert [bool(w.compiled) for w in far] == [True, False, False, False]
    assert len({w.programs[0].program for w in far}) == 1 and unreported_compiles(far) == []
    assert all(x.is_deleted() for x, _ in calls)
    assert len({w.programs[0].program for w in static}) == 4 and all(w.compiled for w in static)
    assert np.dtype(far[0].programs[0].out_info[0].dtype) == np.float32


def _by_shape() -> list[tuple[Any, float]]:
    """Two calls at each of two shapes."""
    return [(jax.numpy.arange(float(n)), 0.5) for n in (8, 8, 16, 16)]


def test_a_jit_of_jaxs_own_function_made_lazily_counts_once_its_caches_are_emptied(tmp_path: Path) -> None:
    """`jax.jit(jnp.add)` made on first use is named `add`, no function of the file, yet it is called from the
    file, so its compiles are the learner's. Its programs were compiled before (JAX's caches are shared by every
    wrapper of `jnp.add`): only with `fresh_caches` does each new shape's first call compile, as the texts say."""
    module = _module(tmp_path)
    path = Path(module.__file__)
    watch(module.lazy_add, _by_shape(), module=module, path=path)  # earlier checks compiled these programs
    warm = watched_calls(module.lazy_add, _by_shape(), module=_module(tmp_path), path=path)
    assert not any(w.compiled for w in warm) and unreported_compiles(warm) == [2]
    fresh = watched_calls(module.lazy_add, _by_shape(), module=_module(tmp_path), path=path, fresh_caches=True)
    assert [w.compiled for w in fresh] == [("jit(add)",), (), ("jit(add)",), ()]
    assert unreported_compiles(fresh) == [] and {p.name for w in fresh for p in w.programs} == {"add"}


def test_a_call_that_returns_its_donated_argument_is_still_watched(tmp_path: Path) -> None:
    """Handing back an array the call donated is for the donation checks to name: the calls are watched."""
    module = _module(tmp_path)
    watched = watched_calls(module.returns_donated, _calls(), module=module, path=Path(module.__file__))
    assert [bool(w.compiled) for w in watched] == [True, False, False, False]


def test_the_executor_empties_its_caches_when_asked(tmp_path: Path) -> None:
    """Through the executor, `fresh_caches` empties that process's caches, not the judge's."""
    with served(tmp_path / "learner.py", LEARNER) as module:
        watched_calls(module.lazy_add, _by_shape(), module=module)
        warm = watched_calls(module.lazy_add, _by_shape(), module=module)
        fresh = watched_calls(module.lazy_add, _by_shape(), module=module, fresh_caches=True)
    assert not any(w.compiled for w in warm)
    assert [bool(w.compiled) for w in fresh] == [True, False, True, False] and unreported_compiles(fresh) == []


def test_the_programs_a_call_ran_are_recorded_when_asked(tmp_path: Path) -> None:
    """With `runs`, each call lists the programs of the learner's it ran and their arguments' shapes, as the
    process that ran them saw them (the account of a call that cannot be traced); without, none."""
    module = _module(tmp_path)
    path = Path(module.__file__)
    ran = watched_calls(module.reads_first, _calls()[:2], module=module, path=path, runs=True)
    assert [w.ran for w in ran] == [(("jit(<lambda>)", ((8,), ())),)] * 2 and ran[0].traced
    assert watched_calls(module.reads_first, _calls()[:1], module=module, path=path)[0].ran == ()
    with served(tmp_path / "far.py", LEARNER) as far:
        assert watched_calls(far.reads_first, _calls()[:1], module=far, runs=True)[0].ran == ran[0].ran
