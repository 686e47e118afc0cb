"""The learner's functions and objects as the judge holds them: each call, attribute and item asks the executor."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

from course.engine.common.submission import PlatformFailure, SubmissionError, describe_exception
from course.engine.judge import arguments, consistency, replay
from course.engine.judge.link import GONE, ExecutorGone, Link, Opaque, _asked, _returned, encoded
from course.engine.wire import wire
from course.engine.wire.placement import array_leaf, describe_mesh
from course.grading.judge import fingerprint


def _value(link: Link, path: Path, header: dict[str, Any], returned: list[bytes]) -> Any:
    """The value an answer carries, rebuilt here (an object the executor holds as a `RemoteObject`); an answer
    that is malformed fails the check."""
    try:
        return wire.decode(header.get("value"), returned, _returning(link, path))
    except wire.WireError as exc:
        raise SubmissionError(f"the process running your code sent an answer that is not one ({exc}); "
                              "something in your file changed what it sends") from None
    except Exception as exc:  # noqa: BLE001 - not the learner's: this process's reader failed on an answer
        raise PlatformFailure(f"the grading machinery could not read what the process running your code sent "
                              f"({describe_exception(exc)})") from exc


def _attribute(link: Link, path: Path, name: str, handle: int | None = None) -> Any:
    """`name` read there, of the module or of the held object `handle`: a callable comes back as one."""
    body: dict[str, Any] = {"op": "get", "name": name}
    if handle is not None:
        body["handle"] = handle
    header, returned = _asked(link, path, body)
    if header.get("callable"):
        return RemoteFunction(link, name, path, handle=handle)
    return _value(link, path, header, returned)


class RemoteFunction:
    """A function of the learner's module; calling it runs it in the executor."""

    def __init__(self, link: Link, name: str, path: Path, *, jitted: bool = False, handle: int | None = None) -> None:
        self._link, self.__name__, self._path, self._handle = link, name, path, handle
        self.__qualname__ = name
        self.jitted = jitted
        """Run there under `jax.jit`, as `course.grading.jitted_once` hands it back (made once per shape there)."""

    def jitted_once(self) -> RemoteFunction:
        """This function as `jax.jit` of it, run in the executor (where it is made once per shape)."""
        return RemoteFunction(self._link, self.__name__, self._path, jitted=True, handle=self._handle)

    def __repr__(self) -> str:
        return f"<learner's function {self.__name__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Send the arguments, run the call there, and return what it returned."""
        return self._run(args, kwargs, jit=self.jitted)

    def call_jitted(self, *args: Any, **kwargs: Any) -> Any:
        """As a call, but run there under `jax.jit`, the arguments that are no arrays static
        (`course.grading.observe.calls.programs.call_jitted`)."""
        return self._run(args, kwargs, jit=True)

    def grad_of_sum(self, *args: Any, argnums: tuple[int, ...] = (0,)) -> Any:
        """The gradients of the sum of its result, with respect to `argnums`, computed there under `jax.jit`
        (`course.grading.grad_of_sum`)."""
        return self._run(args, {}, jit=False, grad=[int(a) for a in argnums])

    def jit_calls(self, *args: Any) -> Any:
        """Each jitted call it makes, traced there (`course.grading.jit_calls`): what the trace says, and the
        texts of the programs, from which the judge reads what is really reused."""
        return self._run(args, {}, jit=False, jits=True)

    def rerun(self, *args: Any) -> Any:
        """The programs this function's last plain call ran, run here on `args` (`course.engine.judge.replay.rerun`)."""
        leaves, at = leaves_of(args, {})
        return replay.rerun(self._key(), self.__name__, leaves, at)

    def ran_programs(self) -> list[Any] | None:
        """Every program this function's last plain call ran, as read here, or None (`reruns.called_programs`)."""
        chain = replay.last(self._key())
        return None if chain is None or chain.aot else [p for p in chain.programs if not isinstance(p, replay.Put)]

    def _key(self) -> str:
        """The name this function's programs are kept under."""
        return self.__name__ if self._handle is None else f"{self.__name__}#{self._handle}"

    def traced_there(self, *args: Any, kernel: Any = None, aliases: dict[int, int] | None = None,
                     body: bool = False, static: tuple[Any, ...] = ()) -> Any:
        """Its closed jaxpr at these arguments, traced there and sent as data (`course.engine.wire.jaxprs`), read here
        as JAX's own objects so that every conclusion about it is drawn in this process. With `kernel` (an output
        type), the jaxpr of a `pallas_call` of it with `aliases`, as `kernel_call` makes one; with `body`, the
        trace a jitted object gives of its own body, or None when it is no jitted object. With `static`, those
        arguments follow `args` untraced, and the function is also called there plainly at all of them: what that
        call ran is held to the trace (`consistency.note_plain`)."""
        asked: dict[str, Any] = {"body": bool(body)}
        if static:
            asked["static"] = len(static)
        if kernel is not None:
            import jax.numpy as jnp

            asked["kernel"] = {"aliases": [[int(i), int(o)] for i, o in (aliases or {}).items()],
                               "shape": [int(d) for d in kernel.shape], "dtype": jnp.dtype(kernel.dtype).name}
        return self._run((*args, *static), {}, jit=False, trace=asked)

    def traced_once(self, *args: Any, static: tuple[Any, ...], name: str) -> Any:
        """(trace, compiled HLO text, result) of `course.grading.traced_once` made there for these arguments, with
        `static` passed after them; a check the executor failed on the way (a tracing mistake explained) fails
        here with its message."""
        return self._run((*args, *static), {}, jit=False, case={"name": str(name), "static": len(static)})

    def watched_calls(self, calls: list[list[Any]], *, fresh_caches: bool = False, runs: bool = False,
                      every_program: bool = False) -> Any:
        """Call it there once per argument list, noting what each call compiled and built (and ran, with `runs`;
        JAX's own eager programs too, with `every_program`), then trace each call for its programs' texts
        (`course.grading.watched_calls`), which the judge reads; with `fresh_caches`, JAX's caches are emptied
        there first."""
        asked = {"fresh": bool(fresh_caches), "runs": bool(runs), "every": bool(every_program)}
        return self._run((calls,), {}, jit=False, watch=asked)

    def aliased(self, *inputs: Any, out_shape: Any, aliases: dict[int, int], hazard: bool = False) -> Any:
        """Run this kernel there as `run_aliased` runs one: each aliased input and its output one ref; with
        `hazard`, the words of its first read after an overlapping write instead (`first_hazard`), or None."""
        import jax.numpy as jnp

        asked = {"aliases": [[int(i), int(o)] for i, o in aliases.items()], "shape": [int(d) for d in out_shape.shape],
                 "dtype": jnp.dtype(out_shape.dtype).name, "hazard": bool(hazard)}
        return self._run(inputs, {}, jit=False, aliased=asked)

    def strict(self, *args: Any, **overrides: Any) -> Any:
        """Run it there as `course.grading.strict_values` runs a kernel: strictly interpreted (and jitted once
        per shape, when this is `jitted_once`'s)."""
        return self._run(args, {}, jit=self.jitted, strict={str(k): v for k, v in overrides.items()})

    def _run(self, args: tuple, kwargs: dict[str, Any], *, jit: bool, **asked: Any) -> Any:
        """Send the arguments, run the call there as `asked` (one kind of request, `course.engine.executor.asks`:
        `grad`, `jits`, `trace`, `case`, `watch`, `aliased` or `strict`, with its parameters), and return what it
        returned."""
        leaves: list[Any] = []
        buffers: list[bytes] = []
        sending = _noting(leaves)
        body = {"op": "call", "name": self.__name__, "args": encoded(list(args), buffers, sending),
                "kwargs": encoded(dict(kwargs), buffers, sending), "jit": jit}
        if self._handle is not None:  # a method of an object the judge holds (or that object, called)
            body["handle"] = self._handle
        body.update(asked)
        # A check inside `tpu_interpret`: the call runs under it there.
        tpu = sys.modules.get("course.grading.observe.calls.tpu")
        if "strict" not in asked and tpu is not None and (interpret := tpu.active_overrides()) is not None:
            body["interpret"] = interpret
        inputs = fingerprint.signature(args, kwargs)  # taken before the call consumes any argument
        header, returned = _asked(self._link, self._path, body, buffers)
        for index in header.get("consumed", []):
            if isinstance(index, int) and 0 <= index < len(leaves) and hasattr(leaves[index], "delete"):
                leaves[index].delete()  # the call donated it there: it is gone here too
        value = _value(self._link, self._path, header, returned)
        self._note(asked, jit, inputs, header, returned, value, body)
        if set(asked) <= {"strict", "grad"}:  # a call whose values a check compares
            consistency.no_host_callbacks(self.__name__, header.get("ran"))
        return value

    def _note(self, asked: dict[str, Any], jit: bool, inputs: str, header: dict[str, Any], returned: list[bytes],
              value: Any, body: dict[str, Any]) -> None:
        """Keep what this call ran, or what this trace showed, beside every other program of the function at these
        input types (`course.engine.judge.consistency`): a function that runs one program and shows another fails.
        `body` is the request, whose encoded arguments say where each argument leaf sat in the call."""
        name = self._key()
        if "case" in asked and isinstance(value, tuple | list) and value:  # a traced case: its trace, and a plain call
            consistency.note_trace(name, inputs, value[0])
            if header.get("plain") is not None:
                consistency.note_plain(name, inputs, value[0], header["plain"], returned)
            return
        trace = asked.get("trace")
        if isinstance(trace, dict) and trace.get("static"):  # its types alone do not make its program: held to the
            if value is not None:                            # plain call made at the very same arguments
                consistency.note_static_trace(name, inputs, value, header.get("plain"), returned)
            return
        if isinstance(trace, dict):
            if value is not None:
                kernel = trace.get("kernel")
                consistency.note_trace(f"{name}/kernel" if kernel else name, f"{inputs} {kernel}" if kernel else inputs,
                                       value)
            return
        if set(asked) <= {"strict"}:  # a plain call, or a kernel's values: the programs it ran
            consistency.note_call(name, inputs, consistency.JITTED if jit else consistency.PLAIN,
                                  header.get("ran"), returned, header.get("plain"))
            if not jit:  # and where their inputs came from, for the judge to run them itself
                replay.keep(name, header, returned, _returning(self._link, self._path),
                            arguments.places(body["args"], body["kwargs"]))
        elif asked == {"jits": True}:  # a plain call too, whose programs' texts `jit_calls` reads
            consistency.note_call(name, inputs, consistency.PLAIN, header.get("ran"), returned)


