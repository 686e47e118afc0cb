"""`course inspect` on every exercise of the course: the reference solution and one known-wrong variant each.

Each file is inspected as a learner's would be, in the isolated grading process (forked by one warm
worker, so the module pays for importing JAX once), and the test asserts what the inspection says:
the facts a learner should be able to read off it, and the mistake the variant makes.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from course import ui
from course.engine.parent.inspection import Inspection, inspect
from course.engine.parent.runner import start_worker
from course.inspection import sections_of
from course.registry import Course, load_course
from course.ui.inspection import inspection as drawn

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def section(found: Inspection, show: str) -> dict[str, Any]:
    """The first section of the inspection that shows `show`."""
    assert found.status == "inspected", found.message or found.output[-2000:]
    return next(s for s in found.sections if s["show"] == show)


def call(found: Inspection, show: str, index: int = 0) -> dict[str, Any]:
    """The report of one call of a section, which must have been observed without an error."""
    report = section(found, show)["calls"][index]
    assert "error" not in report, report["error"]
    return report


def kernel(found: Inspection, index: int = 0) -> dict[str, Any]:
    """The only kernel of the `index`-th call of the kernels section."""
    (only,) = call(found, "kernels", index)["kernels"]
    return only


def accesses(k: dict[str, Any], ref: str, kind: str) -> list[dict[str, Any]]:
    """The listing rows that `kind` (load, store, ...) the ref `ref`."""
    return [r for r in k["listing"]["rows"] if r.get("ref") == ref and r["kind"] == kind]


def own_compiles(found: Inspection) -> list[list[dict[str, Any]]]:
    """Per call of the compiles section, the compiles of the learner's own code."""
    return [[c for c in report["compiles"] if c["own"]] for report in section(found, "compiles")["calls"]]


def update_with_donate(found: Inspection, wrong: bool) -> None:
    """The solution donates `state` and aliases its 4096 bytes; a copy leaves `state` alive."""
    report = call(found, "donation")
    (jit,) = report["jits"]
    consumed = {arg["name"]: arg["consumed"] for arg in report["inputs"]}
    if wrong:  # copies_state: `jnp.array(state)` is donated instead of `state`
        assert jit["donated"] == [{"of": "state", "via": "copy", "line": 11}]
        assert consumed == {"state": [], "delta": []}
        return
    assert [d["of"] for d in jit["donated"]] == ["state"] and jit["alias_bytes"] == 4096
    assert consumed == {"state": ["state"], "delta": []}
    compiles = own_compiles(found)
    assert [len(c) for c in compiles] == [1, 0, 1]
    assert compiles[2][0]["diffs"][0] == {"what": "shape", "at": "state", "now": "f32[64]", "before": "f32[1024]"}


def ref_reads_writes(found: Inspection, wrong: bool) -> None:
    """square_plus loads `x_ref` once (three times in the variant); row_sum accumulates into a new ref."""
    k = kernel(found, 1)
    loads = accesses(k, "x_ref", "load")
    assert len(loads) == (3 if wrong else 1)
    if wrong:  # three_loads: `x_ref[...] * x_ref[...] + x_ref[...]`
        assert {r["line"] for r in loads} == {24} and "x_ref[...] * x_ref[...]" in k["source"]["24"]
    report = call(found, "refs")
    assert [r["name"] for r in report["refs"]] == ["acc"]
    assert {a["kind"] for a in report["accesses"]["acc"]} == {"load", "store", "freeze"}
    assert "reduce_sum" not in report["primitives"]


def aliasing_order(found: Inspection, wrong: bool) -> None:
    """swap_halves aliases x onto the output; the naive order reads a half it has just overwritten."""
    k = kernel(found, 0)
    assert k["aliases"] == [{"input": 0, "output": 0, "input_ref": "x_ref", "output_ref": "o_ref"}]
    if wrong:  # naive_swap_order
        (hazard,) = k["hazards"]
        assert hazard.startswith("line 14 reads `x_ref[:, :128]` after line 13 wrote `o_ref[:, :128]`")
    else:
        assert k["hazards"] == []
    donated = call(found, "donation")
    assert donated["inputs"] == [{"name": "x", "leaves": 1, "consumed": ["x"], "shapes": ["float32[8, 256]"]}]


