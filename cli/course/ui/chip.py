"""What a chip said of the learner's kernels, as read on a terminal: after a check, and as `course bench`'s tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from course import ui
from course.ui import views

if TYPE_CHECKING:
    from course.chip.stage import ChipReport

MARKS = {"matched": ("✓", "green"), "timed": ("✓", "green"), "estimated": ("~", "cyan")}
WORDS = {"refused": "the chip's compiler refused it", "vmem": "it does not fit in the chip's scoped VMEM",
         "halted": "it halted the chip's core", "differs": "it runs, but its result is wrong on the chip",
         "interpreted": "it ran in the interpreter, not compiled", "error": "your code raised"}


def check_section(report: ChipReport) -> None:
    """After a verdict: what compiling the learner's kernels on the chip gave, call by call."""
    chip = f"{report.chip} ({report.device_kind})" if report.device_kind else report.chip or "the TPU"
    ui.line(f"On the chip, {chip}: your kernels compiled and compared with the CPU's result", style="bold")
    if report.error:
        ui.block(f"✗ {report.error}", indent=2, style="red")
    for call in report.calls:
        mark, style = MARKS.get(call.get("status", ""), ("✗", "red"))
        ui.labelled(Text(mark, style=style), Text(call["call"]), indent=2)
        ui.block(_said(call), indent=6, style="" if mark == "✓" else style)
    ui.block("The chip's words are advice: your grade is the CPU's verdict above.", indent=2, style="dim")


def _said(call: dict[str, Any]) -> str:
    """One call's outcome in words."""
    status = call.get("status", "")
    if status == "matched" and not call.get("error"):
        return "compiled, and matches the CPU's result exactly"
    if status == "matched":
        return (f"compiled, and matches the CPU's result (off by {call.get('error', 0.0):.2g} of its largest value; "
                f"{call.get('tolerance', 0.0):g} allowed)")
    return f"{WORDS.get(status, status)}: {call.get('message', '')}"


def bench_report(report: ChipReport, improved: list[str]) -> None:
    """`course bench` for one exercise: a small table per call, measured on a chip or estimated."""
    if report.estimated:
        calibrated = "" if report.chip == "TPU v5e" else " (calibrated on a TPU v5e)"
        said = Text(f"an estimate for a {report.chip}, not a measurement{calibrated}", style="cyan")
    else:
        said = Text(f"measured on {report.chip} ({report.device_kind})")
    ui.labelled(Text(report.name, style="bold"), said)
    if report.error:
        ui.block(f"✗ {report.error}", indent=2, style="red")
    for call in report.calls:
        ui.line()
        ui.block(call["call"], indent=2, style="bold")
        if call.get("status") not in ("timed", "estimated"):
            ui.block(f"✗ {_said(call)}", indent=4, style="red")
            continue
        for line in views.columns(_rows(call), right={1, 2, 3, 4}):
            ui.out.print(Text("    ") + line, no_wrap=True, crop=False)
        ui.block(_footnote(call, call["call"] in improved), indent=4, style="dim")


def _rows(call: dict[str, Any]) -> list[list[Text]]:
    """The table of one call: yours, XLA's, the estimate and the roofline, as time, rate, × XLA and share of peak."""
    flops, nbytes, fastest = call.get("flops", 0.0), call.get("bytes", 0.0), call.get("roofline_s", 0.0)
    by_flops = bool(flops) and flops / max(nbytes, 1.0) > 50  # past the ridge, a kernel is judged by FLOP/s
    unit = "TFLOP/s" if by_flops else "GB/s"
    xla = call.get("xla", {}).get("median_s")
    rows = [[Text(h, style="dim") for h in ("", "time", unit, "× XLA" if xla else "", "of peak")]]
    entries = [("yours", call.get("kernel", {}).get("median_s")), ("XLA", xla),
               ("estimate", (call.get("estimate") or {}).get("seconds")), ("roofline", fastest or None)]
    for label, seconds in entries:
        if not seconds:
            continue
        rate = (flops / seconds / 1e12) if by_flops else (nbytes / seconds / 1e9)
        rows.append([Text(label), Text(_time(seconds)), Text(f"{rate:,.1f}"),
                     Text(f"{seconds / xla:.2f}" if xla else ""), Text(f"{fastest / seconds:.0%}" if fastest else "")])
    return rows


def _footnote(call: dict[str, Any], best: bool) -> str:
    """How the figure was read, and what the estimate says the time goes to."""
    parts = []
    kernel = call.get("kernel")
    if kernel:
        clock = "the chip's own clock" if kernel["clock"] == "device" else f"the wall clock ({kernel['note']})"
        parts.append(f"median of {kernel['repeats']} calls on {clock}, fastest {_time(kernel['min_s'])}, "
                     f"spread {kernel['spread']:.1%}")
    estimate = call.get("estimate") or {}
    if estimate.get("kernels"):
        k = estimate["kernels"][0]
        parts.append(f"estimated bound: {k['bound']} (HBM {_time(k['hbm_s'])}, MXU {_time(k['mxu_s'])}, vector "
                     f"{_time(k['vector_s'])}, {k['steps']} grid steps {_time(k['steps_s'])})")
    if best:
        parts.append("your best yet, kept in .course/bench.json")
    return "; ".join(parts)


def _time(seconds: float) -> str:
    """A duration in the unit that reads best."""
    return f"{seconds * 1e3:.3f} ms" if seconds < 1 else f"{seconds:.2f} s"


def chart_png(reports: list[ChipReport]) -> str | None:
    """A bar chart of each timed call, yours beside XLA's, the estimate and the roofline, as base64 PNG; None
    without matplotlib (`pip install matplotlib`) or without anything timed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    calls = [c for r in reports for c in r.calls if c.get("status") in ("timed", "estimated")]
    if not calls:
        return None
    import base64
    import io

    labels = ("yours", "XLA", "estimate", "roofline")
    fig, axes = plt.subplots(1, len(calls), figsize=(3.2 * len(calls), 2.8), squeeze=False)
    for ax, call in zip(axes[0], calls, strict=True):
        values = [call.get("kernel", {}).get("median_s"), call.get("xla", {}).get("median_s"),
                  (call.get("estimate") or {}).get("seconds"), call.get("roofline_s")]
        shown = [(lab, v * 1e3) for lab, v in zip(labels, values, strict=True) if v]
        ax.bar([lab for lab, _ in shown], [v for _, v in shown], color=["#2a7", "#888", "#39c", "#ccc"][:len(shown)])
        ax.set_ylabel("ms")
        ax.set_title(call["call"] if len(call["call"]) < 34 else call["call"][:32] + "…", fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    plt.close(fig)
    return base64.b64encode(buffer.getvalue()).decode()
