"""The collectives of a compiled program's HLO text: what each moves per device, and between which devices.

`course.grading.observe.traces.collectives.hlo_collectives` counts them; a learner also wants to see how much
each one costs a device and between which devices it runs, named by the axes of their own mesh,
and which jaxpr primitive it came from (the `op_name` metadata).

Who talks to whom is XLA's `replica_groups` in any of its three spellings (`{{0,1},{2,3}}`, the
iota form `[2,2]<=[4]`, and the mesh form `mesh['axis_0'=2,'axis_1'=4] {'axis_0'}`, whose axes are
XLA's own), turned into lists of partition ids; `axes_of` then names the learner's mesh axes along
which each group runs. Bytes per device are counted as a ring moves them (`traffic`).

HLO prints a long operand list or tuple with `/*index=5*/` comments before every fifth element;
they are dropped before operands are read, so a sixth operand is found like the first.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

from course.grading.observe.traces.collectives import HLO_COLLECTIVES

__all__ = ["axes_of", "collectives", "groups_of", "traffic", "type_bytes"]

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<type>.*?)\s+"
                    r"(?P<op>[a-z][\w\-]*)\((?P<args>[^)]*)\)(?P<rest>.*)$")
_COMPUTATION = re.compile(r"^\s*(?:ENTRY\s+)?%?(?P<name>[\w.\-]+)\s+\(.*\{\s*$")
_BODY = re.compile(r"body=%?([\w.\-]+)")
_ARRAY = re.compile(r"(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")
_COMMENT = re.compile(r"/\*.*?\*/")
_IOTA = re.compile(r"^\[(?P<shape>[\d,]+)\]<=\[(?P<dims>[\d,]+)\](?:T\((?P<perm>[\d,]+)\))?")
_MESH = re.compile(r"^mesh\[(?P<axes>[^\]]*)\](?:,\s*device_ids=\((?P<ids>[^)]*\)?)\))?\s*\{(?P<over>[^}]*)\}")
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
          "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
RING = {"all-reduce": "2(n-1)/n × the operand", "reduce-scatter": "(n-1)/n × the operand",
        "all-gather": "(n-1)/n × the result", "all-to-all": "(n-1)/n × the operand",
        "collective-permute": "the operand, once"}
"""What a device sends for each collective among n devices, counted as a ring algorithm sends it."""


def type_bytes(text: str) -> int:
    """Bytes of an HLO type (`f32[16,32]{1,0}`, or a tuple of them)."""
    total = 0
    for m in _ARRAY.finditer(text):
        dims = [int(d) for d in m["dims"].split(",") if d]
        total += math.prod(dims) * _BYTES.get(m["dtype"], 4)
    return total


def collectives(hlo: str) -> list[dict[str, Any]]:
    """Every collective instruction of `hlo`, in text order, with what it moves and between which devices."""
    types: dict[str, str] = {}
    bodies = set(_BODY.findall(hlo))
    where = ""
    found = []
    for line in hlo.splitlines():
        header = _COMPUTATION.match(line)
        if header is not None:
            where = header["name"]
            continue
        m = _INSTR.match(_COMMENT.sub("", line))
        if m is None:
            continue
        types[m["name"]] = m["type"]
        op = m["op"].removesuffix("-start")
        if op not in HLO_COLLECTIVES:
            continue
        operands = [a.strip().lstrip("%") for a in m["args"].split(",") if a.strip()]
        operand_types = [_short(types.get(o, "?")) for o in operands]
        text = _attribute(m["rest"], "replica_groups") or _attribute(m["rest"], "source_target_pairs")
        groups = groups_of(text) if op != "collective-permute" else _pairs(text)
        size = len(groups[0]) if groups and op != "collective-permute" else 2
        result = _short(_COMMENT.sub("", m["type"]))
        found.append({
            "op": op,
            "result": result,
            "operands": operand_types,
            "bytes": sum(type_bytes(t) for t in operand_types),
            "result_bytes": type_bytes(result),
            "groups": _explicit(groups) if groups else text,
            "group_size": size,
            "from": _op_name(m["rest"]),
            "in_loop": where in bodies,
        })
        found[-1]["sends"] = traffic(op, found[-1]["bytes"], found[-1]["result_bytes"], size)
    return found


def traffic(op: str, operand: int, result: int, n: int) -> int:
    """Bytes one device sends for one run of `op` among `n` devices, as a ring sends them (see `RING`)."""
    if n <= 1:
        return 0
    if op == "all-reduce":
        return round(2 * (n - 1) * operand / n)
    if op == "all-gather":
        return round((n - 1) * result / n)
    if op in ("reduce-scatter", "all-to-all"):
        return round((n - 1) * operand / n)
    return operand


def groups_of(text: str) -> list[list[int]]:
    """The partition ids of each group of a `replica_groups` value, in any of XLA's spellings; [] if unread."""
    text = text.strip()
    if text.startswith("{"):
        return [[int(i) for i in g.split(",") if i.strip()] for g in re.findall(r"\{([\d,\s]*)\}", text)]
    iota = _IOTA.match(text)
    if iota is not None:
        ids = _iota(iota["dims"], iota["perm"])
        return ids.reshape([int(d) for d in iota["shape"].split(",")]).tolist()  # type: ignore[no-any-return]
    mesh = _MESH.match(text)
    if mesh is None:
        return []
    names = re.findall(r"'([^']+)'\s*=\s*(\d+)", mesh["axes"])
    sizes = [int(s) for _, s in names]
    ids = _mesh_ids(mesh["ids"], sizes)
    over = [i for i, (name, _) in enumerate(names) if f"'{name}'" in mesh["over"]]
    kept = [i for i in range(len(names)) if i not in over]
    grouped = np.transpose(ids, kept + over).reshape(-1, math.prod(sizes[i] for i in over))
    return grouped.tolist()  # type: ignore[no-any-return]