def any_sync_copy(found: Inspection, wrong: bool) -> None:
    """x stays in ANY; the solution copies it into VMEM by a waited DMA, the variant indexes it directly."""
    k = kernel(found, 0)
    spaces = {r["name"]: r["space"] for r in k["refs"]}
    assert spaces["x_hbm_ref"] == "ANY"
    if wrong:  # index_any_ref
        assert k["dmas"] == [] and len(accesses(k, "x_hbm_ref", "load")) == 1
        assert "line 10 loads from `x_hbm_ref`" in k["hbm_accesses"][0]
        return
    assert spaces["x_vmem"] == "VMEM" and k["hbm_accesses"] == []
    (dma,) = k["dmas"]
    assert (dma["from"], dma["to"], dma["waited"], dma["line"]) == ("x_hbm_ref", "x_vmem", True, 12)
    assert [r["kind"] for r in k["listing"]["rows"] if r["n"]] == ["DMA start", "DMA wait", "load", "store"]


def smem_scalar(found: Inspection, wrong: bool) -> None:
    """Lengths are read from SMEM one scalar at a time; without a jit every call compiles the kernel."""
    k = kernel(found, 0)
    assert {r["name"]: r["space"] for r in k["refs"]}["lengths_ref"] == "SMEM" and k["steps"] == 4
    assert [r["shape"] for r in accesses(k, "lengths_ref", "load")] == [[]]
    compiles = own_compiles(found)
    if wrong:  # no_jit: an un-jitted pallas_call compiles on every call
        assert [[c["why"] for c in calls] for calls in compiles] == [["unjitted kernel"]] * 3
    else:
        assert [len(c) for c in compiles] == [1, 0, 0]


def alias_zero_init(found: Inspection, wrong: bool) -> None:
    """Two listed blocks: two grid steps and the zeros aliased onto the output; the variant runs the full grid."""
    k = kernel(found, 0)
    if wrong:  # full_grid_when
        assert (k["grid"], k["steps"], k["aliases"]) == ([4, 2], 8, [])
        return
    assert (k["grid"], k["steps"]) == ([2], 2)
    assert k["aliases"] == [{"input": 2, "output": 0, "input_ref": "zeros_ref", "output_ref": "o_ref"}]


def compile_budget(found: Inspection, wrong: bool) -> None:
    """Buckets compile once per power of two; a static temperature compiles again for every value."""
    compiles = own_compiles(found)
    if not wrong:
        assert [len(c) for c in compiles] == [1, 0, 1, 0, 0, 0]
        assert compiles[2][0]["diffs"] == [{"what": "shape", "at": "x", "now": "f32[32,64]", "before": "f32[16,64]"}]
        return
    # static_temperature: the second temperature compiles again, and says why
    assert [len(c) for c in compiles] == [1, 0, 1, 1, 1, 1]
    assert compiles[3][0]["diffs"] == [{"what": "static value", "at": "temperature", "now": "2.0", "before": "1.0"}]


def named_ref(found: Inspection, wrong: bool) -> None:
    """A read is one load of just the selection (the variant loads the whole buffer); a write one store."""
    read, write, freeze = (call(found, "refs", i)["accesses"]["r" if i < 2 else "ref"] for i in range(3))
    assert [(a["kind"], a["shape"]) for a in read] == [("load", [4, 3, 5] if wrong else [3, 3])]
    assert [(a["kind"], a["shape"]) for a in write] == [("store", [4, 5])]
    assert [a["kind"] for a in freeze] == ["freeze"]


def slice_ref(found: Inspection, wrong: bool) -> None:
    """A read through two views is one load of the view (the variant loads the parent view and slices it)."""
    read = call(found, "refs", 0)
    assert [(a["kind"], a["shape"]) for a in read["accesses"]["r"]] == [("load", [3, 5] if wrong else [3, 3])]
    assert ("slice" in read["primitives"]) == wrong
    assert [a["kind"] for a in call(found, "refs", 1)["accesses"]["r"]] == ["store"]


