"""Tests of the `course.grading` package: its table of helpers is the submodules' `__all__`, and it stays lazy."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest
from package_table import expected_table, submodules, table_of, written_blocks

import course.grading


@pytest.fixture(scope="module")
def expected() -> dict[str, str]:
    """The table the submodules call for (importing all of them), or the test fails with why there is none."""
    table, problems = expected_table()
    assert not problems, "\n".join(problems)
    return table


def _loaded_after(statement: str) -> list[str]:
    """The modules a fresh interpreter holds after `statement`."""
    code = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def _grading(modules: list[str]) -> list[str]:
    """The `course.grading` helper modules among `modules` (the folders that hold them aside)."""
    return [m for m in modules if m.startswith("course.grading.") and m.removeprefix("course.grading.") not in _FOLDERS]


_FOLDERS = {"judge", "observe", "observe.calls", "observe.traces", "observe.kernels", "inspect"}


def test_the_table_is_every_submodules_all(expected: dict[str, str]) -> None:
    """`HELPERS` holds each public name of each submodule, under the module that defines it."""
    helpers, _, _ = written_blocks()
    missing = [f'"{n}": "{m}",' for n, m in expected.items() if helpers.get(n) != m]
    extra = sorted(set(helpers) - set(expected))
    assert not missing, (f"course/grading/__init__.py lacks {', '.join(missing)} in HELPERS: add each, with the "
                         "name in __all__ and in its module's TYPE_CHECKING import "
                         "(`python tests/grading/package_table.py` prints all three).")
    assert not extra, f"HELPERS names {', '.join(extra)}, which no submodule lists in `__all__`: remove them."
    assert len(expected) > 200 and expected["hlo_collective_shapes"] == "observe.traces.collectives"


def test_all_and_the_type_checking_imports_say_what_the_table_says() -> None:
    """`__all__` lists the table's names once each; the TYPE_CHECKING block imports each from its module."""
    helpers, names, typed = written_blocks()
    assert sorted(names) == sorted(helpers) and len(names) == len(set(names)), \
        "__all__ must list each name of HELPERS once, and nothing else"
    wrong = sorted(set(typed.items()) ^ set(helpers.items()))
    assert not wrong, f"the TYPE_CHECKING imports and HELPERS differ on {wrong}"
    assert course.grading.__all__ == names and dict(course.grading.HELPERS) == helpers


def test_every_name_imports_from_the_package(expected: dict[str, str]) -> None:
    """`from course.grading import X` gives the very object its submodule defines, for every X."""
    namespace: dict[str, object] = {}
    exec(f"from course.grading import {', '.join(expected)}", namespace)
    for name, module in expected.items():
        assert namespace[name] is getattr(importlib.import_module(f"course.grading.{module}"), name), name


def test_a_name_two_modules_define_is_refused() -> None:
    """Two modules defining one name is a problem that names both, never a choice; a re-export is not."""
    shared = object()
    listed = {"a": {"Copy": object(), "walk": shared}, "b": {"Copy": object(), "walk": shared}}
    table, problems = table_of(listed, {"a": {"Copy", "walk"}, "b": {"Copy"}})
    assert table == {"walk": "a"}
    assert problems == ["`Copy` is defined in both course.grading.a and course.grading.b: rename one, since "
                        "`from course.grading import Copy` can give only one of them."]
    _, problems = table_of({"a": {"b": shared}, "b": {}}, {"a": {"b"}})
    assert problems and "both a helper and a submodule" in problems[0]


def test_importing_the_package_imports_no_submodule_and_no_jax() -> None:
    """`import course.grading` loads the package alone: no helper module, no JAX, NumPy or Hypothesis."""
    loaded = _loaded_after("import course.grading")
    assert "course.grading" in loaded and not _grading(loaded)
    assert not [m for m in loaded if m.split(".")[0] in {"jax", "numpy", "hypothesis"}]


def test_a_name_imports_its_own_module_and_no_other() -> None:
    """Asking for a helper imports what importing its submodule imports, and nothing of the others."""
    light = _loaded_after("from course.grading import quote_line")
    assert _grading(light) == ["course.grading.judge.quoting"] and "jax" not in light
    asked = _loaded_after("from course.grading import hlo_collective_shapes")
    direct = _loaded_after("import course.grading.observe.traces.collectives")
    assert set(asked) == set(direct) and "course.grading.observe.kernels.kernels" not in asked


def test_a_submodule_and_an_unknown_name() -> None:
    """A submodule is reached by its name; a name that is no helper is an AttributeError naming it."""
    assert course.grading.judge is importlib.import_module("course.grading.judge")  # a folder of helpers
    with pytest.raises(AttributeError, match="'no_such_helper'"):
        _ = course.grading.no_such_helper
    assert set(course.grading.SUBMODULES) == set(course.grading.HELPERS.values()) <= set(submodules())
    assert set(course.grading.__all__) <= set(dir(course.grading))
