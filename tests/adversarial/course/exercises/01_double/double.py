def double(x: int) -> int:
    """Return twice x."""
    raise NotImplementedError("TODO")
