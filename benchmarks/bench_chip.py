"""What the course's kernels do on a TPU: block-size sweeps, the references before and after, `course bench`'s harness
against a hand-timed loop, and the chip-free estimate against the chip. Needs a TPU; run from the repository root:

    python benchmarks/bench_chip.py probe sweep --out DIR

Each part writes one JSON line per measurement to DIR/<part>.jsonl and prints a table. Times are the chip's own
clock (a profile's device events) where the profiler gives it, with the wall clock beside it; every result is also
compared with the same math at the chip's highest precision. Parts: `probe` (the machine, its profile's planes),
`sweep` (matmul and attention at several blocks, XLA's op, a copy kernel's cost per grid step), `hand` (the
harness against a plain loop), `refs` (the references before and after), `compiles` (every kernel file compiled),
`e2e` (`course check` and `course bench` as a learner types them, on the references and two chip-only stores).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "cli"))
sys.path.insert(0, str(ROOT / "benchmarks"))

MATMUL_BLOCKS = [(256, 256, 256), (512, 512, 512), (512, 512, 1024), (1024, 1024, 512), (1024, 512, 1024),
                 (512, 1024, 1024), (1024, 1024, 1024), (128, 128, 128)]
MATMUL_F32_BLOCKS = [(256, 256, 256), (512, 512, 512), (512, 512, 1024), (256, 512, 1024), (1024, 1024, 512)]
ATTENTION_BLOCKS = [(128, 128), (256, 256), (512, 512), (512, 1024), (1024, 1024), (256, 1024), (1024, 512),
                    (2048, 1024), (1024, 2048)]
COPY_ROWS = [8, 32, 128, 512, 4096]
# A dry run on a CPU (`BENCH_CHIP_DRY=1`): tiny sizes and blocks under the TPU interpreter, to try the script
# without spending a chip's time; its figures mean nothing.
DRY = os.environ.get("BENCH_CHIP_DRY") == "1"
if DRY:
    MATMUL_BLOCKS = MATMUL_F32_BLOCKS = [(128, 128, 128)]
    ATTENTION_BLOCKS, COPY_ROWS = [(128, 128)], [8, 64]


class Sink:
    """One JSON line per measurement in OUT/<part>.jsonl, and a line of text on the screen."""

    def __init__(self, out: Path, part: str) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.file = (out / f"{part}.jsonl").open("a", encoding="utf-8")

    def put(self, row: dict[str, Any]) -> None:
        """Keep a row, and print it."""
        self.file.write(json.dumps(row) + "\n")
        self.file.flush()
        print(" ".join(f"{k}={_short(v)}" for k, v in row.items()), flush=True)


def _short(value: Any) -> str:
    """A value as a short word."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)[:300]


def probe(sink: Sink) -> None:
    """What the machine is: JAX's devices, the chip's own figures, the OS's limits, and a profile's planes."""
    import jax
    import jax.numpy as jnp

    started = time.perf_counter()
    devices = jax.devices()
    opened = time.perf_counter() - started
    row: dict[str, Any] = {"part": "probe", "devices": [str(d) for d in devices], "open_s": opened,
                           "kind": devices[0].device_kind, "platform": devices[0].platform,
                           "libc": platform.libc_ver(), "python": sys.version.split()[0], "jax": jax.__version__,
                           "env": {k: v for k, v in os.environ.items() if k.startswith(("TPU", "JAX", "XLA"))},
                           "dev": sorted(p for p in os.listdir("/dev") if p.startswith(("accel", "vfio", "tpu")))}
    try:
        from jax.experimental.pallas import tpu as pltpu

        row["tpu_info"] = repr(pltpu.get_tpu_info())
    except Exception as exc:  # noqa: BLE001 - a probe records what fails
        row["tpu_info"] = f"{type(exc).__name__}: {exc}"
    import importlib.util
    import socket

    row["libtpu_spec"] = str(importlib.util.find_spec("libtpu"))
    try:
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
        row["inet"] = "ok"
    except OSError as exc:
        row["inet"] = str(exc)
    sink.put(row)
    import tempfile

    from jax.profiler import ProfileData

    folder = tempfile.mkdtemp()
    f = jax.jit(lambda a: a @ a)
    x = jnp.ones((1024, 1024), jnp.bfloat16)
    f(x).block_until_ready()
    with jax.profiler.trace(folder):
        for _ in range(3):
            f(x).block_until_ready()
    from course.chip.device_time import profile_files

    for path in profile_files(Path(folder)):
        for plane in ProfileData.from_file(str(path)).planes:
            lines = []
            for line in plane.lines:
                events = list(line.events)
                lines.append({"line": line.name, "events": len(events),
                              "first": [(e.name, e.duration_ns, dict(list(e.stats)[:6])) for e in events[:3]]})
            sink.put({"part": "plane", "plane": plane.name, "lines": lines[:12]})


