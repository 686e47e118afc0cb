"""`course inspect`'s drawing of a compiler report: memory, program sizes, loops, matmuls and saved residuals."""

from __future__ import annotations

from typing import Any

from course import ui
from course.ui.inspection_kernels import source


def compiler(call: dict[str, Any]) -> None:
    """One call's compiled program: what it allocates, how big it is, what loops and matmuls it runs, what it saves."""
    mem = call.get("memory", {})
    ui.block(f"program: temp {_size(mem.get('temp', 0))} (arguments {_size(mem.get('argument', 0))}, outputs "
             f"{_size(mem.get('output', 0))}); {call.get('hlo_instructions')} HLO instructions; jaxpr "
             f"{call.get('jaxpr_equations')} equations", indent=4, style="bold")
    loops = call.get("loops", [])
    if not loops:
        ui.block("no loop: everything is written out once, in order", indent=4, style="yellow")
    for lp in loops:
        ui.block(_loop(lp), indent=4)
    _matmuls(call)
    _residuals(call)
    source(call.get("source", {}), indent=4)


def _loop(lp: dict[str, Any]) -> str:
    """`scan of 8 trips at line 19 (unroll 2), carries float32[16, 64]`."""
    trips = f"{lp['length']} trips" if lp.get("length") is not None else "a trip count that is data"
    kind = "while_loop" if lp["kind"] == "while" else "scan" + (", backward (reverse)" if lp.get("reverse") else "")
    at = f" at line {lp['line']}" if lp.get("line") else ""
    unroll = f" (unroll {lp['unroll']})" if lp.get("unroll", 1) > 1 else ""
    runs = f", run {lp['times']} times" if (lp.get("times") or 1) > 1 else ""
    carry = ", ".join(lp.get("carry", [])) or "nothing"
    return f"{kind} of {trips}{at}{unroll}{runs}; carries {carry}"


def _matmuls(call: dict[str, Any]) -> None:
    """The matmul work in all, then each matmul with its dtypes, line and runs."""
    rows = call.get("matmuls", [])
    if not rows:
        ui.block("no matmul (no dot_general in the jaxpr)", indent=4)
        return
    total = call.get("matmul_flops")
    work = f"{_mflop(total)} of matmuls in all" if total is not None else "matmul work unknown (a while_loop or cond)"
    cost = call.get("cost_flops")
    xla = f"; XLA's cost_analysis says {_mflop(cost)}, counting each loop's body once" if cost is not None else ""
    ui.block(f"{work}, each matmul counted as often as its loops run{xla}", indent=4, style="bold")
    if any(m.get("global") for m in rows):
        ui.block("shapes and work are one device's: the arrays are sharded (explicit mode), and the jaxpr's "
                 "global shapes follow in brackets", indent=4, style="dim")
    for m in rows:
        at = f"line {m['line']}" if m.get("line") else "no line of yours"
        copies = f", {m['count']} of them" if m["count"] > 1 else ""
        if m.get("times") is None:
            runs = m.get("unknown") or "runs an unknown number of times"
        else:
            each = " each" if m["count"] > 1 else ""
            runs = f"{m['times']} run{'s' if m['times'] != 1 else ''}{each}, {_mflop(m['total_flops'] * m['count'])}"
        into = f" (preferred_element_type {m['preferred']})" if m.get("mixed") else ""
        whole = f" [global {m['global']}]" if m.get("global") else ""
        ui.block(f"{at:<9} {m['lhs']} @ {m['rhs']} -> {m['out']}{into}{copies}: {runs}{whole}", indent=6)
    if call.get("more_matmuls"):
        ui.block(f"... and {call['more_matmuls']} more", indent=6, style="dim")


def _residuals(call: dict[str, Any]) -> None:
    """What forward scans hand their backward pass, per step and in all."""
    rows = call.get("residuals", [])
    if not rows:
        ui.block("saved for a backward pass: nothing (no differentiated scan)", indent=4, style="dim")
        return
    per_step = sum(r["bytes"] * r["count"] for r in rows)
    ui.block(f"saved for the backward pass: {_size(per_step)} per step of the scan, "
             f"{_size(call.get('residual_bytes', 0))} in all", indent=4, style="bold")
    for r in rows:
        named = f", named {r['name']!r}" if r.get("name") else ""
        at = f", line {r['line']}" if r.get("line") else ""
        count = f" x{r['count']}" if r["count"] > 1 else ""
        ui.block(f"{r['type']}{count}: {r['origin']}{named}{at} (kept for each of {r['length']} steps)", indent=6)
    if call.get("more_residuals"):
        ui.block(f"... and {call['more_residuals']} more", indent=6, style="dim")


def _size(n: float) -> str:
    """Bytes in the unit that reads best."""
    if abs(n) < 2**10:
        return f"{int(n)} B"
    if abs(n) < 2**20:
        return f"{n / 2**10:.1f} KiB"
    return f"{n / 2**20:.1f} MiB"


def _mflop(flops: float) -> str:
    """Flops in millions (or thousands, when small)."""
    return f"{flops / 1e6:.0f} MFLOP" if flops >= 1e7 else f"{flops / 1e6:.2f} MFLOP"
