"""What the distributed section says a collective costs a device, read from real programs on 8 CPU devices.

A psum and a psum_scatter of one array must read differently (the scatter keeps an eighth and
sends half as much), a sixth operand of a combined all-reduce must be read like the first, the
groups must be named by the learner's own mesh axes, and a function that reads `x.sharding` (which
a trace has not) is run for real rather than reported as raising.
"""

from __future__ import annotations

import io
import types
from pathlib import Path

import pytest
from rich.console import Console

from course import ui
from course.grading.inspect import calls, compiler, distributed, hlo
from course.ui.inspection import draw_section
from grading.eight_devices import on_eight_devices

LEARNER = '''
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P


def reduce_both(x, mesh):
    body = lambda b: (lax.psum(b, "i"), lax.psum_scatter(b, "i", tiled=True))
    return jax.shard_map(body, mesh=mesh, in_specs=P("i"), out_specs=(P(), P("i")))(x)


def six_sums(xs, mesh):
    body = lambda *bs: tuple(lax.psum(b, "i") for b in bs)
    return jax.shard_map(body, mesh=mesh, in_specs=(P("i"),) * 6, out_specs=(P(),) * 6)(*xs)


def rows_mean(x, mesh):
    return jnp.mean(x, axis=0)


def place(x, mesh):
    return jax.sharding.reshard(x, NamedSharding(mesh, P("i")))


def dense(x, w):
    return x @ w


def mean_on_its_mesh(x):
    replicated = NamedSharding(x.sharding.mesh, P())
    return jax.jit(lambda y: jnp.sum(y, axis=0) / y.shape[0], out_shardings=replicated)(x)
'''
SETUP = """
mesh = explicit_mesh((8,), ("i",))
grid = jax.make_mesh((2, 4), ("x", "y"))
x = put(f32(8 * 24, 40), mesh, P("i"))
xs = [put(f32(8 * k, 10), mesh, P("i")) for k in range(1, 7)]
rows = put(f32(8, 16), grid, P("y"))
xr = put(f32(12, 24), mesh, P())
w = put(f32(24, 64), mesh, P(None, "i"))
"""


def observed(tmp_path: Path, texts: list[str], section: types.ModuleType = distributed) -> list[dict]:
    """A section's report of each call (the distributed one by default), on the learner's module above."""
    path = tmp_path / "mine.py"
    path.write_text(LEARNER)
    module = types.ModuleType("mine")
    module.__file__ = str(path)
    exec(compile(LEARNER, str(path), "exec"), module.__dict__)  # noqa: S102 - a learner's file
    return section.observe(calls.make_calls(texts, SETUP, module), module, path)


def drawn(report: dict, monkeypatch: pytest.MonkeyPatch) -> str:
    """The section as `course inspect` prints it at 80 columns, each line's spaces squeezed."""
    buffer = io.StringIO()
    monkeypatch.setattr(ui, "out", Console(file=buffer, width=80, color_system=None))
    draw_section({"show": "distributed", "note": "", "calls": [report]})
    return buffer.getvalue()


@on_eight_devices
def test_a_psum_and_a_psum_scatter_of_one_array_cost_a_device_differently(tmp_path, monkeypatch) -> None:
    """Both reduce one (24, 40) float32 block (3,840 B) over 8 devices: the psum keeps it whole and sends
    2*7/8 of it, the scatter keeps an eighth and sends 7/8 of it, in the jaxpr and in the HLO alike."""
    (report,) = observed(tmp_path, ["reduce_both(x, mesh)"])
    assert "error" not in report, report
    psum, scatter = report["jaxpr"]
    assert (psum["lax"], psum["bytes"], psum["keeps"], psum["sends"]) == ("psum", 3840, 3840, 6720)
    assert (scatter["lax"], scatter["bytes"], scatter["keeps"], scatter["sends"]) == ("psum_scatter", 3840, 480, 3360)
    costs = {c["op"]: (c["bytes"], c["result_bytes"], c["sends"], c["axes"]) for c in report["hlo"]}
    assert costs == {"all-reduce": (3840, 3840, 6720, ["i"]), "reduce-scatter": (3840, 480, 3360, ["i"])}
    text = " ".join(drawn(report, monkeypatch).split())
    assert "psum over ('i',) of (24, 40): keeps 3,840 B, sends 6,720 B per device" in text
    assert "psum_scatter over ('i',) of (24, 40): keeps 480 B, sends 3,360 B per device" in text
    assert "reduce-scatter of f32[24,40] over ('i',): keeps 480 B, sends 3,360 B per device" in text
    assert "all-reduce 2(n-1)/n × its operand, reduce-scatter (n-1)/n × its operand" in text