def measure(sink: Sink, what: dict[str, Any], fn: Callable[..., Any], make: Callable[[int], tuple[Any, ...]],
            exact: Callable[..., Any] | None, flops: float, bytes_min: float, budget_s: float = 1.0) -> None:
    """Time `fn` on fresh inputs with the course's harness, check its last result, and keep one row."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from course.chip.timing import time_function

    row = dict(what)
    try:
        timing, out, args = time_function(fn, make, budget_s=budget_s)
        row.update(timing.to_json())
        row["tflops"] = flops / timing.median / 1e12 if flops else None
        row["gbps"] = bytes_min / timing.median / 1e9 if bytes_min else None
        if exact is not None:
            want = np.asarray(jax.device_get(exact(*args)), np.float32)
            got = np.asarray(jax.device_get(jnp.asarray(out, jnp.float32)))
            row["rel_err"] = float(np.abs(got - want).max() / (np.abs(want).max() or 1.0))
    except Exception as exc:  # noqa: BLE001 - a refused block is a finding
        row["error"] = f"{type(exc).__name__}: {str(exc)[:1500]}"
        row["trace"] = traceback.format_exc()[-600:]
    sink.put(row)


def _maker(shapes: list[tuple[tuple[int, ...], Any]]) -> Callable[[int], tuple[Any, ...]]:
    """Fresh random inputs of these shapes and dtypes for the i-th call, made on the device by one program."""
    import jax

    @jax.jit
    def course_bench_inputs(i):
        keys = jax.random.split(jax.random.key(i), len(shapes))
        pairs = zip(keys, shapes, strict=True)
        return tuple(jax.random.normal(k, s, jax.numpy.float32).astype(d) for k, (s, d) in pairs)

    return lambda i: course_bench_inputs(i)


def sweep(sink: Sink) -> None:
    """Matmul and attention at several blocks and sizes, XLA's op beside them, and a copy's cost per grid step."""
    import chip_kernels as ck
    import jax.numpy as jnp

    n = 256 if DRY else 4096
    for dtype, blocks in ((jnp.bfloat16, MATMUL_BLOCKS), (jnp.float32, MATMUL_F32_BLOCKS)):
        make = _maker([((n, n), dtype), ((n, n), dtype)])
        itemsize = jnp.dtype(dtype).itemsize
        base = {"part": "matmul", "dtype": jnp.dtype(dtype).name, "m": n, "n": n, "k": n}
        measure(sink, {**base, "blocks": "xla"}, jax_jit(ck.xla_matmul), make, ck.exact_matmul, 2 * n**3,
                3 * n * n * itemsize)
        for b in blocks:
            measure(sink, {**base, "blocks": list(b)}, ck.matmul(*b), make, ck.exact_matmul, 2 * n**3,
                    3 * n * n * itemsize)
    for s in (256,) if DRY else (8192, 16384):
        make = _maker([((s, 128), jnp.bfloat16)] * 3)
        base = {"part": "attention", "dtype": "bfloat16", "s": s, "t": s, "d": 128}
        exact = ck.exact_attention if s <= 8192 else None
        measure(sink, {**base, "blocks": "xla"}, jax_jit(ck.xla_attention), make, exact, 4 * s * s * 128,
                4 * s * 128 * 2)
        for b in ATTENTION_BLOCKS:
            measure(sink, {**base, "blocks": list(b)}, ck.attention(*b), make, exact, 4 * s * s * 128,
                    4 * s * 128 * 2)
    steps(sink)


def steps(sink: Sink) -> None:
    """A copy kernel's time against its grid steps, and double_buffer's reference at two sizes."""
    import chip_kernels as ck
    import jax.numpy as jnp

    rows = 256 if DRY else 65536
    make = _maker([((rows, 128), jnp.float32)])
    for r in COPY_ROWS:
        measure(sink, {"part": "copy", "rows": rows, "block_rows": r, "steps": rows // r}, ck.copy_rows(r), make,
                lambda x: x, 0, 2 * rows * 128 * 4)
    old = ck.solution("double_buffer")
    for r in (64,) if DRY else (4096, 65536):
        make = _maker([((r, 128), jnp.float32)])
        measure(sink, {"part": "double_buffer", "rows": r, "blocks": "reference"}, old.stream_scale, make,
                lambda x: 2 * x, 0, 2 * r * 128 * 4)


def hand(sink: Sink) -> None:
    """The harness against a plain loop: the same kernel, one input, `block_until_ready` around each call."""
    import chip_kernels as ck
    import jax
    import jax.numpy as jnp

    n = 256 if DRY else 4096
    for name, fn in (("xla", jax.jit(ck.xla_matmul)), ("1024x1024x512", ck.matmul(*((128,) * 3 if DRY else
                                                                                    (1024, 1024, 512))))):
        x, y = _maker([((n, n), jnp.bfloat16)] * 2)(0)
        jax.block_until_ready(fn(x, y))
        times = []
        for _ in range(10 if DRY else 30):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(x, y))
            times.append(time.perf_counter() - t0)
        sink.put({"part": "hand", "kernel": name, "n": n, "wall_median_s": statistics.median(times),
                  "wall_min_s": min(times)})
        measure(sink, {"part": "hand", "kernel": name, "n": n, "via": "harness"}, fn,
                _maker([((n, n), jnp.bfloat16)] * 2), None, 2 * n**3, 0)


def jax_jit(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`jax.jit(fn)`, imported late."""
    import jax

    return jax.jit(fn)