def leaves_of(args: tuple, kwargs: dict[str, Any]) -> tuple[list[Any], list[arguments.Place]]:
    """The argument leaves a call with `args` and `kwargs` sends, in the order the executor numbers them, and where
    each sits in the arguments."""
    import jax

    leaves: list[Any] = []

    def counting(value: Any) -> dict[str, Any] | None:
        """A leaf as `_sent` would send one, with no data: only its number matters here, and an array's bytes (read
        from the device, then copied) would be thrown away."""
        if isinstance(value, jax.Array | np.ndarray | np.generic) or _sent(value) is not None:
            leaves.append(value)
            return {"data": _NO_DATA, "kind": "counted"}
        return None

    at = arguments.places(encoded(list(args), [], counting), encoded(dict(kwargs), [], counting))
    return leaves, at


_NO_DATA = np.zeros(0, np.float32)


def _noting(leaves: list[Any]) -> Any:
    """`_sent`, noting in `leaves` each leaf sent as one, in order."""
    def sending(value: Any) -> dict[str, Any] | None:
        described = _sent(value)
        if described is not None:
            leaves.append(value)
        return described

    return sending


def _sent(value: Any) -> dict[str, Any] | None:
    """How an argument leaf is sent: a jax.Array (read here, so a deleted one raises as it would there), a Mesh,
    a NumPy value, a held object, a dtype, or a `jax.ShapeDtypeStruct` (its type only)."""
    import jax

    if isinstance(value, jax.Array):
        return array_leaf(value)
    if isinstance(value, jax.sharding.Mesh):
        return {"data": np.zeros(0, np.float32), "kind": "mesh", "mesh": describe_mesh(value)}
    if isinstance(value, np.ndarray):
        return {"data": value, "kind": "np"}
    if isinstance(value, np.generic):
        return {"data": np.asarray(value), "kind": "npscalar"}
    if isinstance(value, RemoteObject):  # back to the executor, which holds it
        return {"data": np.zeros(0, np.float32), "kind": "handle", "id": value._handle}
    if isinstance(value, np.dtype) and value.name in wire.DTYPES:
        return {"data": np.zeros(0, np.float32), "kind": "dtype", "name": value.name}
    if isinstance(value, jax.ShapeDtypeStruct) and value.sharding is None and np.dtype(value.dtype).name in wire.DTYPES:
        # A type to trace at: its shape and dtype cross, no data.
        return {"data": np.zeros(0, np.float32), "kind": "spec", "of": [int(d) for d in value.shape],
                "as": np.dtype(value.dtype).name}
    return None


