"""`course inspect`'s drawings of programs read from their jaxprs: kernels (grid, refs, memory spaces, DMAs) and refs.

Both print the jaxpr as JAX does, one equation a row, with each load, store and DMA numbered in
the margin and the learner's line at the right.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text

from course import ui
from course.ui.inspection_text import fit, labelled_code, table

KINDS = {"load": "loads", "store": "stores", "update": "updates", "freeze": "freezes"}


def kernels(call: dict[str, Any]) -> None:
    """Every kernel of one call: how it is called, its refs, its accesses in program order, its DMAs."""
    found = call.get("kernels", [])
    if not found:
        ui.block("no pallas_call in this call", indent=4, style="yellow")
    for k in found:
        at = f" at line {k['line']}" if k.get("line") else ""
        steps = f"grid {tuple(k['grid'])}: {k['steps']} step{'s' if k['steps'] != 1 else ''}" \
            if k.get("steps") is not None else f"grid {tuple(k['grid'])}"
        ui.block(Text.assemble(("kernel ", "bold"), (k["kernel"], "bold"), f"  (pallas_call{at}, {k['interpret']}; "
                               f"{steps})"), indent=4)
        refused = k.get("tpu_refusal")
        if refused:
            ui.block(f"✗ a TPU cannot compile this kernel: {refused}", indent=6, style="bold red")
        elif "tpu_refusal" in k:
            ui.block("lowers for a TPU", indent=6, style="green")
        _refs_table(k["refs"])
        for alias in k.get("aliases", []):
            ui.block(f"aliased: operand {alias['input']} ({alias['input_ref']}) is output {alias['output']} "
                     f"({alias['output_ref']}): one buffer", indent=6)
        ui.block(_counts(k["listing"]["rows"]), indent=6)
        for dma in k.get("dmas", []):
            ui.block(_dma(dma), indent=6, style="green" if dma["waited"] and dma["same_dtype"] else "yellow")
        for hazard in k.get("hazards", []) + k.get("hbm_accesses", []):
            ui.block(f"✗ {hazard}", indent=6, style="bold red")
        listing(k["listing"], indent=6)
        source(k.get("source", {}), indent=6)
    outside = [r for r in call.get("program", {}).get("rows", [])
               if r.get("kind") != "kernel" and _op(r["text"]) not in ("jit", "pjit")]
    if found and outside:
        ops = ", ".join(f"{_op(r['text'])}{_result(r['text'])}" + (f" (line {r['line']})" if r.get("line") else "")
                        for r in outside)
        ui.block(f"outside the kernels: {ops}", indent=4, style="dim")


def refs(call: dict[str, Any]) -> None:
    """The refs of one call, what happened to each, the primitives it ran and its jaxpr."""
    found = call.get("refs", [])
    if not found:
        ui.block("no jax.Ref is passed in or made", indent=4, style="yellow")
    for ref in found:
        where = f"made by jax.new_ref at line {ref['line']}" if ref.get("made") else "passed in"
        ui.block(f"{ref['name']}: {ref['type']}, {where}", indent=4, style="bold")
    ui.block(_counts(call["listing"]["rows"]), indent=4)
    shown = ", ".join(f"{name} {n}" for name, n in call.get("primitives", {}).items())
    ui.block(f"primitives: {shown}", indent=4, style="dim")
    listing(call["listing"], indent=4)
    source(call.get("source", {}), indent=4)


def _refs_table(refs: list[dict[str, Any]]) -> None:
    """One row per ref: role, memory space, type, and the block the pipeline copies for it. When that is
    wider than the terminal, the block goes on a line of its own under its ref; narrower still, a ref a line."""
    rows, blocks = [["ref", "role", "space", "type"]], ["block of the array"]
    for ref in refs:
        blocks.append(f"{_shape(ref['block'])} of {_shape(ref['array'])}" if "block" in ref else (
            f"made at line {ref['line']}" if ref.get("line") else "none: stays in HBM, reached by DMA"
            if ref["space"] in ("ANY", "HBM") else ""))
        rows.append([ref["name"], ref["role"], ref["space"], ref["type"]])
    whole = table([[*row, block] for row, block in zip(rows, blocks, strict=True)], indent=6)
    if whole is not None:
        for text in whole:
            ui.out.print(text, soft_wrap=True)
        return
    short = table(rows, indent=6)
    for k, (row, block) in enumerate(zip(rows, blocks, strict=True)):
        if short is not None:
            ui.out.print(short[k], soft_wrap=True)
        elif k:
            ui.block(f"{row[0]}: {row[1]}, {row[2]}, {row[3]}", indent=6)
        if k and block:
            ui.block(f"block {block}" if "block" in refs[k - 1] else block, indent=8, style="dim")


def _counts(rows: list[dict[str, Any]]) -> str:
    """`x_ref: 3 loads (lines 25, 25, 25); o_ref: 1 store (line 25)`."""
    per: dict[str, dict[str, list[str]]] = {}
    for row in rows:
        if row.get("kind") in KINDS and row.get("ref"):
            per.setdefault(row["ref"], {}).setdefault(row["kind"], []).append(str(row["line"] or "?"))
    if not per:
        return "no load or store"
    parts = []
    for ref, kinds in per.items():
        said = []
        for kind, lines in kinds.items():
            word = KINDS[kind] if len(lines) != 1 else kind
            said.append(f"{len(lines)} {word} (line{'s' if len(lines) > 1 else ''} {', '.join(lines)})")
        parts.append(f"{ref}: " + ", ".join(said))
    return "; ".join(parts)


def _dma(dma: dict[str, Any]) -> str:
    """One DMA in words: from where to where, and when it is waited."""
    at = f" at line {dma['line']}" if dma.get("line") else ""
    text = f"DMA{at} from {dma['from']} ({dma['from_space']}) into {dma['to']} ({dma['to_space']})"
    if dma.get("sem"):
        text += f" on {dma['sem']}"
    if not dma["waited"]:
        text += ": never waited, so its destination never receives the data"
    elif dma.get("read_before_wait"):
        text += f": line {dma['read_before_wait']} reads the destination before the wait"
    else:
        waited = f" at line {dma['wait_line']}" if dma.get("wait_line") else ""
        text += f", waited{waited}"
    if not dma["same_dtype"]:
        text += "; the two refs have different dtypes, and a DMA cannot convert"
    return text


def listing(found: dict[str, Any], indent: int) -> None:
    """The jaxpr, one equation a row: numbered accesses in the margin, the learner's line at the right.

    The `line N` column stands where the terminal leaves room for it; an equation longer than its
    room is folded (or elided, past `fit`'s limit) under its own first line, never padded past the width.
    """
    rows = found.get("rows", [])
    ui.block("jaxpr:", indent=indent, style="dim")
    tag = max((len(f"line {r['line']}") for r in rows if r.get("line")), default=0)
    room = ui.out.width - indent - 4 - (tag + 2 if tag else 0)
    column = max(min(max((len(r["text"]) + 2 * r["depth"] for r in rows), default=0), room), 24)
    for row in rows:
        number = f"{row['n']:>3} " if row.get("n") else "    "
        pieces = fit("  " * row["depth"] + row["text"], column, hang=2 * row["depth"] + 4)
        for i, piece in enumerate(pieces):
            line = Text.assemble(" " * indent, (number if i == 0 else "    ", "bold yellow"),
                                 (piece, "" if row.get("n") else "dim"))
            if i == 0 and row.get("line"):
                line.append(" " * (column - len(piece)) + f"  line {row['line']}", style="dim")
            ui.out.print(line, soft_wrap=True)
    if found.get("cut"):
        ui.block(f"... and {found['cut']} more equations (`--json` has the first ones only too)", indent=indent,
                 style="dim")


def source(lines: dict[str, str], indent: int) -> None:
    """The learner's lines the listing refers to, verbatim (folded to the width after a space or a mark)."""
    for number, text in sorted(lines.items(), key=lambda kv: int(kv[0])):
        labelled_code(f"line {number}: ", text, indent)


def _shape(dims: list[Any]) -> str:
    """`(8, 128)`, with `None` for a squeezed dimension."""
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _result(text: str) -> str:
    """' f32[16,64]', the type an equation makes (its first output), so a big array outside the kernels shows."""
    head = text.split(" = ", 1)[0] if " = " in text else ""
    kind = head.split(" ", 1)[0].split(":", 1)[-1] if ":" in head else ""
    return f" {kind}" if kind else ""


def _op(text: str) -> str:
    """The primitive of a listed equation: `pad` from `b:f32[16,64] = pad[...] a 0.0`."""
    after = text.split(" = ", 1)[-1]
    return after.split("[", 1)[0].split(" ", 1)[0]