# The references at the lessons' sizes: (exercise, function, the call's inputs, math).
REFERENCE_CASES = [
    ("tiled_matmul", "matmul", [((4096, 4096), "bfloat16")] * 2, "matmul"),
    ("tiled_matmul", "matmul", [((4096, 4096), "float32")] * 2, "matmul"),
    ("flash_attention", "attention", [((16384, 128), "bfloat16")] * 3, "attention"),
    ("flash_attention", "attention", [((8192, 128), "bfloat16")] * 3, "attention"),
    ("double_buffer", "stream_scale", [((65536, 128), "float32")], "double"),
]
if DRY:
    REFERENCE_CASES = [("tiled_matmul", "matmul", [((256, 256), "bfloat16")] * 2, "matmul"),
                       ("flash_attention", "attention", [((256, 128), "bfloat16")] * 3, "attention"),
                       ("double_buffer", "stream_scale", [((64, 128), "float32")], "double")]


def refs(sink: Sink) -> None:
    """Each reference before and after its blocks were chosen for the chip, beside XLA's op, at the lessons' sizes;
    and a plain loop around the reference of today (what `course bench` is compared with)."""
    import chip_kernels as ck
    import jax
    import jax.numpy as jnp

    from course.chip.maths import MATHS

    for name, fn_name, shapes, math_name in REFERENCE_CASES:
        math = MATHS[math_name]
        make = _maker([(s, jnp.dtype(d)) for s, d in shapes])
        specimen = make(0)
        flops, nbytes = math.flops(*specimen), math.nbytes(*specimen)
        base = {"part": "refs", "exercise": name, "shapes": [list(s) for s, _ in shapes], "dtype": shapes[0][1]}
        for label, fn in (("xla", jax.jit(math.xla)), ("before", ck.BEFORE[name]()),
                          ("after", getattr(ck.solution(name), fn_name))):
            measure(sink, {**base, "kernel": label}, fn, make, math.exact, flops, nbytes)
        fn = getattr(ck.solution(name), fn_name)
        args = make(1)
        jax.block_until_ready(fn(*args))
        times = []
        for _ in range(5 if DRY else 30):
            t0 = time.perf_counter()
            jax.block_until_ready(fn(*args))
            times.append(time.perf_counter() - t0)
        sink.put({**base, "kernel": "after, plain loop", "wall_median_s": statistics.median(times),
                  "wall_min_s": min(times)})


KERNEL_EXERCISES = ("ref_reads_writes", "aliasing_order", "any_sync_copy", "smem_scalar", "alias_zero_init",
                    "tiled_matmul", "flash_attention", "double_buffer")


