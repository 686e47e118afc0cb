"""The judge's view of the learner's module: every use of it is a request to the executor.

In a split grading the checks marked `judge` run in a process that never imports the learner's
file. Their `submission` is a `RemoteModule`: reading a name asks the executor (`course.engine.executor.serve`)
for it, calling a function sends the arguments the check made and returns what the learner's code
returned, as arrays of the same kind, dtype and shape (a jax.Array keeps its NamedSharding). An
input the call consumed (donated) is deleted here too, so `is_consumed` reads the same in both
places. What the learner's code raised is raised here as the same built-in class with the same
text; the lines of the learner's file it came from are kept for `learner_location`.

Nothing the executor sends is trusted beyond its shape (`course.engine.wire.wire`): every expected
value, comparison and verdict is computed in this process.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from course.engine.common.submission import SubmissionError
from course.engine.judge.link import GONE, ExecutorGone, LearnerRaised, Link, Opaque, _asked, encoded, raise_remote
from course.engine.judge.proxies import _attribute, _sent, _value

__all__ = ["GONE", "ExecutorGone", "LearnerRaised", "Link", "Opaque", "RemoteModule", "load", "raise_remote"]


class RemoteModule(types.ModuleType):
    """The learner's module as the judge sees it: names are read from the executor when used."""

    def __init__(self, link: Link, path: Path) -> None:
        super().__init__(path.stem)
        self.__file__ = str(path)
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_path", path)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _attribute(self._link, self._path, name)

    def observation(self, key: str, *args: Any) -> Any:
        """Run the grader's function `key` (marked `in_executor`) there, on the module imported there, and return
        what it returned; a check it failed there fails here with the same message."""
        buffers: list[bytes] = []
        body = {"op": "observe", "key": key, "args": encoded(list(args), buffers, _sent)}
        return _value(self._link, self._path, *_asked(self._link, self._path, body, buffers))


def load(link: Link, path: Path, fresh: bool = False) -> RemoteModule:
    """Ask the executor for the learner's module (imported again when `fresh`); SubmissionError if it cannot."""
    header, _ = link.ask({"op": "load", "fresh": fresh})
    if not header["ok"]:
        if isinstance(header.get("load_error"), str):
            raise SubmissionError(header["load_error"])
        raise_remote(header, path)
    return RemoteModule(link, path)
