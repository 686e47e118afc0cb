"""The judge's end of the link to the executor, and what comes back: answers, and what the learner's code raised.

`Link` sends one request at a time and waits for its answer; an answer that is none (the executor
ended, or sent something that is no answer) is `ExecutorGone`, which fails the check as the
learner's doing. `raise_remote` raises in the judge what the learner's code raised in the executor:
the same built-in class, named as theirs, with its text and the learner's lines it came from. What
the course's own machinery failed at, on either side (sending a check's arguments, reading them or
sending back what the learner's code returned), is a `PlatformFailure`: an error, never theirs.
"""

from __future__ import annotations

import builtins
import contextlib
import socket
import sys
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from course.engine.common import notary
from course.engine.common.submission import PlatformFailure, SubmissionError
from course.engine.judge import consistency
from course.engine.wire import wire
from course.engine.wire.placement import array_from, mesh_from
from course.engine.wire.report import GONE


class ExecutorGone(SubmissionError):
    """The executor closed the link or sent something that is no answer: the check fails, saying so."""


class LearnerRaised(Exception):
    """An exception of the learner's code whose class is not a built-in one; its text names the class."""


class Opaque:
    """A returned value that is not an array or a plain value: only its type's name came back."""

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"


class Link:
    """The judge's end of the socket to the executor; one request at a time."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.gone = sock, False
        self.objects: dict[int, Any] = {}
        """The learner's objects seen so far, by the executor's number: one view of each, so `is` holds."""

    def ask(self, header: dict[str, Any], buffers: list[bytes] = ()) -> tuple[dict[str, Any], list[bytes]]:  # type: ignore[assignment]
        """Send a request and wait for its answer; ExecutorGone if there is none."""
        if self.gone:
            raise ExecutorGone(GONE)
        try:
            wire.send(self.sock, header, list(buffers))
            answer = wire.receive(self.sock)
        except (OSError, wire.WireError):
            answer = None
        if answer is None or not isinstance(answer[0].get("ok"), bool):
            self.gone = True
            raise ExecutorGone(GONE)
        notary.notify("course.heard")  # counted in this judge's report: the executor's must vouch for as many
        if isinstance(answer[0].get("printed"), str):  # the check's output, as if printed here
            sys.stdout.write(answer[0]["printed"])
            sys.stdout.flush()
        return answer

    def tell(self, header: dict[str, Any]) -> None:
        """Send a note that needs no answer (where the judge is); a link already gone is left so."""
        if not self.gone:
            try:
                wire.send(self.sock, header)
            except OSError:
                self.gone = True

    def done(self, stopped: bool = False) -> None:
        """Tell the executor the judge needs nothing more (`stopped`: it stopped at its first failing
        check, so the executor runs no more checks either), and close."""
        if not self.gone:
            with contextlib.suppress(OSError):
                wire.send(self.sock, {"op": "done", "stopped": stopped})
        self.gone = True
        self.sock.close()


def encoded(value: Any, buffers: list[bytes], describe: Any) -> Any:
    """`wire.encode` of what a check sends the executor; what cannot be sent is the course's failure, not the
    learner's (a grader passed a value this protocol does not carry)."""
    try:
        return wire.encode(value, buffers, describe)
    except wire.WireError as exc:
        raise PlatformFailure(f"the grading machinery could not send the check's arguments to the process running "
                              f"your code ({exc})") from None


def raise_remote(header: dict[str, Any], path: Path) -> None:
    """Raise here what the learner's code raised there: the same built-in class and text. What the executor's
    own machinery failed at (`platform`) is raised as the platform's failure."""
    if isinstance(header.get("platform"), str):
        raise PlatformFailure(f"the grading machinery failed in the process running your code: "
                              f"{header['platform'][:2000]}")
    error = header.get("error") if isinstance(header.get("error"), dict) else {}
    names = [n for n in error.get("types", []) if isinstance(n, str)]
    text = str(error.get("text", ""))
    base = next((c for c in (getattr(builtins, n, None) for n in names)
                 if isinstance(c, type) and issubclass(c, Exception) and c is not Exception), LearnerRaised)
    name = names[0] if names and names[0].isidentifier() else base.__name__
    # The learner's own class name (JaxRuntimeError), under the built-in class checks catch (RuntimeError).
    cls = base if name == base.__name__ else type(name, (base,) if base is LearnerRaised else (base, LearnerRaised), {})
    __course_remote_frames__ = [  # noqa: F841 - read by `learner_frames` through this frame
        traceback.FrameSummary(str(f[0]), int(f[1]), str(f[2]), line=str(f[3]))
        for f in error.get("frames", []) if isinstance(f, list) and len(f) == 4 and isinstance(f[1], int)
    ]
    try:
        exc = cls(text)
    except TypeError:  # a built-in that takes other arguments (UnicodeDecodeError): keep the text
        exc = LearnerRaised(text)
    # The function it was raised in (JAX's `at`, say): a grader's hint may depend on it.
    exc.innermost_function = str(error.get("innermost", ""))[:200]  # type: ignore[attr-defined]
    raise exc


def _asked(link: Link, path: Path, body: dict[str, Any],
           buffers: list[bytes] = ()) -> tuple[dict[str, Any], list[bytes]]:  # type: ignore[assignment]
    """The executor's answer to `body`; what the learner's code raised there is raised here, and a check a grader's
    own code failed there (an observation, a helper on the way) fails here with its message. Once the learner's
    code has behaved two ways (`course.engine.judge.consistency`), nothing is asked of it any more."""
    consistency.still_one_program()
    header, returned = link.ask(body, buffers)
    consistency.received(header, returned)
    if not header["ok"]:
        raise_remote(header, path)
    if isinstance(header.get("failed"), str):  # a grader's own code failed the check there: never a pass
        from course.grading.feedback import CheckFailed

        raise CheckFailed(header["failed"])
    return header, returned


def _returned(data: np.ndarray, node: dict[str, Any]) -> Any:
    """A returned leaf, rebuilt here as the same kind of value."""
    kind = node.get("kind")
    if kind == "np":
        return data
    if kind == "npscalar":
        return data[()]
    if kind == "jax":
        return array_from(data, node)
    if kind == "mesh":
        return mesh_from(node.get("mesh"))
    if kind == "dtype":
        return wire.dtype(node.get("name"))
    if kind == "jaxpr":
        from course.engine.wire.jaxpr_objects import decode

        return decode(data.tobytes())
    if kind == "deleted":
        import jax

        gone = jax.device_put(np.zeros(0, np.float32))
        gone.delete()
        return gone
    return Opaque(str(node.get("type", "object"))[:200])
