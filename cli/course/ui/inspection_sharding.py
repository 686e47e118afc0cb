"""`course inspect`'s drawing of a distributed call: the mesh, each layout with JAX's picture, the collectives."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from course import ui
from course.ui.inspection_kernels import source


def distributed(call: dict[str, Any]) -> None:
    """Mesh, inputs and outputs with their layouts, then the collectives of the jaxpr and of the HLO."""
    mesh = call.get("mesh")
    if mesh:
        axes = " × ".join(f"{k}={v}" for k, v in mesh["axes"].items())
        ui.block(f"mesh {axes} ({', '.join(mesh['types'])}), devices {mesh['devices']}", indent=4, style="bold")
    else:
        ui.block("no mesh: every input sits on one device", indent=4, style="yellow")
    for word, layouts in (("in", call.get("inputs", [])), ("out", call.get("outputs", []))):
        for layout in layouts:
            _layout(word, layout)
    if call.get("more_inputs"):
        ui.block(f"... and {call['more_inputs']} more input leaves", indent=4, style="dim")
    jaxpr = call.get("jaxpr", [])
    if call.get("ran"):
        ui.block(f"not traced: as one jitted program your function fails ({call['ran']}), but a real call "
                 "runs; so it ran for real, and below are the collectives of the programs it compiled.", indent=4,
                 style="yellow")
    else:
        ui.block("collectives in the jaxpr (who wrote them):" if jaxpr else "no collective in the jaxpr",
                 indent=4, style="bold")
    for c, lines in _grouped(jaxpr, ("line",)):
        ui.block(_jaxpr_collective(c, lines), indent=6)
    if len(jaxpr) > 1:
        ui.block(_jaxpr_total(jaxpr), indent=6, style="dim")
    hlo = call.get("hlo", [])
    ui.block("collectives in the compiled HLO (what the devices exchange):" if hlo else
             "no collective in the compiled HLO: the devices exchange nothing", indent=4, style="bold")
    for c, same in _grouped(hlo, ()):
        ui.block(_hlo_collective(c, len(same)), indent=6)
    if any(c.get("sends") for c in [*jaxpr, *hlo]):
        ui.block("keeps: the result each device holds; sends: what one device sends, counted as a ring of n "
                 "devices sends it: all-reduce 2(n-1)/n × its operand, reduce-scatter (n-1)/n × its operand, "
                 "all-gather (n-1)/n × its result, a permute its operand.", indent=4, style="dim")
    source(call.get("source", {}), indent=4)


def _layout(word: str, layout: dict[str, Any]) -> None:
    """One array's layout in words, then JAX's picture of it."""
    text = f"{word:<4}{layout['name']}: {layout['type']} {layout['spec']}"
    if "block" in layout:
        size = f"{layout['bytes_per_device']} bytes"
        if layout["devices"] == 1:
            text += f" ({size})"
        elif layout["block"] == _dims(layout["type"]):
            text += f"; replicated: each of {layout['devices']} devices holds the whole array ({size})"
        else:
            copies = f", each block on {layout['copies']} devices" if layout.get("copies", 1) > 1 else ""
            text += f"; each of {layout['devices']} devices holds a {tuple(layout['block'])} block ({size}){copies}"
    ui.block(text, indent=4)
    picture = (layout.get("picture") or "").splitlines()
    wide = max((len(line) for line in picture), default=0)
    indent = next((i for i in (8, 4) if i + wide <= ui.out.width), None)
    if picture and indent is None:
        ui.block("(JAX's picture of this layout is wider than the terminal)", indent=8, style="dim")
    for line in picture if indent is not None else []:
        ui.out.print(Text(" " * indent + line), soft_wrap=True)


def _dims(type_text: str) -> list[int]:
    """[8, 16] from `float32[8, 16]`."""
    inside = type_text.split("[", 1)[-1].rstrip("]")
    return [int(d) for d in inside.split(",") if d.strip()]


def _grouped(items: list[dict[str, Any]], apart: tuple[str, ...]) -> list[tuple[dict[str, Any], list[Any]]]:
    """Consecutive equal items (ignoring the keys in `apart`) as (first, [each one's `apart` values])."""
    groups: list[tuple[dict[str, Any], list[Any]]] = []
    for item in items:
        key = {k: v for k, v in item.items() if k not in apart}
        if groups and {k: v for k, v in groups[-1][0].items() if k not in apart} == key:
            groups[-1][1].append(tuple(item.get(k) for k in apart))
        else:
            groups.append((item, [tuple(item.get(k) for k in apart)]))
    return groups


def _jaxpr_collective(c: dict[str, Any], lines: list[tuple[Any, ...]]) -> str:
    """`psum over ('x', 'y') of a scalar: keeps 4 B, sends 7 B per device; 1 time, line 27`, or `7 × ppermute ...`."""
    shapes = ", ".join(str(tuple(s)) if s else "a scalar" for s in c["shapes"])
    times = (f"{c['times']} time{'s' if c['times'] != 1 else ''}" if c.get("times") is not None
             else f"an unknown number of times (inside a {c['enclosing']})")
    known = [str(n) for (n,) in lines if n]
    where = f", line{'s' if len(set(known)) > 1 else ''} {', '.join(dict.fromkeys(known))}" if known else ""
    perm = f", pairs {[tuple(p) for p in c['perm'][:8]]}" if c.get("perm") else ""
    count = f"{len(lines)} × " if len(lines) > 1 else ""
    each = " each" if count else ""
    return f"{count}{c['lax']} over {tuple(c['axes'])} of {shapes}: {_cost(c)}; {times}{each}{perm}{where}"


def _cost(c: dict[str, Any]) -> str:
    """What one run costs a device: what it keeps and what it sends (see `RING`), or only its operand's size."""
    if c.get("sends") is None:
        return f"{_size(c.get('bytes', 0))} per device"
    return f"keeps {_size(c['keeps'])}, sends {_size(c['sends'])} per device"


def _jaxpr_total(found: list[dict[str, Any]]) -> str:
    """How many times the collectives run in all, and how much they send per device."""
    if any(c.get("times") is None for c in found):
        return "in all: an unknown number of runs (a collective sits inside a while or a cond)"
    runs = sum(c["times"] for c in found)
    if any(c.get("sends") is None for c in found):
        return f"in all: {runs} runs"
    return f"in all: {runs} runs, sending {_size(sum(c['times'] * c['sends'] for c in found))} per device"


def _hlo_collective(c: dict[str, Any], count: int) -> str:
    """`all-reduce of f32[] over ('x', 'y'), 8 devices: keeps 4 B, sends 7 B per device (from psum), in a loop`."""
    operands = ", ".join(c["operands"]) or c["result"]
    made = f" (from {c['from']})" if c.get("from") else ""
    loop = ", inside a loop" if c.get("in_loop") else ""
    times = f"{count} × " if count > 1 else ""
    if c["op"] == "collective-permute":
        pairs = f", pairs (source, target) {c['groups']}" if c.get("groups") else ""
        return (f"{times}{c['op']} of {operands}: each sending device sends {_size(c.get('sends', c['bytes']))}"
                f"{pairs}{made}{loop}")
    keeps = f"keeps {_size(c['result_bytes'])}, sends {_size(c['sends'])} per device" if "sends" in c else \
        f"{_size(c['bytes'])} per device"
    return f"{times}{c['op']} of {operands} {_among(c)}: {keeps}{made}{loop}"


def _among(c: dict[str, Any]) -> str:
    """`over ('x', 'y')` in the learner's mesh axes, else the groups of devices as XLA lists them."""
    if c.get("axes"):
        return f"over {tuple(c['axes'])}"
    if c.get("axes") == [] or not c.get("groups"):
        return "within each device"
    return f"among {_groups(c['groups'])}"


def _size(n: float) -> str:
    """Bytes exactly up to 100 KiB (`3,840 B`, so two collectives compare at a glance), then `1.2 MiB`."""
    if n < 100 * 2**10:
        return f"{int(n):,} B"
    return f"{n / 2**10:.1f} KiB" if n < 2**20 else f"{n / 2**20:.1f} MiB"


def _groups(text: str) -> str:
    """`4 groups of 2 devices {{0,4},...}`: who talks to whom, counted."""
    if not text.startswith("{{"):
        return text  # a spelling the HLO reader did not take apart, as printed
    groups = [g for g in text.strip("{}").split("},{") if g]
    sizes = {len(g.split(",")) for g in groups}
    if len(sizes) != 1:
        return text
    return f"{len(groups)} group{'s' if len(groups) != 1 else ''} of {sizes.pop()} devices {text}"
