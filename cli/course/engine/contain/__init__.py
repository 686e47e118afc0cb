"""What holds a grading process in: its sandbox (`sandbox`, `contain`, run by path before a cold grading
starts), the protections this machine gives (`protections`), what the operating system offers (`system`,
`proctable`), and its limits (`limits`).

Used by the parent, which applies them, and by the grading process, which enters them; only stdlib
and `wire` below it. `sandbox.py` and `contain.py` must stay in one folder: the first loads the second by path.
"""