@on_eight_devices
def test_every_element_of_a_combined_all_reduce_is_read(tmp_path) -> None:
    """XLA combines six psums into one all-reduce of a 6-tuple, and prints `/*index=5*/` before the sixth."""
    (report,) = observed(tmp_path, ["six_sums(xs, mesh)"])
    assert "error" not in report, report
    (combined,) = [c for c in report["hlo"] if c["op"] == "all-reduce"]
    assert combined["operands"] == [f"f32[{k},10]" for k in range(1, 7)]
    assert combined["bytes"] == combined["result_bytes"] == sum(40 * k for k in range(1, 7)) == 840
    assert "?" not in combined["result"] and combined["axes"] == ["i"]


@on_eight_devices
def test_groups_are_named_by_the_learners_mesh_axes(tmp_path) -> None:
    """A sum over rows sharded on y (the mesh's second axis) runs along y, in groups of 4; XLA's own mesh
    axes (`mesh['axis_0'=2,'axis_1'=4] {'axis_1'}`) never reach the learner."""
    (report,) = observed(tmp_path, ["rows_mean(rows, grid)"])
    (reduce,) = report["hlo"]
    assert reduce["axes"] == ["y"] and reduce["group_size"] == 4
    assert hlo.groups_of(reduce["groups"]) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert "axis_0" not in str(report)


@on_eight_devices
def test_a_function_that_reads_its_inputs_sharding_is_run_not_traced(tmp_path, monkeypatch) -> None:
    """`x.sharding.mesh` raises on a tracer; a correct file is then run for real, and its program read."""
    (report,) = observed(tmp_path, ["mean_on_its_mesh(rows)"])
    assert "error" not in report, report["error"]
    assert report["ran"].startswith("AttributeError: The 'sharding' attribute is not available on traced array")
    assert [(c["op"], c["axes"]) for c in report["hlo"]] == [("all-reduce", ["y"])]
    assert report["outputs"][0]["spec"] == "P()"
    text = drawn(report, monkeypatch)
    assert "your code raised" not in text and "so it ran for real" in " ".join(text.split())


@on_eight_devices
def test_an_explicit_mode_matmul_is_shown_at_one_devices_shapes(tmp_path) -> None:
    """`x @ w` with w split on its columns over 8 devices: each device multiplies (12, 24) by (24, 8)."""
    (report,) = observed(tmp_path, ["dense(xr, w)"], compiler)
    (matmul,) = report["matmuls"]
    assert (matmul["lhs"], matmul["rhs"], matmul["out"]) == ("float32[12, 24]", "float32[24, 8]", "float32[12, 8]")
    assert matmul["global"] == "float32[12, 24] @ float32[24, 64] -> float32[12, 64]"
    assert matmul["flops"] == report["matmul_flops"] == 2 * 12 * 8 * 24


@on_eight_devices
def test_a_reshard_of_an_input_on_one_device_is_run_not_reported_as_raising(tmp_path) -> None:
    """Under one jit, resharding an array that sits on one device onto 8 refuses; called for real it works."""
    (report,) = observed(tmp_path, ["place(f32(16, 4), mesh)"])
    assert "error" not in report, report["error"]
    assert report["ran"].startswith("ValueError") and report["outputs"][0]["spec"] == "P('i', None)"
    assert report["outputs"][0]["block"] == [2, 4]


def test_xla_spellings_of_replica_groups_give_the_same_groups() -> None:
    """Explicit lists, the iota form, and the mesh form with and without device_ids."""
    assert hlo.groups_of("{{0,4},{1,5}}") == [[0, 4], [1, 5]]
    assert hlo.groups_of("[2,4]<=[8]") == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert hlo.groups_of("[4,2]<=[2,4]T(1,0)") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert hlo.groups_of("mesh['axis_0'=2,'axis_1'=4] {'axis_0'}") == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert hlo.groups_of("mesh['axis_0'=4,'axis_1'=2], device_ids=([2,4]T(1,0)) {'axis_0'}") == [
        [0, 1, 2, 3], [4, 5, 6, 7]]
    assert hlo.axes_of([[0, 4], [1, 5], [2, 6], [3, 7]], [[0, 1, 2, 3], [4, 5, 6, 7]], ["x", "y"]) == ["x"]
    assert hlo.axes_of([[0, 1], [2, 3], [4, 5], [6, 7]], [[0, 1, 2, 3], [4, 5, 6, 7]], ["x", "y"]) is None