def shard_and_reduce(found: Inspection, wrong: bool) -> None:
    """One all-reduce of a scalar over both axes; the variant's psum covers only x, so devices pair up."""
    placed, mean = call(found, "distributed", 0), call(found, "distributed", 1)
    assert placed["outputs"][0]["spec"] == "P('x', 'y')" and placed["outputs"][0]["block"] == [4, 4]
    assert "CPU 7" in placed["outputs"][0]["picture"]
    assert mean["mesh"]["axes"] == {"x": 2, "y": 4} and mean["inputs"][0]["spec"] == "P('x', 'y')"
    (psum,) = mean["jaxpr"]
    (reduce,) = mean["hlo"]
    assert psum["lax"] == "psum" and reduce["op"] == "all-reduce" and reduce["result"] == "f32[]"
    if wrong:  # psum_one_axis
        assert psum["axes"] == ["x"] and reduce["groups"] == "{{0,4},{1,5},{2,6},{3,7}}"
        assert reduce["axes"] == ["x"] and reduce["group_size"] == 2
    else:
        assert psum["axes"] == ["x", "y"] and reduce["groups"] == "{{0,1,2,3,4,5,6,7}}"
        assert reduce["axes"] == ["x", "y"] and (reduce["result_bytes"], reduce["sends"]) == (4, 7)


def ring_allreduce(found: Inspection, wrong: bool) -> None:
    """14 one-step permutes of n/8 floats; the variant's psum is one all-reduce."""
    report = call(found, "distributed")
    ops = {c["op"] for c in report["hlo"]}
    if wrong:  # psum
        assert [c["lax"] for c in report["jaxpr"]] == ["psum"] and ops == {"all-reduce"}
        return
    assert ops == {"collective-permute"}
    steps = report["jaxpr"]
    assert sum(c["times"] for c in steps) == 14 and {c["elements"] for c in steps} == {8}
    assert all(sorted(map(tuple, c["perm"])) == [(i, (i + 1) % 8) for i in range(8)] for c in steps)


def sharded_donated_step(found: Inspection, wrong: bool) -> None:
    """Params donated leaf by leaf with their shards aliased; a replicated output breaks both."""
    report = call(found, "donation")
    (jit,) = report["jits"]
    consumed = {arg["name"]: arg["consumed"] for arg in report["inputs"]}
    layouts = call(found, "distributed")
    out_specs = {o["name"]: o["spec"] for o in layouts["outputs"]}
    if wrong:  # replicated_output: outputs forced to P(), so only the scalar can take its param's buffer
        assert jit["alias_bytes"] == 4 and jit["not_usable"]
        assert consumed["params"] == ["params['scale']"]
        assert out_specs["result['w1']"] == "P(None, None)"
        return
    assert jit["alias_bytes"] == 548 and not jit["not_usable"]
    assert len(consumed["params"]) == 4 and consumed["grads"] == []
    assert out_specs == {f"result['{k}']": s for k, s in
                         (("b1", "P('y')"), ("scale", "P()"), ("w1", "P('x', 'y')"), ("w2", "P('y', None)"))}
    assert [len(c) for c in own_compiles(found)] == [1, 0, 0]


def scan_layers(found: Inspection, wrong: bool) -> None:
    """A scan's program is the same at L=2 and 8, its matmul runs L times; a Python loop writes every layer out."""
    shallow, deep, grad = (call(found, "compiler", i) for i in range(3))
    if wrong:  # python_loop: no loop, one matmul per layer, a program that grows
        assert shallow["loops"] == deep["loops"] == []
        assert deep["hlo_instructions"] > 3 * shallow["hlo_instructions"]
        assert [(m["count"], m["times"]) for m in deep["matmuls"]] == [(8, 1)]
        return
    assert (shallow["hlo_instructions"], shallow["jaxpr_equations"]) == (deep["hlo_instructions"],
                                                                         deep["jaxpr_equations"])
    assert [(lp["kind"], lp["length"]) for lp in deep["loops"]] == [("scan", 8)]
    assert [(m["count"], m["times"], m["line"]) for m in deep["matmuls"]] == [(1, 8, 15)]
    assert deep["matmul_flops"] == 8 * 2 * 16 * 64 * 64 and deep["residuals"] == []
    assert {r["length"] for r in grad["residuals"]} == {8} and grad["residual_bytes"] > 0
    assert [len(c) for c in own_compiles(found)] == [1, 0, 1]


