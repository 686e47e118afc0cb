"""The timing harness on a CPU backend: its statistics, its fresh inputs, its stopping rules and its clock."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from course.chip.device_time import DeviceRun
from course.chip.timing import DEVICE, WALL, _per_call, steady, summarize, time_function


def test_summary_is_median_minimum_and_relative_interquartile_range() -> None:
    """Worked by hand: quartiles 2 and 4 of 1..5 around a median of 3."""
    assert summarize([5.0, 1.0, 3.0, 2.0, 4.0]) == (3.0, 1.0, pytest.approx(2 / 3))
    with pytest.raises(ValueError):
        summarize([])


def test_steady_needs_a_small_standard_error_of_the_median() -> None:
    """Identical timings are steady at once; wildly spread ones are not."""
    assert steady([1.0] * 5, 0.01)
    assert not steady([1.0, 3.0, 1.0, 3.0, 1.0], 0.01)
    assert not steady([1.0, 1.0], 0.01)  # too few to say


def test_every_timed_call_gets_fresh_inputs_and_the_first_two_are_discarded() -> None:
    """make_args is asked for a new index every call; the compile and the first run are not timed."""
    asked: list[int] = []
    calls: list[float] = []

    def make(i: int) -> tuple[jax.Array]:
        asked.append(i)
        return (jnp.full((8,), float(i)),)

    def fn(x: jax.Array) -> jax.Array:
        calls.append(float(x[0]))
        return x * 2

    timing, out, args = time_function(fn, make, budget_s=0.0, min_repeats=4, max_repeats=4, profile=False)
    assert timing.repeats == 4 and timing.clock == WALL and "no profile" in timing.note
    assert calls[:2] == [0.0, 1.0] and calls[2:] == [2.0, 3.0, 4.0, 5.0]
    assert len(set(asked)) == len(asked)  # no input index is ever made twice
    assert float(out[0]) == 10.0 and float(args[0][0]) == 5.0  # the last call's result and inputs, for a check


def test_repeats_adapt_between_the_bounds() -> None:
    """A steady function stops at the minimum; a zero budget with a high minimum still times the minimum."""
    fn = jax.jit(lambda x: x + 1)

    def make(i: int) -> tuple[jax.Array]:
        return (jnp.ones((4,)) * i,)

    timing, _, _ = time_function(fn, make, budget_s=60.0, min_repeats=3, max_repeats=50, target=10.0, profile=False)
    assert timing.repeats == 3  # a target of 1000 % is met at once
    timing, _, _ = time_function(fn, make, budget_s=0.0, min_repeats=7, max_repeats=50, profile=False)
    assert timing.repeats == 7


def test_a_cpu_profile_has_no_device_clock_and_says_so() -> None:
    """On a CPU backend the profile is read, finds no device plane, and the wall clock is used with a note."""
    timing, _, _ = time_function(jax.jit(lambda x: x @ x), lambda i: (jnp.ones((64, 64)) * i,), budget_s=0.0,
                                 min_repeats=3, max_repeats=3)
    assert timing.clock == WALL and timing.note == "this backend's profile has no device clock"
    assert timing.to_json()["repeats"] == 3 and timing.minimum <= timing.median


def test_device_runs_are_grouped_into_calls_by_the_programs_one_call_runs() -> None:
    """Two programs a call, an input maker's runs between them left out; a count that does not fit gives None."""
    runs = [DeviceRun("jit_make(1)", 0, 5), DeviceRun("jit_a(2)", 10, 100), DeviceRun("jit_b(3)", 20, 50),
            DeviceRun("jit_make(1)", 30, 5), DeviceRun("jit_a(2)", 40, 110), DeviceRun("jit_b(3)", 50, 40)]
    assert _per_call(runs, ["jit_a(2)", "jit_b(3)"], 2) == [150e-9, 150e-9]
    assert _per_call(runs, ["jit_a(2)", "jit_b(3)"], 3) is None
    assert DEVICE == "device"
