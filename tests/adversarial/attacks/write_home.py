"""A right `double` that, as it is imported, writes a file into the home folder of the user grading it (and
could as well write into the course's folder, or anywhere that user may write). Under `course check` the
learner's code runs with the learner's own rights: as root, root's. Nothing stops it there, and the
learner running it is told so, once, in one line.

Deserved: 2 of 2 under `course check` (its values are right; `check` is not a boundary), with that line said
where it runs as root or without a namespace. Under `course grade` as root with no unprivileged user to grade
as, the class is not graded at all unless the instructor says `--trust-submissions`.
"""

import os

try:
    with open(os.path.join(os.environ["HOME"], "planted-__TOKEN__"), "w", encoding="utf-8") as _fh:
        _fh.write("written by the learner's file while it was graded\n")
except (KeyError, OSError):
    pass  # a sandbox that hides the home folder, or keeps it read-only: nothing to see here


def double(x: int) -> int:
    """Return twice x."""
    return 2 * x
