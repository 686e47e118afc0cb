"""The class report's charts, drawn by matplotlib as SVG and embedded as data URIs (nothing is fetched).

Text is drawn as paths and the SVG's ids are salted with a constant, so the same class gives the
same page byte for byte (a class graded in shards and merged gives the page of one run). Only
students who tried an exercise are drawn in its charts.
"""

from __future__ import annotations

import base64
import io
import textwrap
from typing import Any

BLUE, GREEN, PURPLE, GREY = "#3a7bd5", "#2e9e5b", "#6a3d9a", "#9aa0a6"
_RC = {"svg.hashsalt": "course-report", "svg.fonttype": "path", "font.size": 9}


def _svg_uri(figure: Any) -> str:
    """A matplotlib figure as an SVG data URI (no date: the same class gives the same page)."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context(_RC):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue().encode()).decode()


def _tidy(axes: Any) -> None:
    """No box around the plot, integer counts."""
    from matplotlib.ticker import MaxNLocator

    axes.spines[["top", "right"]].set_visible(False)
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))


def _histogram(axes: Any, scores: list[float], top: float, color: str) -> None:
    """Scores from 0 to `top`, a bar per point when the points are few."""
    top = max(float(top), 1.0)
    bins = int(top) + 1 if top <= 24 else 20
    axes.hist(scores, bins=bins, range=(-0.5, top + 0.5) if top <= 24 else (0, top), color=color, rwidth=0.9)
    axes.set_xlim(-0.5, top + 0.5)


def totals(scores: list[float], top: float, left_out: int) -> str:
    """A histogram of the students' totals; `left_out` students who tried nothing are not drawn."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(5.0, 2.6), layout="constrained")
        axes = figure.subplots()
        _histogram(axes, scores, top, BLUE)
        note = f"; {left_out} who tried nothing not drawn" if left_out else ""
        axes.set(title=f"Total scores ({len(scores)} students{note})", xlabel=f"points (of {top:g})",
                 ylabel="students")
        _tidy(axes)
        return _svg_uri(figure)


def _label(title: str, hidden: bool) -> str:
    """A check's title as a chart label: wrapped, marked when hidden."""
    text = textwrap.shorten(title, 80, placeholder="…") + (" (hidden)" if hidden else "")
    return "\n".join(textwrap.wrap(text, 42)) or "(untitled)"


def scores(summary: dict[str, Any], points: list[float]) -> str:
    """One exercise's distribution of scores among those who tried it."""
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(4.2, 2.6), layout="constrained")
        axes = figure.subplots()
        _histogram(axes, points, summary["max_score"], BLUE)
        axes.set(title=f"Scores of the {len(points)} who tried", xlabel=f"points (of {summary['max_score']:g})",
                 ylabel="students")
        _tidy(axes)
        return _svg_uri(figure)


def pass_rates(summary: dict[str, Any]) -> str:
    """Each check's pass rate among those who tried the exercise, labelled with the check's title
    (purple: hidden checks)."""
    import matplotlib
    from matplotlib.figure import Figure

    checks = summary["checks"]
    labels = [_label(c["title"], c["hidden"]) for c in checks][::-1] or ["no check was graded"]
    lines = sum(label.count("\n") + 1 for label in labels)
    with matplotlib.rc_context(_RC):
        figure = Figure(figsize=(6.4, max(1.6, 0.7 + 0.22 * lines + 0.12 * len(labels))), layout="constrained")
        axes = figure.subplots()
        rates = [100 * (c["pass_rate"] or 0.0) for c in checks][::-1] or [0.0]
        colors = [PURPLE if c["hidden"] else GREEN for c in checks][::-1] or [GREY]
        axes.barh(range(len(labels)), rates, color=colors)
        axes.set_yticks(range(len(labels)), labels, fontsize=8)
        axes.set(title="Pass rate per check", xlabel="% of those who tried", xlim=(0, 100))
        axes.spines[["top", "right"]].set_visible(False)
        return _svg_uri(figure)
