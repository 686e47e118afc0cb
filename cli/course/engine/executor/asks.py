"""What the judge may ask of a call of the learner's code, and how the executor makes it.

A call is made as asked: plainly, under `jax.jit` (`call_jitted`), as `strict_values` runs a kernel
(`strict`), traced (`trace`: its jaxpr, sent as data), traced, compiled and run once (`case`, as
`traced_once` does), traced for the jitted calls it makes (`jits`), for the gradients of its sum
(`grad`), once per argument tuple with what each call compiled, built and ran noted (`watch`), or as
`run_aliased` runs a kernel (`aliased`); inside the strict interpreter block the judge's check has
open, if any (`interpret`). Whatever the header says is checked here before it is used: the judge's
requests cross the same link as the learner's answers.
"""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from course.engine.wire import wire

__all__ = ["run_call"]


def run_call(fn: Any, header: dict[str, Any], args: Any, kwargs: dict[str, Any], path: Path,
              module: types.ModuleType | None) -> Any:
    """Call `fn` as the judge asked: as `strict_values` runs a kernel (`strict`), or else as `_dispatch` says,
    inside the strict interpreter block the judge's check has open (`interpret`), if any."""
    strict, interpret = header.get("strict"), header.get("interpret")
    if strict is not None:
        return _strict(fn, str(header.get("name")), args, strict, jit=header.get("jit") is True)
    if interpret is None:
        return _dispatch(fn, header, args, kwargs, path, module)
    if not isinstance(interpret, dict):
        raise wire.WireError("a call's interpreter overrides are malformed")
    from course.grading.observe.calls.tpu import tpu_interpret

    with tpu_interpret(**interpret):  # a watch or a trace too: the interpreter changes what compiles, and how
        return _dispatch(fn, header, args, kwargs, path, module)


def _dispatch(fn: Any, header: dict[str, Any], args: Any, kwargs: dict[str, Any], path: Path,
              module: types.ModuleType | None) -> Any:
    """Call `fn` plainly, under `jax.jit` (`call_jitted`), traced for the jitted calls it makes (`jits`: their
    program texts, which the judge reads), for the gradients of its sum (`grad`), or once per argument tuple
    with what each call compiled, built and ran noted (`watch`); a plain call's result is waited for."""
    import jax

    if isinstance(asked := header.get("watch"), dict):
        from course.grading.observe.calls.warmup import watch

        if kwargs or len(args) != 1 or not all(isinstance(call, list) for call in args[0]):
            raise wire.WireError("the calls to watch are malformed")
        return watch(fn, [tuple(call) for call in args[0]], module=module, path=path,
                     fresh_caches=asked.get("fresh") is True, runs=asked.get("runs") is True,
                     every_program=asked.get("every") is True)
    if isinstance(asked := header.get("aliased"), dict):
        return _aliased(fn, args, asked, path, module)
    if isinstance(asked := header.get("case"), dict):  # traced, compiled and run once, as `traced_once` does
        return _case(fn, args, kwargs, asked, path)
    if isinstance(asked := header.get("trace"), dict):  # a closed jaxpr, sent as data (`course.engine.wire.jaxprs`)
        if kwargs:
            raise wire.WireError("a trace's arguments are malformed")
        return _trace(fn, args, asked)
    if header.get("jits") is True:
        from course.grading.observe.calls.donation import jit_calls, record_of

        if kwargs:
            raise wire.WireError("a trace's arguments are malformed")
        return [record_of(call) for call in jit_calls(fn, *args, path=path)]
    if header.get("grad") is not None:  # the gradients of the sum of its result, as `grad_of_sum` asks
        from course.grading.observe.calls.programs import grad_of_sum

        argnums = header["grad"]
        if not isinstance(argnums, list) or not all(type(a) is int and 0 <= a < len(args) for a in argnums) or kwargs:
            raise wire.WireError("a gradient's arguments are malformed")
        return grad_of_sum(fn, *args, argnums=tuple(argnums))
    if header.get("jit") is True:  # run as the grader's `jax.jit` would
        from course.grading.observe.calls.programs import under_jit

        fn = under_jit(fn, args, kwargs)
    return jax.block_until_ready(fn(*args, **kwargs))


