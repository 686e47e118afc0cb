"""Arrays cross the judge's link with their shape: a 0-d array stays 0-d, a strided view keeps its shape."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from course.engine import wire


def _round_trip(value: np.ndarray) -> np.ndarray:
    """`value` encoded and decoded as the link does, as a NumPy array."""
    buffers: list[bytes] = []
    node = wire.encode(value, buffers, lambda v: {"data": v, "kind": "np"})

    def rebuilt(data: np.ndarray, node: dict[str, Any]) -> np.ndarray:
        return data

    return wire.decode(node, buffers, rebuilt)


@pytest.mark.parametrize("value", [np.array(2.5, np.float32), np.asarray(np.int64(-3)),
                                   np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2], np.zeros((0, 5))])
def test_shape_dtype_and_values_survive(value: np.ndarray) -> None:
    """What arrives has the shape, dtype and values that were sent (a temperature of shape () stays ())."""
    got = _round_trip(value)
    assert got.shape == value.shape and got.dtype == value.dtype
    np.testing.assert_array_equal(got, value)