def _returning(link: Link, path: Path) -> Any:
    """How returned leaves are rebuilt for a request on `link`: an object the executor holds becomes a
    `RemoteObject` on that link, anything else as `_returned` makes it."""
    def rebuilt(data: np.ndarray, node: dict[str, Any]) -> Any:
        handle = node.get("id")
        if node.get("kind") != "handle" or not isinstance(handle, int) or isinstance(handle, bool):
            return _returned(data, node)
        if handle not in link.objects:
            name = str(node.get("type", "object"))[:200]
            kind = _kind(name, str(node.get("module", "")))
            link.objects[handle] = kind(link, handle, name, path, callable_=node.get("callable") is True)
        return link.objects[handle]

    return rebuilt


def _kind(type_name: str, module: str = "") -> type[RemoteObject]:
    """The class of the judge's view of an object of the learner's class `type_name` (of `module`): named as
    theirs, so a message that names the type says what the learner wrote."""
    name = type_name.rsplit(".", 1)[-1]
    where = module if module and all(part.isidentifier() for part in module.split(".")) else "learner"
    if not name.isidentifier() or ((where, name) not in _KINDS and len(_KINDS) >= MAX_KINDS):
        return RemoteObject  # a flood of made-up class names costs the judge nothing
    if (where, name) not in _KINDS:
        _KINDS[where, name] = type(name, (RemoteObject,), {"__module__": where})
    return _KINDS[where, name]