def remat_policy(found: Inspection, wrong: bool) -> None:
    """dots_saveable keeps a matmul output and the input per layer; without a checkpoint six gelu arrays more."""
    dots, least = call(found, "compiler", 0), call(found, "compiler", 1)
    saved = {(r["type"], r["origin"]): r["count"] for r in dots["residuals"]}
    if wrong:  # plain: no checkpoint
        assert dots["memory"]["temp"] > 50 * 2**20
        assert sum(n for (t, _), n in saved.items() if t == "float32[512, 256]") == 6
        return
    assert dots["memory"]["temp"] < 20 * 2**20 and least["memory"]["temp"] < 8 * 2**20
    assert saved == {("float32[512, 256]", "output of dot_general"): 1,
                     ("float32[512, 64]", "a loop input: the carry, each step's input"): 1}
    assert [r["type"] for r in least["residuals"]] == ["float32[512, 64]"]
    assert (dots["matmul_flops"], least["matmul_flops"]) == (1_610_612_736, 1_879_048_192)


def grad_accumulation(found: Inspection, wrong: bool) -> None:
    """A running sum keeps the temp memory of one microbatch at both sizes; a stack of gradients grows."""
    small, large = call(found, "compiler", 0), call(found, "compiler", 1)
    if wrong:  # lax_map_stack
        assert large["memory"]["temp"] > 1.2 * small["memory"]["temp"]
        return
    assert small["memory"]["temp"] == large["memory"]["temp"]
    assert [(lp["kind"], lp["length"], set(lp["carry"]) <= {"float32[]", "float32[256]", "float32[64, 256]"})
            for lp in large["loops"]] == [("scan", 16, True)]
    assert {m["times"] for m in small["matmuls"]} == {4} and {m["times"] for m in large["matmuls"]} == {16}
    assert [len(c) for c in own_compiles(found)] == [1, 0, 1]


def mixed_precision(found: Inspection, wrong: bool) -> None:
    """dense multiplies bf16 by bf16 into f32; the step's backward matmuls are f32 x bf16, none f32 x f32."""
    dense, step = call(found, "compiler", 0), call(found, "compiler", 1)
    operands = [(m["lhs"].split("[")[0], m["rhs"].split("[")[0]) for m in step["matmuls"]]
    if wrong:  # emulated_f32_dot: rounded through bf16, multiplied as f32 copies
        assert [(m["lhs"], m["rhs"], m["out"]) for m in dense["matmuls"]] == [
            ("float32[256, 64]", "float32[64, 128]", "float32[256, 128]")]
        assert ("float32", "float32") in operands
        return
    assert [(m["lhs"], m["rhs"], m["out"], m["preferred"]) for m in dense["matmuls"]] == [
        ("bfloat16[256, 64]", "bfloat16[64, 128]", "float32[256, 128]", "float32")]
    assert sum(m["count"] for m in step["matmuls"]) == 5 and ("float32", "float32") not in operands
    assert {m["out"].split("[")[0] for m in step["matmuls"]} == {"float32"}


def no_host_sync(found: Inspection, wrong: bool) -> None:
    """A step jitted at module scope compiles on the first call only; one built inside train, on every call."""
    own = own_compiles(found)
    if wrong:  # jit_inside
        assert [len(c) for c in own] == [1, 1, 1] and own[1][0]["why"] == "rebuilt"
        return
    assert [[c["function"] for c in calls] for calls in own] == [["jit(_step)"], [], []]
