"""`report.html`: one self-contained page about a graded class, made with Jinja2 and matplotlib.

The charts (the score distribution and each check's pass rate) are drawn by matplotlib as SVG,
text turned into paths, and embedded as data URIs; the page loads nothing from the network.
Jinja2 escapes everything it is given, so a student's message cannot inject markup. Both
libraries come with the `instructor` extra (`pip install -e '.[instructor]'`).
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

from course.files import write_atomic

MISSING = "the class report needs the instructor extra: `pip install -e '.[instructor]'`"

TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ s.course }}: class report</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1d1d1f; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
.meta { color: #555; } .charts { display: flex; flex-wrap: wrap; gap: 1.5rem; } .charts img { max-width: 100%; }
table { border-collapse: collapse; margin: .6rem 0 1rem; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.bad { color: #b00020; font-weight: 600; } .off { color: #b00020; } .hidden { color: #6a3d9a; font-size: .85em; }
.msg { font-family: ui-monospace, monospace; font-size: .85em; white-space: pre-wrap; }
</style>
</head>
<body>
<h1>{{ s.course }}</h1>
<p class="meta">{{ s.students }} students · class mean {{ fmt(s.mean_total) }} of {{ fmt(s.max_total) }}
 · median {{ fmt(s.median_total) }} · JAX {{ s.jax_version }} · seed {{ s.seed }}</p>
{% if s.platform_errors %}<p class="bad">The platform failed while grading {{ s.platform_errors|join(", ") }};
 their scores are not theirs. Rerun <code>course grade</code> to grade them again.</p>{% endif %}
<p class="meta">Isolation on: {{ s.isolation.on|join("; ") }}.{% if s.isolation.off %}
 <span class="off">Off on this machine: {{ s.isolation.off|join("; ") }}.</span>{% endif %}</p>
<h2>Scores and checks</h2>
<div class="charts">
<figure><img alt="Distribution of total scores" src="{{ charts.distribution }}"></figure>
<figure><img alt="Pass rate of each check" src="{{ charts.pass_rates }}"></figure>
</div>
<h2>Exercises</h2>
{% for e in s.exercises %}
<h3>{{ e.position }}. {{ e.name }} <small class="meta">{{ e.topic }}</small></h3>
<p class="meta">passed {{ e.passed }} · failed {{ e.failed + e.timeout }} · not tried {{ e.not_tried }}
{% if e.error %}· <span class="bad">platform errors {{ e.error }}</span>{% endif %}
 · mean {{ fmt(e.mean_score) }} of {{ fmt(e.max_score) }}</p>
<table><tr><th>check</th><th>passed</th><th>failed</th><th>most common failure</th></tr>
{% for c in e.checks %}<tr><td>{{ c.title }} {% if c.hidden %}<span class="hidden">hidden</span>{% endif %}</td>
<td class="num">{{ c.passed }}</td><td class="num">{{ c.failed }}</td>
<td class="msg">{% for f in c.common_failures[:2] %}{{ f.count }}× {{ f.message }}
{% endfor %}</td></tr>{% endfor %}
</table>
{% endfor %}
<h2>Students</h2>
<table><tr><th>student</th>{% for e in s.exercises %}<th>{{ e.name }}</th>{% endfor %}<th>total</th><th>%</th></tr>
{% for row in students %}<tr><td>{{ row.student }}
{%- if row.error %} <span class="bad">platform error</span>{% endif %}</td>
{% for cell in row.cells %}<td class="num">{{ cell }}</td>{% endfor %}
<td class="num">{{ fmt(row.total) }}</td><td class="num">{{ row.percent }}</td></tr>{% endfor %}
</table>
</body>
</html>
"""


def available() -> bool:
    """True when Jinja2 and matplotlib are installed."""
    try:
        import jinja2  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _fmt(value: float | None) -> str:
    """A number as people write it; a dash for none."""
    return "–" if value is None else f"{value:.3g}" if isinstance(value, float) and value % 1 else f"{value:g}"


def _svg_uri(figure: Any) -> str:
    """A matplotlib figure as an SVG data URI (text drawn as paths, no date: the same class gives the same page)."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue().encode()).decode()


def _distribution(summary: dict[str, Any]) -> str:
    """A histogram of the students' totals, from 0 to what the course is worth."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    top = max(float(summary["max_total"]), 1.0)
    figure = Figure(figsize=(5.2, 3.2))
    axes = figure.subplots()
    axes.hist(list(summary["totals"].values()), bins=min(20, max(5, int(top))), range=(0, top), color="#3a7bd5")
    axes.set(title="Total scores", xlabel=f"points (of {top:g})", ylabel="students")
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.spines[["top", "right"]].set_visible(False)
    return _svg_uri(figure)


def _pass_rates(summary: dict[str, Any]) -> str:
    """A horizontal bar per check: the share of students who tried the exercise and passed the check."""
    from matplotlib.figure import Figure

    rows = [(f"{e['name']} · {c['id'].removeprefix('test_')}", c["pass_rate"] or 0.0, c["hidden"])
            for e in summary["exercises"] for c in e["checks"]]
    rows = rows or [("no check was graded", 0.0, False)]
    figure = Figure(figsize=(6.2, 0.9 + 0.28 * len(rows)))
    axes = figure.subplots()
    labels = [r[0] for r in rows][::-1]
    axes.barh(labels, [100 * r[1] for r in rows][::-1], color=["#6a3d9a" if r[2] else "#2e9e5b" for r in rows][::-1])
    axes.set(title="Pass rate per check (purple: hidden)", xlabel="% of students who tried", xlim=(0, 100))
    axes.tick_params(axis="y", labelsize=8)
    axes.spines[["top", "right"]].set_visible(False)
    return _svg_uri(figure)


def _student_rows(summary: dict[str, Any], table: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The students' table: a cell per exercise, total and percentage."""
    top = summary["max_total"] or 1
    return [{"student": r["student"], "error": r["error"], "cells": r["cells"], "total": r["total"],
             "percent": f"{100 * r['total'] / top:.0f}"} for r in table]


def render(summary: dict[str, Any], table: list[dict[str, Any]]) -> str:
    """The page for `summary` (from `course.instructor.gradebook`) and the students' `table`."""
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    charts = {"distribution": _distribution(summary), "pass_rates": _pass_rates(summary)}
    return env.from_string(TEMPLATE).render(s=summary, charts=charts, students=_student_rows(summary, table), fmt=_fmt)


def write(path: Path, summary: dict[str, Any], table: list[dict[str, Any]]) -> Path:
    """Write the page atomically; return its path."""
    write_atomic(path, render(summary, table))
    return path
