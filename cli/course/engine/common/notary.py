"""The notary: the one holder of the signing key inside a grading process, and the guard around it.

The verdict is a report signed with a key the parent sent; whoever holds the key can award
points. The learner's code runs in this same process, so the key lives only where that code
cannot reach it: in the closure of an audit hook (PEP 578), which nothing else refers to and
which cannot be removed. The hook signs and writes the manifest and the report itself, from
verdicts it takes only from the plugin's own code running on pytest's own stack, and before it
takes each one it compares the grading machinery with the snapshot it was given
(`course.engine.common.guard`). It rewrites the report after each check, so a run stopped later keeps
the verdicts of the checks that finished, and marks it complete at the end; between checks it
writes a marker into the output, made from the key, that says where each check's output starts
(`course.engine.parent.output`).

Once the checks are about to run (armed), a second hook (`course.engine.common.barrier`), which holds
nothing secret, refuses what would let the learner's code see the notary at work or write in its
place, and reports each attempt as tampering (the notary then writes a report saying so at once):

- walking the garbage collector's objects, other threads' frames, trace and profile functions,
  and adding another audit hook (which would run while the notary works);
- `ctypes`, and opening any process's `/proc/.../mem`: reading or writing raw memory;
- writing a function's `__code__`, or the defaults of the grading machinery's functions;
- touching the folder of the report;
- installing a signal handler (a handler can run inside the notary's own frame).

While it works the notary turns off the garbage collector (whose callbacks and finalizers could
run the learner's code), and it calls nothing the learner could have replaced: every built-in
and library function it uses is bound before learner code runs. Frames, tracebacks and `inspect`
stay free for honest code: the key is in no frame the learner's code can reach. What stays
possible is in docs/security.md.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from pathlib import Path

from course.engine.common import barrier
from course.engine.common.notary_hook import _make_notary, notify

__all__ = ["install", "notify"]  # notify is the hook's own: its code is the one the hook trusts


def install(
    *,
    key: bytes,
    manifest_path: Path,
    report_path: Path,
    callers: dict[str, tuple[types.CodeType, ...]],
    guarded_files: Iterable[str],
) -> None:
    """Start the notary; from now on it hears only `course.*` audit events, raised through `notify`.

    `callers` maps each event to the code objects allowed to raise it (through `notify`);
    `guarded_files` are the files whose functions' defaults may not be rewritten once armed.
    """
    from _pytest import config

    # pytest's entry points: the stack below them is the process's own start (runpy, the fork server).
    entries = frozenset(f.__code__ for n in ("main", "_main", "console_main", "_console_main")
                        if isinstance(f := getattr(config, n, None), types.FunctionType))
    sys.addaudithook(_make_notary(key, str(manifest_path), str(report_path), barrier.trusted_codes(), entries,
                                  dict(callers), tuple(guarded_files)))