def _trace(fn: Any, args: Any, asked: dict[str, Any]) -> Any:
    """The closed jaxpr of `fn(*args)`; of the `pallas_call` a grader makes of the kernel `fn` (`kernel`, as
    `kernel_call` makes it); or (`body`) the trace a jitted object gives of its own body, None for anything else."""
    import jax

    if isinstance(asked.get("kernel"), dict):
        from jax.experimental import pallas as pl

        spec, io = _kernel_spec(asked["kernel"])
        fn = pl.pallas_call(fn, out_shape=spec, input_output_aliases=io, interpret=True)
    from course.grading.observe.calls.strict_runs import tpu_fallback
    from course.grading.observe.traces.jaxprs import jitted_body

    # A trace that asks which TPU it runs on (`emit_pipeline`) is made on an abstract one, as graders trace it.
    if asked.get("body") is True:
        return tpu_fallback(lambda: jitted_body(fn, *args))
    count = asked.get("static", 0)
    if type(count) is not int or not 0 <= count <= len(args):
        raise wire.WireError("a trace's static arguments are malformed")
    split = len(args) - count
    return tpu_fallback(lambda: jax.make_jaxpr(lambda *a: fn(*a, *args[split:]))(*args[:split]))


def _case(fn: Any, args: Any, kwargs: dict[str, Any], asked: dict[str, Any], path: Path) -> Any:
    """(trace, compiled HLO text, result) of `traced_once(fn, *args)`, the last `static` arguments passed untraced."""
    from course.grading.observe.traces.sharding import traced_once

    count, name = asked.get("static"), asked.get("name")
    if kwargs or type(count) is not int or not 0 <= count <= len(args) or not isinstance(name, str):
        raise wire.WireError("a traced case is malformed")
    split = len(args) - count
    case = traced_once(fn, *args[:split], static=tuple(args[split:]), name=name[:200], path=path)
    return case.jaxpr, case.hlo, case.out


def _kernel_spec(asked: dict[str, Any]) -> tuple[Any, dict[int, int]]:
    """The output type and aliases of a `pallas_call` the judge asked for, checked."""
    import jax

    aliases, shape, dtype = asked.get("aliases"), asked.get("shape"), asked.get("dtype")
    if not (isinstance(aliases, list) and all(isinstance(p, list) and len(p) == 2 and all(type(i) is int and i >= 0
                                                                                        for i in p) for p in aliases)
            and isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)
            and isinstance(dtype, str) and dtype in wire.DTYPES):
        raise wire.WireError("a kernel's aliases are malformed")
    return jax.ShapeDtypeStruct(tuple(shape), wire.dtype(dtype)), {i: o for i, o in aliases}


def _aliased(kernel: Any, args: Any, asked: dict[str, Any], path: Path, module: types.ModuleType | None) -> Any:
    """Run a kernel as `run_aliased` runs one, or (`hazard`) say its first read after an overlapping write."""
    from course.grading.observe.kernels.aliasing import first_hazard, run_aliased

    spec, io = _kernel_spec(asked)
    if asked.get("hazard") is not True:
        return run_aliased(kernel, *args, out_shape=spec, input_output_aliases=io)
    found = first_hazard(kernel, *args, out_shape=spec, input_output_aliases=io, path=path,
                         namespaces=(vars(module),) if module is not None else ())
    return None if found is None else found.message()


def _strict(fn: Any, name: str, args: Any, overrides: Any, *, jit: bool) -> Any:
    """`fn(*args)` as a grader runs a kernel for values: under the strict TPU interpreter, and (`jit`, as the
    grader's `jitted_once` asked) jitted once per shape."""
    from course.grading.observe.calls.strict_runs import jitted_once, strict_values

    if not isinstance(overrides, dict) or not all(isinstance(v, str | int | float | bool) for v in overrides.values()):
        raise wire.WireError("a strict call's parameters are malformed")
    key = (name, *((tuple(getattr(a, "shape", ())), str(getattr(a, "dtype", type(a).__name__))) for a in args))
    return strict_values(jitted_once(fn, key) if jit else fn, *args, **overrides)
