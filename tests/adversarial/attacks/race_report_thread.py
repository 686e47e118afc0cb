"""Writes a forged report over the real one from a thread that races the final write: by path from sys.argv,
and straight into any open descriptor that points into the report's folder."""
import json
import os
import sys
import threading

_path = sys.argv[sys.argv.index("--course-report") + 1]
_FAKE = json.dumps({"body": json.dumps({"format": 1, "checks": [], "collect_errors": [], "tampered": []}),
                    "signature": "0" * 64}).encode()


def _race():
    folder = os.path.dirname(_path)
    while True:
        for target in (_path, _path + ".manifest"):
            try:
                with open(target, "wb") as fh:
                    fh.write(_FAKE)
            except OSError:
                pass
        for fd in range(3, 64):
            try:
                if os.readlink(f"/proc/self/fd/{fd}").startswith(folder):
                    os.pwrite(fd, _FAKE, 0)
            except OSError:
                pass


threading.Thread(target=_race, daemon=True).start()


def double(x):
    return 2 * x + 1