def compiles(sink: Sink) -> None:
    """Every reference, shipped alternative and chip-only wrong variant of the kernel exercises, compiled on the chip
    at its `[chip]` calls and compared with the reference's result there (one process: our own files)."""
    import tomllib

    import jax

    from course.chip.agreement import agree, refusal
    from course.chip.modes import _call, _leaves
    from course.engine.common.submission import load, read_source

    for name in KERNEL_EXERCISES:
        folder = next((ROOT / "exercises").glob(f"*_{name}"))
        table = tomllib.loads((folder / "exercise.toml").read_text(encoding="utf-8"))["chip"]
        reference = ROOT / "solutions" / folder.name / f"{name}.py"
        files = [reference, *sorted((ROOT / "tests" / "content" / "alternatives" / name).glob("*.py")),
                 *sorted(p for p in (ROOT / "solutions" / folder.name / "wrong").glob("*.py")
                         if "chip" in p.read_text(encoding="utf-8").split("\n", 1)[0].lower())]
        want: dict[str, list[Any]] = {}
        for path in files:
            module = load(path, read_source(path))
            for text in table["calls"]:
                row = {"part": "compiles", "exercise": name, "file": str(path.relative_to(ROOT)), "call": text}
                try:
                    got = _leaves(jax.block_until_ready(_call(text, module, table).run()))
                except Exception as exc:  # noqa: BLE001 - a refusal is the finding
                    kind, words = refusal(exc, path, path.read_text(encoding="utf-8"))
                    sink.put({**row, "status": kind, "message": words})
                    continue
                if path == reference:
                    want[text] = got
                found = [agree(g, w) for g, w in zip(got, want.get(text, got), strict=False)]
                sink.put({**row, "status": "matched" if all(f.ok for f in found) else "differs",
                          "error": max((f.error for f in found), default=0.0)})

# What a learner with a chip types: the references of the kernel exercises, and ref_reads_writes' reference with
# `add_kernel` storing ROWS rows at a time at a dynamic offset (a store only the chip's compiler may refuse), checked
# and benched through the command line, each command in its own process as a learner would run it.
E2E_FILES = [(name, None) for name in KERNEL_EXERCISES] + [("ref_reads_writes", rows) for rows in (1, 2)]
_WHOLE_ADD = """    o_ref[...] = x_ref[...] + y_ref[...]
"""
_ROWS_ADD = """    def body(i, carry):
        rows = pl.ds(i * {rows}, {rows})
        o_ref[rows, :] = x_ref[rows, :] + y_ref[rows, :]
        return carry

    lax.fori_loop(0, x_ref.shape[0] // {rows}, body, None)
"""


def _stored_by_rows(reference: Path, rows: int) -> str:
    """The reference of ref_reads_writes with `add_kernel` storing `rows` rows per step at a dynamic offset."""
    text = reference.read_text(encoding="utf-8")
    if _WHOLE_ADD not in text:
        raise SystemExit("bench_chip: ref_reads_writes' add_kernel changed; update _WHOLE_ADD")
    return text.replace(_WHOLE_ADD, _ROWS_ADD.format(rows=rows))


def e2e(sink: Sink) -> None:
    """`course init`, then `course check NAME --json` and `course bench NAME --json` on the references, timed."""
    import shutil
    import subprocess
    import tempfile

    work = Path(tempfile.mkdtemp(prefix="course-e2e-")) / "ws"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "cli"), os.environ.get("PYTHONPATH")]))}
    course = [sys.executable, "-m", "course"]
    subprocess.run([*course, "init", str(work), "--course", str(ROOT)], env=env, check=True, capture_output=True)
    for name, variant in E2E_FILES:
        reference = next((ROOT / "solutions").glob(f"*_{name}")) / f"{name}.py"
        target = next(work.rglob(f"{name}.py"))
        label = f"{variant} rows a store" if variant else "reference"
        if variant is None:
            shutil.copyfile(reference, target)
        else:
            target.write_text(_stored_by_rows(reference, variant), encoding="utf-8")
        for verb in ("check", "bench") if variant is None and name in _PUBLIC else ("check",):
            started = time.perf_counter()
            done = subprocess.run([*course, verb, name, "--json", "-w", str(work), "--course", str(ROOT)], env=env,
                                  capture_output=True, text=True, timeout=600)
            row = {"part": "e2e", "verb": verb, "exercise": name, "file": label, "rc": done.returncode,
                   "wall_s": round(time.perf_counter() - started, 1)}
            try:
                row["json"] = json.loads(done.stdout)
            except json.JSONDecodeError:
                row["stdout"], row["stderr"] = done.stdout[-2000:], done.stderr[-2000:]
            sink.put(row)
        if variant is not None or name == "tiled_matmul":
            done = subprocess.run([*course, "check", name, "-w", str(work), "--course", str(ROOT)], env=env,
                                  capture_output=True, text=True, timeout=600)
            sink.put({"part": "e2e", "verb": "check (text)", "exercise": name, "file": label,
                      "rc": done.returncode,
                      "text": done.stdout[-3000:] + done.stderr[-1500:]})


