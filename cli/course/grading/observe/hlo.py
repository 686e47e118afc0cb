"""The collectives of a compiled program's HLO text, each with its operands' shapes and bytes and who talks to whom.

`course.grading.collectives.hlo_collectives` counts them; a learner also wants to see how much
each one moves (per device) and between which devices (`replica_groups`, or a permute's
`source_target_pairs`), and which jaxpr primitive it came from (the `op_name` metadata).
"""

from __future__ import annotations

import math
import re
from typing import Any

from course.grading.collectives import HLO_COLLECTIVES

__all__ = ["collectives", "type_bytes"]

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<type>.*?)\s+"
                    r"(?P<op>[a-z][\w\-]*)\((?P<args>[^)]*)\)(?P<rest>.*)$")
_COMPUTATION = re.compile(r"^\s*(?:ENTRY\s+)?%?(?P<name>[\w.\-]+)\s+\(.*\{\s*$")
_BODY = re.compile(r"body=%?([\w.\-]+)")
_ARRAY = re.compile(r"(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4,
          "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}


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
        m = _INSTR.match(line)
        if m is None:
            continue
        types[m["name"]] = m["type"]
        op = m["op"].removesuffix("-start")
        if op not in HLO_COLLECTIVES:
            continue
        operands = [a.strip().lstrip("%") for a in m["args"].split(",") if a.strip()]
        operand_types = [_short(types.get(o, "?")) for o in operands]
        found.append({
            "op": op,
            "result": _short(m["type"]),
            "operands": operand_types,
            "bytes": sum(type_bytes(t) for t in operand_types),
            "groups": _attribute(m["rest"], "replica_groups") or _attribute(m["rest"], "source_target_pairs"),
            "from": _op_name(m["rest"]),
            "in_loop": where in bodies,
        })
    return found


def _short(text: str) -> str:
    """An HLO type without its layout: `f32[16,32]` for `f32[16,32]{1,0}`."""
    return re.sub(r"\{[\d,]*\}", "", text).strip()


def _attribute(rest: str, name: str) -> str:
    """The value of `name=` in an instruction's attributes, braces balanced, or ''."""
    start = rest.find(name + "=")
    if start < 0:
        return ""
    i, depth = start + len(name) + 1, 0
    out = []
    while i < len(rest):
        ch = rest[i]
        if ch == "," and depth == 0:
            break
        depth += (ch in "{[") - (ch in "}]")
        out.append(ch)
        i += 1
    return "".join(out)


def _op_name(rest: str) -> str:
    """The jaxpr primitive an instruction came from, the last part of its `op_name` metadata."""
    m = re.search(r'op_name="([^"]*)"', rest)
    return m.group(1).rsplit("/", 1)[-1] if m else ""
