"""Nothing learner code can reach by walking objects leads to the signing key or to anything that can sign.

A real grading runs a learner file that walks, breadth first, from `sys.modules` through module and
object attributes, class dictionaries, closures, defaults and containers, exactly as an attacker's
code could, and writes what it found where the test can read it. The walk must see a great deal
(and a needle the grader planted), and never the key, an HMAC object, or any object that could sign.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

GRADER = '''
import sys

def test_walk(submission):
    """The walk runs while checks run, after the notary has armed."""
    sys.modules["json"].planted_needle = b"needle-" + b"x" * 25
    submission.walk()
'''

LEARNER = '''
import collections, hashlib, hmac, json, os, sys, types

def _expand(obj, todo):
    if isinstance(obj, dict):
        todo.extend(obj.values())
        return
    if isinstance(obj, (list, tuple, set, frozenset)):
        todo.extend(obj)
        return
    attrs = getattr(obj, "__dict__", None)
    if attrs is not None:
        todo.extend(attrs.values())
    if type(obj) is types.FunctionType:
        for cell in obj.__closure__ or ():
            try:
                todo.append(cell.cell_contents)
            except ValueError:
                pass
        todo.extend(obj.__defaults__ or ())
        todo.extend((obj.__kwdefaults__ or {}).values())

def walk():
    key = bytes.fromhex(os.environ["REACH_KEY"])
    signer_types = {type(hmac.new(b"k", digestmod=hashlib.sha256)), type(hashlib.sha256())}
    todo, seen = collections.deque(list(sys.modules.values())), set()
    found = {"key": False, "signers": [], "needle": False}
    while todo:
        obj = todo.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if type(obj) is bytes:
            found["key"] |= obj == key
            found["needle"] |= obj.startswith(b"needle-")
        if type(obj) in signer_types:
            found["signers"].append(type(obj).__name__)
        try:
            _expand(obj, todo)
        except Exception:
            pass
    found["visited"] = len(seen)
    with open(os.environ["REACH_OUT"], "w") as fh:
        json.dump(found, fh)
'''


def test_the_key_is_reachable_from_nothing(tmp_path: Path) -> None:
    """After the notary is armed, a full walk from sys.modules finds no key and no signer."""
    (tmp_path / "test_walk_grader.py").write_text(GRADER)
    learner = tmp_path / "learner" / "walker.py"
    learner.parent.mkdir()
    learner.write_text(LEARNER)
    (tmp_path / "report").mkdir()
    key = secrets.token_bytes(32)
    read_fd, write_fd = os.pipe()
    os.write(write_fd, key)
    os.close(write_fd)
    out = tmp_path / "found.json"
    env = {**os.environ, "REACH_KEY": key.hex(), "REACH_OUT": str(out), "JAX_PLATFORMS": "cpu"}
    subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path / "test_walk_grader.py"), "-p", "course.engine.child.plugin",
         "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path), "--course-report",
         str(tmp_path / "report" / "r.json"), "--course-submission", str(learner), "--course-key-fd", str(read_fd)],
        env=env, pass_fds=(read_fd,), capture_output=True, timeout=300, check=False, cwd=tmp_path,
    )
    os.close(read_fd)
    found = json.loads(out.read_text())
    assert found["visited"] > 20_000 and found["needle"], found
    assert not found["key"] and not found["signers"], found