def estimates(sink: Sink, results: Path) -> None:
    """The chip-free estimate of every kernel measured in `results` (a folder of this script's .jsonl files), beside
    the chip's time: needs no chip."""
    import chip_kernels as ck
    import jax
    import jax.numpy as jnp

    from course.chip.estimate import kernel_cost
    from course.chip.roofline import chip_named
    from course.grading.observe.kernels.kernels import pallas_calls

    chip = chip_named("v5e")
    seen: set[str] = set()
    for row in (json.loads(line) for path in sorted(results.glob("*.jsonl")) for line in path.open()):
        case = _kernel_case(row, ck)
        if case is None or row.get("error") or not row.get("median_s"):
            continue
        key = json.dumps(case[0])
        if key in seen:
            continue
        seen.add(key)
        what, fn, shapes = case
        specs = [jax.ShapeDtypeStruct(shape, jnp.dtype(dtype)) for shape, dtype in shapes]
        found = [kernel_cost(k).on(chip) for k in pallas_calls(fn, *specs)]
        estimate = sum(f.seconds for f in found)
        sink.put({"part": "estimate", **what, "chip_s": row["median_s"], "estimate_s": estimate,
                  "ratio": estimate / row["median_s"], "bound": found[0].bound if found else ""})


def _kernel_case(row: dict[str, Any], ck: Any) -> tuple[dict[str, Any], Any, list[Any]] | None:
    """(what it was, the kernel's function, its inputs' shapes and dtypes) of a measured row, or None for XLA's."""
    part, blocks = row.get("part"), row.get("blocks")
    if part == "matmul" and isinstance(blocks, list):
        n, dtype = row["m"], row["dtype"]
        what = {"kernel": "matmul", "dtype": dtype, "size": n, "blocks": blocks}
        return what, ck.matmul(*blocks), [((n, n), dtype)] * 2
    if part == "attention" and isinstance(blocks, list):
        s = row["s"]
        return ({"kernel": "attention", "dtype": row["dtype"], "size": s, "blocks": blocks}, ck.attention(*blocks),
                [((s, 128), row["dtype"])] * 3)
    if part == "copy":
        r = row["rows"]
        return {"kernel": "copy", "size": r, "blocks": row["block_rows"]}, ck.copy_rows(row["block_rows"]), [
            ((r, 128), "float32")]
    if part == "refs" and row.get("kernel") in ("before", "after"):
        name = row["exercise"]
        fn = ck.BEFORE[name]() if row["kernel"] == "before" else getattr(ck.solution(name), _PUBLIC[name])
        shapes = [(tuple(s), row["dtype"]) for s in row["shapes"]]
        return {"kernel": f"{name} ({row['kernel']})", "dtype": row["dtype"], "size": row["shapes"][0]}, fn, shapes
    return None


_PUBLIC = {"tiled_matmul": "matmul", "flash_attention": "attention", "double_buffer": "stream_scale"}

PARTS = {"probe": probe, "sweep": sweep, "steps": steps, "hand": hand, "refs": refs, "compiles": compiles,
         "e2e": e2e}


def main() -> None:
    """Run the parts asked for, each into its own file."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("parts", nargs="*", metavar="PART", help=f"any of {', '.join(sorted(PARTS))}")
    parser.add_argument("--out", type=Path, default=Path("chip-results"))
    parser.add_argument("--estimate", type=Path, metavar="RESULTS",
                        help="no chip needed: estimate every kernel measured in RESULTS, a folder of .jsonl files")
    args = parser.parse_args()
    if args.estimate:
        estimates(Sink(args.out, "estimate"), args.estimate)
        return
    if DRY:
        from jax.experimental.pallas import tpu as pltpu

        pltpu.set_tpu_interpret_mode(pltpu.InterpretParams())
    for part in args.parts:
        if part not in PARTS:
            parser.error(f"no part named {part!r}")
        started = time.perf_counter()
        PARTS[part](Sink(args.out, part))
        print(f"# {part}: {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    main()