def axes_of(groups: list[list[int]], mesh_devices: Any, axis_names: list[str]) -> list[str] | None:
    """The learner's mesh axes each group runs along (partition p is the p-th device of the mesh), or None
    when the groups are no whole slices of the mesh along some axes."""
    grid = np.asarray(mesh_devices)
    if not groups or grid.size != sum(len(g) for g in groups):
        return None
    coords = {p: np.unravel_index(p, grid.shape) for p in range(grid.size)}
    varying: set[int] = set()
    for group in groups:
        if any(p not in coords for p in group):
            return None
        varying |= {a for a in range(grid.ndim) if len({coords[p][a] for p in group}) > 1}
    if any(len(g) != math.prod(grid.shape[a] for a in varying) for g in groups):
        return None
    return [axis_names[a] for a in sorted(varying)]


def _mesh_ids(text: str | None, sizes: list[int]) -> np.ndarray:
    """The partition ids laid out on XLA's mesh: in order, or as `device_ids=(...)` says (an iota tile or a list)."""
    n = math.prod(sizes)
    if not text:
        return np.arange(n).reshape(sizes)
    tile = re.match(r"^\[(?P<dims>[\d,]+)\](?:T\((?P<perm>[\d,]+)\))?$", text.strip())
    if tile is not None:
        return _iota(tile["dims"], tile["perm"]).reshape(sizes)
    return np.asarray([int(i) for i in re.findall(r"\d+", text)][:n]).reshape(sizes)


def _iota(dims: str, perm: str | None) -> np.ndarray:
    """XLA's iota tile: 0..n-1 shaped `dims`, transposed by `perm`, flattened."""
    shape = [int(d) for d in dims.split(",")]
    ids = np.arange(math.prod(shape)).reshape(shape)
    if perm:
        ids = np.transpose(ids, [int(p) for p in perm.split(",")])
    return ids.reshape(-1)


def _pairs(text: str) -> list[list[int]]:
    """A permute's (source, target) pairs."""
    return [[int(a), int(b)] for a, b in re.findall(r"\{(\d+),(\d+)\}", text)]


def _explicit(groups: list[list[int]]) -> str:
    """`{{0,4},{1,5}}`: groups as HLO writes them out in full."""
    return "{" + ",".join("{" + ",".join(str(p) for p in g) + "}" for g in groups) + "}"


def _short(text: str) -> str:
    """An HLO type without its layout: `f32[16,32]` for `f32[16,32]{1,0}`."""
    return re.sub(r"\{[\d,]*\}", "", text).strip()


def _attribute(rest: str, name: str) -> str:
    """The value of `name=` in an instruction's attributes, brackets balanced, or ''."""
    start = rest.find(name + "=")
    if start < 0:
        return ""
    i, depth = start + len(name) + 1, 0
    out = []
    while i < len(rest):
        ch = rest[i]
        if ch == "," and depth == 0 and not (rest[i + 1:].lstrip().startswith("device_ids=")):
            break
        depth += (ch in "{[(") - (ch in "}])")
        out.append(ch)
        i += 1
    return "".join(out)


def _op_name(rest: str) -> str:
    """The jaxpr primitive an instruction came from, the last part of its `op_name` metadata."""
    m = re.search(r'op_name="([^"]*)"', rest)
    return m.group(1).rsplit("/", 1)[-1] if m else ""
