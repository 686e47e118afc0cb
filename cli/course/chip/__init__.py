"""What a TPU makes of a learner's kernel: compiled and compared on the chip, timed, or estimated without one.

Grading always happens on the CPU (every learner gets the same verdict); this package adds what a
chip says after it. `timing` times a function as kernel graders do, `device_time` reads the chip's
own clock from a profile, `roofline` knows what each TPU generation can do, and `estimate` says,
from a kernel's grid, blocks and index maps alone, about how long it would take on one.
Nothing here is imported by a command that does not use a chip or an estimate.
"""
