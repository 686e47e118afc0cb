"""Grader of `double`: twice a random integer, returned as a real `int`; no JAX, so it starts fast."""

from course.grading import check


def _check_double(submission, x: int) -> None:
    """Call the learner's double(x) and check type first, so an object equal to everything fails."""
    got = submission.double(x)
    check(type(got) is int, f"double({x}) should return an int, but it returned a {type(got).__name__}")
    check(got == 2 * x, f"double({x}) should be {2 * x}, but it is {got}")


def test_random(submission, rng):
    """double returns twice a random integer."""
    _check_double(submission, int(rng.integers(-(10**6), 10**6)))


def test_negative(submission, rng):
    """double works for a random negative integer."""
    _check_double(submission, -int(rng.integers(1, 10**6)))
