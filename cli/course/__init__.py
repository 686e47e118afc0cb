"""`course`: a graded coding-exercise platform for JAX performance; this package never imports JAX."""

__version__ = "0.1.0"