def fsdp_step(found: Inspection, wrong: bool) -> None:
    """Each leaf keeps 1/8 per device; whole weights gathered, gradients reduce-scattered; the variant gathers x, y."""
    placed, step = [r["calls"][0] for r in found.sections if r["show"] == "distributed"]
    assert {o["name"]: (o["spec"], o["block"]) for o in placed["outputs"]} == {
        "result['w1']": ("P('fsdp', None)", [3, 40]), "result['b1']": ("P('fsdp')", [5]),
        "result['w2']": ("P('fsdp', None)", [5, 16]), "result['b2']": ("P('fsdp')", [2])}
    gathered = {h["result"] for h in step["hlo"] if h["op"] == "all-gather"}
    if wrong:  # gathers_batch
        assert {"f32[48,24]", "f32[48,16]"} <= gathered
        return
    assert gathered == {"f32[24,40]", "f32[40]", "f32[40,16]", "f32[16]"}
    scattered = {h["result"]: (h["bytes"], h["result_bytes"], h["sends"], h["axes"])
                 for h in step["hlo"] if h["op"] == "reduce-scatter"}
    # each device adds its whole gradient (8 blocks), keeps one block, and sends 7 of the 8 in a ring
    assert scattered == {f"f32[{dims}]": (8 * 4 * n, 4 * n, 7 * 4 * n, ["fsdp"]) for dims, n in
                         (("3,40", 120), ("5", 5), ("5,16", 80), ("2", 2))}
    scatters = [c for c in step["jaxpr"] if c["lax"] == "psum_scatter"]
    assert {(c["bytes"], c["keeps"], c["sends"]) for c in scatters} == {(4 * n, n // 2, 7 * n // 2) for n in
                                                                         (960, 40, 640, 16)}
    assert [o["spec"] for o in step["outputs"]][0] == "P()"


def tensor_parallel_mlp(found: Inspection, wrong: bool) -> None:
    """One all-reduce of the (B, D) result and per-device matmuls of F/8; w1 by rows adds an all-reduce and more."""
    report, compiler = call(found, "distributed"), call(found, "compiler")
    reduced = [h["result"] for h in report["hlo"] if h["op"] == "all-reduce"]
    if wrong:  # w1_rows
        assert sorted(reduced) == ["f32[12,24]", "f32[12,64]"]
        assert "all-to-all" in {h["op"] for h in report["hlo"]}
        return
    assert [h["op"] for h in report["hlo"]] == ["all-reduce"] and reduced == ["f32[12,24]"]
    assert [(m["rhs"], m["out"]) for m in compiler["matmuls"]] == [("float32[24, 8]", "float32[12, 8]"),
                                                                   ("float32[8, 24]", "float32[12, 24]")]


def collective_matmul(found: Inspection, wrong: bool) -> None:
    """7 one-step permutes of a (4, 16) chunk and 8 chunk matmuls; the variant gathers the same way, then one matmul."""
    report, compiler = call(found, "distributed"), call(found, "compiler")
    steps = report["jaxpr"]
    assert {h["op"] for h in report["hlo"]} == {"collective-permute"}
    assert sum(c["times"] for c in steps) == 7 and {c["elements"] for c in steps} == {64}
    assert all(sorted(map(tuple, c["perm"])) == [(i, (i + 1) % 8) for i in range(8)] for c in steps)
    assert [o["spec"] for o in report["outputs"]] == ["P(None, 'i')"]
    shapes = [(m["lhs"], m["out"], m["count"]) for m in compiler["matmuls"]]
    if wrong:  # permutes_then_one_matmul: the whole (32, 16) x in one matmul once it has arrived
        assert shapes == [("float32[32, 16]", "float32[32, 3]", 1)]
        return
    assert shapes == [("float32[4, 16]", "float32[4, 3]", 8)]


def pipeline_stages(found: Inspection, wrong: bool) -> None:
    """(B, D) permutes from stage s to s + 1, nine matmuls and one psum; the variant all-gathers the weights first."""
    report, compiler = call(found, "distributed"), call(found, "compiler")
    assert report["inputs"][1]["block"] == [1, 16, 16] and report["outputs"][0]["copies"] == 4
    permutes = [c for c in report["jaxpr"] if c["lax"] == "ppermute"]
    # The variant permutes at every step (9); the solution skips the last, whose output goes nowhere (8).
    assert sum(c["times"] for c in permutes) == (9 if wrong else 8) and {c["elements"] for c in permutes} == {80}
    assert all(sorted(map(tuple, c["perm"])) == [(0, 1), (1, 2), (2, 3)] for c in permutes)
    (matmul,) = compiler["matmuls"]
    assert (matmul["lhs"], matmul["rhs"], matmul["count"]) == ("float32[5, 16]", "float32[16, 16]", 9)
    others = [(h["op"], h["result"]) for h in report["hlo"] if h["op"] != "collective-permute"]
    reduce = next(h for h in report["hlo"] if h["op"] == "all-reduce")  # (6, 5, 16) float32 among 4 stages
    assert (reduce["bytes"], reduce["result_bytes"], reduce["sends"], reduce["axes"]) == (1920, 1920, 2880, ["stage"])
    if wrong:  # replicated_weights_indexed: the right schedule, after every device received every layer
        assert others == [("all-gather", "f32[4,16,16]"), ("all-reduce", "f32[6,5,16]")]
        return
    assert others == [("all-reduce", "f32[6,5,16]")]


def multi_process(found: Inspection, wrong: bool) -> None:
    """In one process: x is split over both devices and the mean is one all-reduce; the variant's x sits on one."""
    report = call(found, "distributed")
    (x,) = report["inputs"]
    if wrong:  # asarray_local: `jnp.asarray(local_rows)` puts the rows on one device, so nothing is exchanged
        assert (x["devices"], x["block"]) == (1, [8, 4]) and report["hlo"] == []
        return
    assert (x["spec"], x["block"], x["devices"]) == ("P('data')", [4, 4], 2)
    assert report["outputs"][0]["copies"] == 2
    assert [(h["op"], h["result"], h["axes"]) for h in report["hlo"]] == [("all-reduce", "f32[4]", ["data"])]
    assert (found.processes, found.devices) == (2, 2)  # said on the screen: graded in two processes


def tiled_matmul(found: Inspection, wrong: bool) -> None:
    """K walks the last grid axis into a float32 scratch, even for bfloat16; the variant's scratch is bfloat16."""
    f32, bf16 = kernel(found, 0), kernel(found, 1)
    refs = {r["name"]: r for r in bf16["refs"]}
    dots = [r["text"] for r in bf16["listing"]["rows"] if "dot_general" in r["text"]]
    assert len(dots) == 1 and "preferred_element_type=float32" in dots[0]
    if wrong:  # bf16_scratch: fixed 128 x 128 x 128 tiles, the accumulator in x's dtype
        assert (f32["grid"], f32["steps"]) == ([3, 2, 4], 24)
        assert (refs["acc_ref"]["role"], refs["acc_ref"]["type"]) == ("scratch", "bfloat16[128, 128]")
        return
    # float32 blocks (1024, 1024, 128) halved until they divide: 384 -> 128, 256, 128 (K walked in 4 steps).
    assert (f32["grid"], f32["steps"]) == ([3, 1, 4], 12)
    assert [(r["name"], r["block"], r["array"]) for r in f32["refs"] if "block" in r] == [
        ("x_ref", [128, 128], [384, 512]), ("y_ref", [128, 256], [512, 256]), ("o_ref", [128, 256], [384, 256])]
    # bfloat16 blocks (1024, 1024, 512): 256, 256 and 512, two K steps into a float32 scratch.
    assert (bf16["grid"], refs["x_ref"]["block"]) == ([1, 1, 2], [256, 512])
    assert (refs["acc_ref"]["role"], refs["acc_ref"]["space"], refs["acc_ref"]["type"]) == (
        "scratch", "VMEM", "float32[256, 256]")
    assert [r["line"] for r in accesses(bf16, "acc_ref", "store")] == [31, 33]
    assert [(r["line"], r["depth"]) for r in accesses(bf16, "o_ref", "store")] == [(37, 2)]


def flash_attention(found: Inspection, wrong: bool) -> None:
    """(128, D) blocks of q, k, v, float32 softmax state in VMEM and no S x T array; the variant builds it outside."""
    k = kernel(found, 0)
    outside = [r["text"] for r in call(found, "kernels", 0)["program"]["rows"] if r.get("kind") != "kernel"]
    everything = outside + [r["text"] for r in k["listing"]["rows"]]
    if wrong:  # scores_in_wrapper: the softmax of the whole (256, 2048) score matrix, then a p @ v kernel
        assert any("f32[256,2048] = dot_general" in t for t in outside)
        assert {r["name"]: r["array"] for r in k["refs"] if "block" in r}["p_ref"] == [256, 2048]
        return
    # Blocks (512, 1024) halved until they divide: 256 queries, 1024 keys, two KV steps.
    assert (k["grid"], k["steps"]) == ([1, 2], 2)
    assert {r["name"]: (r["block"], r["array"]) for r in k["refs"] if "block" in r} == {
        "q_ref": ([256, 64], [256, 64]), "k_ref": ([1024, 64], [2048, 64]), "v_ref": ([1024, 64], [2048, 64]),
        "o_ref": ([256, 64], [256, 64])}
    assert {r["name"]: r["type"] for r in kernel(found, 1)["refs"] if r["role"] == "scratch"} == {
        "m_sc": "float32[128, 1]", "l_sc": "float32[128, 1]", "acc_sc": "float32[128, 128]"}
    assert not any("256,2048]" in t or "[2048,256]" in t for t in everything)
    assert [r["shape"] for r in accesses(k, "o_ref", "store")] == [[256, 64]]


def double_buffer(found: Inspection, wrong: bool) -> None:
    """Block 0 primed, then block i + 1 in flight into the other slot on its own semaphore while block i is used,
    and each result sent back from its own output slot on that slot's semaphore; the variant starts each block and
    waits for it at once, into a VMEM output block."""
    k = kernel(found, 0)
    numbered = [r for r in k["listing"]["rows"] if r["n"]]
    dmas = [(d["line"], d["sem"], d["waited"], d["wait_line"]) for d in k["dmas"]]
    if wrong:  # wait_after_start: nothing is in flight while a block is computed
        assert {r["name"]: (r["space"], r["type"]) for r in k["refs"]} == {
            "x_hbm_ref": ("ANY", "float32[40, 128]"), "o_ref": ("VMEM block", "float32[40, 128]"),
            "bufs": ("VMEM", "float32[2, 8, 128]"), "sems": ("semaphore memory", "semaphore[2]")}
        assert dmas == [(22, "sems", True, 23)]
        assert [r["kind"] for r in numbered] == ["DMA start", "DMA wait", "load", "store"]
        return
    # The output streams too: an ANY output, and the slots and semaphores passed as pairs (x's, the output's).
    assert {r["name"]: (r["space"], r["type"]) for r in k["refs"]} == {
        "x_hbm_ref": ("ANY", "float32[40, 128]"), "o_ref": ("ANY", "float32[40, 128]"),
        "bufs[0]": ("VMEM", "float32[2, 8, 128]"), "bufs[1]": ("VMEM", "float32[2, 8, 128]"),
        "sems[0]": ("semaphore memory", "semaphore[2]"), "sems[1]": ("semaphore memory", "semaphore[2]")}
    assert dmas == [(28, "sems[0]", True, 37), (35, "sems[0]", True, 37), (44, "sems[1]", True, 41)]
    assert [(r["kind"], r["depth"]) for r in numbered] == [
        ("DMA start", 0), ("DMA start", 3), ("DMA wait", 1), ("DMA wait", 3), ("load", 1), ("store", 1),
        ("DMA start", 1), ("DMA wait", 0), ("DMA wait", 0)]
    primed, prefetch = (r["text"].split("-> ")[1] for r in numbered[:2])
    assert primed == "bufs[0][0,:,:] sems[0][0]"
    slot, sem = prefetch.split(" ")  # each slot has its own semaphore: one index for both
    assert slot.removeprefix("bufs[0][").removesuffix(",:,:]") == sem.removeprefix("sems[0][").removesuffix("]")


CASES: dict[str, tuple[str, Callable[[Inspection, bool], None]]] = {
    "update_with_donate": ("copies_state", update_with_donate),
    "ref_reads_writes": ("three_loads", ref_reads_writes),
    "aliasing_order": ("naive_swap_order", aliasing_order),
    "any_sync_copy": ("index_any_ref", any_sync_copy),
    "smem_scalar": ("no_jit", smem_scalar),
    "alias_zero_init": ("full_grid_when", alias_zero_init),
    "compile_budget": ("static_temperature", compile_budget),
    "named_ref": ("read_whole_then_slice", named_ref),
    "slice_ref": ("reads_parent_then_slices", slice_ref),
    "shard_and_reduce": ("psum_one_axis", shard_and_reduce),
    "ring_allreduce": ("psum", ring_allreduce),
    "sharded_donated_step": ("replicated_output", sharded_donated_step),
    "scan_layers": ("python_loop", scan_layers),
    "remat_policy": ("plain", remat_policy),
    "mixed_precision": ("emulated_f32_dot", mixed_precision),
    "no_host_sync": ("jit_inside", no_host_sync),
    "grad_accumulation": ("lax_map_stack", grad_accumulation),
    "fsdp_step": ("gathers_batch", fsdp_step),
    "tensor_parallel_mlp": ("w1_rows", tensor_parallel_mlp),
    "collective_matmul": ("permutes_then_one_matmul", collective_matmul),
    "pipeline_stages": ("replicated_weights_indexed", pipeline_stages),
    "multi_process": ("asarray_local", multi_process),
    "tiled_matmul": ("bf16_scratch", tiled_matmul),
    "flash_attention": ("scores_in_wrapper", flash_attention),
    "double_buffer": ("wait_after_start", double_buffer),
}
FILES = [(name, variant) for name in CASES for variant in (None, CASES[name][0])]


@pytest.fixture(scope="module")
def course() -> Course:
    """The real course."""
    return load_course(REPO)


class Inspected:
    """Each file of FILES inspected once, on first asking, through one warm worker: the tests that read an
    inspection run in the order of FILES, so each reports as its file is done rather than after all 50."""

    def __init__(self, course: Course, cache: Path) -> None:
        self.course, self.cache = course, cache
        self.done: dict[tuple[str, str | None], Inspection] = {}
        self.worker = start_worker(cache)

    def __getitem__(self, case: tuple[str, str | None]) -> Inspection:
        """The inspection of the solution (variant None) or of one wrong variant of an exercise."""
        if case not in self.done:
            exercise = self.course.get(case[0])
            path = exercise.solution_path if case[1] is None else exercise.wrong_dir / f"{case[1]}.py"
            self.done[case] = inspect(exercise, path, sections_of(exercise), cache_dir=self.cache, worker=self.worker)
        return self.done[case]


@pytest.fixture(scope="module")
def inspected(course: Course, shared_xla_cache: Path) -> Iterator[Inspected]:
    """The inspections of FILES, each made when a test first reads it."""
    found = Inspected(course, shared_xla_cache)
    try:
        yield found
    finally:
        if found.worker is not None:
            found.worker.close()


def test_every_exercise_chooses_sections(course: Course) -> None:
    """Each exercise of the course lists what `course inspect` shows, and every case here covers one."""
    assert {e.name for e in course.exercises} == set(CASES)
    assert all(sections_of(e) for e in course.exercises)


@pytest.mark.parametrize(("name", "variant"), FILES, ids=[f"{n}-{v or 'solution'}" for n, v in FILES])
def test_inspection_reports_what_the_code_does(inspected: Inspected, name: str,
                                               variant: str | None) -> None:
    """The inspection of each file says what that file's code does, and it ran without a learner error."""
    found = inspected[(name, variant)]
    CASES[name][1](found, variant is not None)
    assert found.exit_code == 0, found.errors()


def screen(found: Inspection, width: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lines `course inspect` prints for `found` on a terminal `width` columns wide, without colour."""
    buffer = io.StringIO()
    monkeypatch.setattr(ui, "out", Console(file=buffer, width=width, color_system=None))
    drawn(found, f"exercises/{found.name}/{found.name}.py")
    return buffer.getvalue().splitlines()


def verbatim(found: Inspection) -> list[str]:
    """Every text the screen shows as it is (example calls, jaxpr equations, the learner's lines, ref names)."""
    texts = []
    for section in found.sections:
        for report in section["calls"]:  # the kernels section shows each kernel's lines, not the program's
            shown = report.get("source", {}) if section["show"] != "kernels" else {}
            texts += [report.get("call", ""), *shown.values()]
            texts += [r["text"] for r in report.get("listing", {}).get("rows", [])]
            for k in report.get("kernels", []):
                texts += [*k["source"].values(), *(r["text"] for r in k["listing"]["rows"])]
                texts += [f"{r['name']} {r['type']}" for r in k["refs"]]
    return texts


@pytest.mark.parametrize("width", [80, 60])
@pytest.mark.parametrize(("name", "variant"), FILES, ids=[f"{n}-{v or 'solution'}" for n, v in FILES])
def test_every_screen_fits_the_terminal(inspected: Inspected, name: str, variant: str | None,
                                        width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 and at 60 columns no line is longer than the terminal (so none is cut or folded by it), and
    every word of every equation, call and line of code shown is whole: folds fall between words."""
    found = inspected[(name, variant)]
    lines = screen(found, width, monkeypatch)
    assert [line for line in lines if len(line) > width] == []
    shown = set(re.findall(r"\w+", "\n".join(lines)))
    broken = {w for text in verbatim(found) for w in re.findall(r"\w+", text)} - shown
    assert broken == set(), f"words not shown whole: {sorted(broken)[:10]}"
    if found.processes > 1:
        assert any(line.lstrip().startswith(f"Graded in {found.processes} processes") for line in lines)
