def double(x: int) -> int:
    """Return twice x."""
    return 2 * x
