"""The notary's audit hook: the one holder of the signing key, which hears each event and writes the signed files."""

from __future__ import annotations

import _thread
import gc
import os
import sys
import types
from collections.abc import Callable
from typing import Any

from course.engine.common import barrier, guard
from course.engine.wire.report import UNFINISHED

EVENTS = frozenset({"course.manifest", "course.verdict", "course.tamper", "course.finish", "course.answer",
                    "course.turn", "course.heard"})
PHASES = ("setup", "call", "teardown")


def notify(event: str, *args: Any, _audit: Callable[..., None] = sys.audit) -> None:
    """Tell the notary something; the one function through which the plugin speaks to it."""
    _audit(event, *args)


def _make_notary(key: bytes, manifest: str, report: str, trusted: frozenset[types.CodeType],
                 entries: frozenset[types.CodeType],
                 callers: dict[str, tuple[types.CodeType, ...]], guarded: tuple[str, ...]) -> Callable:
    """Build the notary hook. Everything it needs, the key first, lives only in its closure, and
    everything it calls is bound here, before learner code runs: C functions, methods of exact
    built-in types, and functions whose code and defaults the armed guard protects."""
    _type, _len, _sorted, _str, _int, _float, _bool = type, len, sorted, str, int, float, bool
    _list, _tuple, _dict, _zip, _all = list, tuple, dict, zip, all
    digest, encode, float_repr, int_repr = _hmac_digest(), _string_encoder(), float.__repr__, int.__repr__
    getframe, ident, main = sys._getframe, _thread.get_ident, _thread.get_ident()
    gc_enabled, gc_disable, gc_enable = gc.isenabled, gc.disable, gc.enable
    os_open, os_write, os_close, os_fsync, os_replace = os.open, os.write, os.close, os.fsync, os.replace
    os_pwrite, os_ftruncate = os.pwrite, os.ftruncate
    create, events, phases, unfinished = os.O_WRONLY | os.O_CREAT | os.O_TRUNC, EVENTS, PHASES, UNFINISHED
    statuses, notify_code = ("passed", "failed", "error", "skipped"), notify.__code__
    changes, answering, arm = guard.changes, guard.answering, barrier.arm
    # Written into the output between checks (`course.engine.parent.output`); from the key, so only we can make it.
    mark = b"\x1e" + digest(key, b"course.output", "sha256").hex()[:24].encode() + b":"
    own: set[types.CodeType] = set()  # the notary's own functions, filled in below
    # Opened now, while nothing refuses it: once armed, the report's folder is closed to everyone.
    report_fd = os_open(report, create, 0o600)
    state: dict[str, Any] = {"armed": False, "sealed": False, "checks": [], "items": {}, "phases": {}, "at": 0,
                             "tampered": [], "errors": [], "seed": 0, "snapshot": guard.EMPTY, "answering": guard.EMPTY,
                             "served": 0, "heard": 0}

    def text(value: Any) -> str:
        """A JSON literal of a plain value."""
        kind = _type(value)
        if kind is _str:
            return encode(value)
        if kind is _bool:
            return "true" if value else "false"
        if kind is _int:
            return int_repr(value)
        if kind is _float:
            return float_repr(value)
        if kind is _list or kind is _tuple:
            return "[" + ",".join([text(v) for v in value]) + "]"
        if kind is _dict:
            return "{" + ",".join([encode(k) + ":" + text(value[k]) for k in _sorted(value)]) + "}"
        return "null"

    def signed(payload: dict[str, Any]) -> bytes:
        """`payload` with its signature, as the parent reads it."""
        body = text({"format": 1, **payload})
        return text({"body": body, "signature": digest(key, body.encode(), "sha256").hex()}).encode()

    def write_manifest(payload: dict[str, Any]) -> None:
        """Write the manifest beside its place, then over it in one step (before arming)."""
        tmp = manifest + ".notary"
        fd = os_open(tmp, create, 0o600)
        try:
            os_write(fd, signed(payload))
            os_fsync(fd)
        finally:
            os_close(fd)
        os_replace(tmp, manifest)

    def write_report(complete: bool) -> None:
        """Write the report into the file opened at the start, from its first byte, and nothing after.

        Until the end it holds the checks that have finished (`complete` 0); each rewrite is at
        least as long as the one before, so one cut short by a kill leaves no stale tail. It says how
        many answers to a judge this process vouched for (`served`), and how many a judge heard.
        """
        done = _len(state["checks"]) if complete else state["at"]
        data = signed({"seed": state["seed"], "checks": combined(done), "collect_errors": state["errors"],
                       "tampered": state["tampered"], "complete": 1 if complete else 0,
                       "served": state["served"], "heard": state["heard"]})
        os_pwrite(report_fd, data, 0)
        os_ftruncate(report_fd, _len(data))
        if complete:
            os_fsync(report_fd)

    def write_mark(position: int) -> None:
        """Mark in the output where the check at `position` starts (the learner may have closed it)."""
        try:  # noqa: SIM105 - contextlib is the learner's to replace; a bare try is not
            os_write(1, mark + int_repr(position).encode() + b"\x1e")
        except OSError:
            pass

    def trusted_stack(expected: tuple[types.CodeType, ...]) -> bool:
        """True when `notify` was called by one of `expected`, on the main thread, with nothing but
        pytest's, pluggy's and the engine's own code between it and pytest's entry (no learner,
        grader or callback frame)."""
        if ident() != main:
            return False
        frame = getframe(1)
        while frame is not None and frame.f_code in own:
            frame = frame.f_back
        if frame is None or frame.f_code is not notify_code:
            return False
        frame = frame.f_back
        if frame is None or frame.f_code not in expected:
            return False
        while frame is not None and frame.f_code not in entries:
            if frame.f_code not in trusted:
                return False
            frame = frame.f_back
        return frame is not None

    def intact(snapshot: Any = None) -> bool:
        """Compare the machinery with the snapshot (or a part of it); record what changed as tampering."""
        changed = changes(state["snapshot"] if snapshot is None else snapshot)
        if changed:
            tamper("your code replaced part of the grading machinery (" + ", ".join(changed[:5]) + ")")
        return not changed

    def next_phase() -> tuple[str, str] | None:
        """The (check, phase) the plugin must report next: checks in collection order, then setup,
        call and teardown (pytest runs no call after a setup that did not pass)."""
        if state["at"] >= _len(state["checks"]):
            return None
        check = state["checks"][state["at"]]["id"]
        setup = state["phases"].get((check, "setup"))
        if setup is None:
            return check, "setup"
        return (check, "call") if setup[0] == "passed" and (check, "call") not in state["phases"] else \
            (check, "teardown")

    def combined(upto: int) -> list[dict[str, Any]]:
        """The first `upto` checks' status and message from their phases: a pass needs setup, call and
        teardown to pass (pytest runs no call after a setup that did not pass, so that setup decides)."""
        out = []
        for check in state["checks"][:upto]:
            status, message = "passed", ""
            for phase in phases:  # the first phase that did not pass decides; a missing one is unfinished
                got = state["phases"].get((check["id"], phase))
                if got is None or got[0] != "passed":
                    status, message = got if got is not None else ("failed", unfinished)
                    break
            out.append({"id": check["id"], "status": status, "message": message})
        return out

    def on_manifest(args: tuple) -> None:
        """Record the expected checks and the machinery's snapshot, sign the manifest, and arm.

        A first report, with no check in it, is written before the manifest: from then on a report
        that is missing or empty was removed or emptied, never not yet written. The manifest names
        the checks the other side of a split grading runs too (`elsewhere`), so that a report of
        theirs that went missing still has its checks counted."""
        if state["armed"] or _len(args) != 6 or not trusted_stack(callers["course.manifest"]):
            tamper("a second manifest, or one from outside the grading machinery")
            return
        checks, errors, items, seed, snap, elsewhere = args
        state["checks"] = [_dict(c) for c in checks]
        state["items"] = {c["id"]: i for c, i in _zip(state["checks"], items)}
        state["errors"], state["seed"], state["snapshot"] = [_str(e) for e in errors], seed, snap
        state["answering"] = answering(snap)
        write_report(False)
        write_manifest({"checks": state["checks"], "collect_errors": state["errors"],
                        "elsewhere": [_dict(c) for c in elsewhere]})
        state["armed"] = True
        arm(report.rsplit("/", 1)[0], guarded, trusted, notify)
        write_mark(0)

    def on_verdict(args: tuple) -> None:
        """Record one phase of one check, in pytest's order, from the plugin on pytest's stack."""
        if _len(args) != 5 or not trusted_stack(callers["course.verdict"]):
            tamper("a verdict came from outside the grading machinery")
            return
        check, phase, status, message, item = args
        if not _all(_type(v) is _str for v in (check, phase, status, message)) or _type(item) is not _int:
            tamper("a verdict of the wrong shape")
            return
        if (check, phase) != next_phase() or state["items"].get(check) != item or status not in statuses:
            tamper("a verdict out of pytest's order, or for a check that was not collected")
            return
        # A check's verdict is written at its teardown, so that is where the machinery is compared
        # (a tampering in its setup or call is still there, or a report already says so).
        if phase != "teardown" or intact():
            state["phases"][(check, phase)] = (status, message[:4000])
            if phase == "teardown":
                state["at"] += 1
                write_report(False)
                write_mark(state["at"])

    def on_answer() -> None:
        """Vouch for one answer to the judge, about to be sent: the machinery that answers is compared first,
        and the report that counts the answer is written before it leaves, so a judge holds no answer that
        this process's report does not vouch for, unless that report was changed since."""
        if not trusted_stack(callers["course.answer"]):
            tamper("an answer to the judge came from outside the grading machinery")
        elif intact(state["answering"]):
            state["served"] += 1
            write_report(False)

    def on_turn() -> None:
        """The judge has moved on to its next check, or is done: compare the whole machinery, as at a verdict."""
        if not trusted_stack(callers["course.turn"]):
            tamper("the judge's turn was announced from outside the grading machinery")
        else:
            intact()

    def tamper(what: Any) -> None:
        """Record tampering; the first time, write a report that says so, and accept nothing more."""
        state["tampered"].append(what[:300] if _type(what) is _str else "the grading machinery")
        if state["armed"] and not state["sealed"]:
            finish()

    def finish() -> None:
        """Write the final report from the verdicts recorded, then accept nothing more."""
        state["sealed"] = True
        write_report(True)

    def handle(event: str, args: tuple) -> None:
        """Act on one of our events."""
        if state["sealed"]:
            return
        if event == "course.tamper":
            tamper(args[0] if args else "")
        elif event == "course.manifest":
            on_manifest(args)
        elif event == "course.verdict" and state["armed"]:
            on_verdict(args)
        elif event == "course.answer" and state["armed"]:
            on_answer()
        elif event == "course.turn" and state["armed"]:
            on_turn()
        elif event == "course.heard":  # a judge's count of the answers it received; nothing else reads it
            state["heard"] += 1
        elif event == "course.finish" and state["armed"]:
            if not trusted_stack(callers["course.finish"]):
                tamper("the end of grading was announced from outside the grading machinery")
            elif intact():
                finish()

    def hook(event: str, args: tuple) -> None:
        """Every audited event passes here; only ours are looked at."""
        if event not in events:
            return
        collecting = gc_enabled()
        gc_disable()  # no finalizer or gc callback of the learner's may run inside the notary
        try:
            handle(event, args)
        except BaseException:  # noqa: BLE001, S110 - never let the notary's frame out in a traceback
            pass
        finally:
            if collecting:
                gc_enable()

    own.update(f.__code__ for f in (hook, handle, on_manifest, on_verdict, on_answer, on_turn, tamper, finish,
                                    trusted_stack, write_report, write_manifest, write_mark, signed, text, intact,
                                    next_phase, combined))
    return hook


def _hmac_digest() -> Callable[[bytes, bytes, str], bytes]:
    """HMAC in C (`_hashlib.hmac_digest`), or the pure-Python one where OpenSSL's is missing."""
    try:
        from _hashlib import hmac_digest  # type: ignore[import-not-found]

        return hmac_digest  # type: ignore[no-any-return]
    except ImportError:  # pragma: no cover - CPython builds always have it where grading runs
        import hmac

        return lambda key, msg, name: hmac.digest(key, msg, name)


def _string_encoder() -> Callable[[str], str]:
    """JSON's string encoder in C, or its Python fallback."""
    from json import encoder

    return encoder.c_encode_basestring_ascii or encoder.py_encode_basestring_ascii
