"""Looks for the instructor's files where every user's live: a socket in /tmp (as tmux's or an ssh
agent's), /run, /dev/shm and the home folders. Landlock refuses to read them but not to see them."""
import os


def _attack():
    """What of the instructor's could be seen."""
    seen = []
    if os.path.exists("__UNIXSOCK__"):
        seen.append("the instructor's socket __UNIXSOCK__")
    for folder in ("/run/user", "/dev/shm", "/home"):
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        if entries:
            seen.append(f"{folder}: {', '.join(sorted(entries)[:5])}")
    return seen


def double(x):
    seen = _attack()
    if seen:
        raise RuntimeError("SEEN " + " | ".join(seen))
    return 2 * x