class RemoteObject(Opaque):
    """An object the learner's code returned that is no array or plain value (a view, an instance of their
    class): the executor holds it, and each use of it here (an attribute, a method call, an item read or
    written) is a request there. Only arrays and plain values come back; nothing of it runs here."""

    def __init__(self, link: Link, handle: int, type_name: str, path: Path, *, callable_: bool = False) -> None:
        super().__init__(type_name)
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_handle", handle)
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_callable", callable_)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_link", "_handle", "_path", "_callable"):
            raise AttributeError(name)
        return _attribute(self._link, self._path, name, self._handle)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the held object itself (a callable the learner's code returned)."""
        if not self._callable:
            raise TypeError(f"'{self.type_name}' object is not callable")
        return RemoteFunction(self._link, "", self._path, handle=self._handle)(*args, **kwargs)

    def _course_leaves(self) -> list[tuple[bool, Any]]:
        """The held object's pytree leaves as (is a `jax.Ref`, value), each ref read there from the ref itself
        (`course.grading.ref_leaves`)."""
        header, returned = _asked(self._link, self._path, {"op": "leaves", "handle": self._handle})
        values = _value(self._link, self._path, header, returned)
        refs = header.get("refs")
        if not isinstance(values, list) or not isinstance(refs, list) or len(refs) != len(values):
            raise ExecutorGone(GONE)
        return [(ref is True, value) for ref, value in zip(refs, values, strict=True)]

    def __getitem__(self, key: Any) -> Any:
        return self._item({"op": "item"}, key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._item({"op": "setitem"}, key, value)

    def _item(self, body: dict[str, Any], key: Any, *value: Any) -> Any:
        """Read (or write, given a value) the held object's item `key` there."""
        buffers: list[bytes] = []
        body.update(handle=self._handle, key=encoded(key, buffers, _sent))
        if value:
            body["value"] = encoded(value[0], buffers, _sent)
        return _value(self._link, self._path, *_asked(self._link, self._path, body, buffers))


_KINDS: dict[tuple[str, str], type[RemoteObject]] = {}
MAX_KINDS = 256
"""At most this many class names of the learner's get a stand-in class of their own."""
