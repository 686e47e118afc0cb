"""The Jinja2 template of `report.html`, and the one script it runs (sorting the students' table).

The page loads nothing: its charts are data URIs and its style and script are inline. Its
Content-Security-Policy allows images only from data URIs and scripts only by the hash of
`SORT_SCRIPT`, so even text that escaped escaping could run nothing.
"""

SORT_SCRIPT = """
document.querySelectorAll("table.sortable th button").forEach(function (button) {
  button.addEventListener("click", function () {
    var th = button.parentElement, table = th.closest("table"), body = table.tBodies[0], col = th.cellIndex;
    var up = th.getAttribute("aria-sort") !== "ascending";
    table.querySelectorAll("th").forEach(function (other) { other.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", up ? "ascending" : "descending");
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].getAttribute("data-sort"), y = b.cells[col].getAttribute("data-sort");
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : String(x).localeCompare(String(y));
      return up ? c : -c;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
"""

STYLE = """
:root { --ink: #1d1d1f; --muted: #5f6368; --line: #e3e3e3; --bad: #b00020; --hidden: #6a3d9a; --pass: #1e7e45;
        --c1: 15rem; --c2: 5rem; --c3: 4rem; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: var(--ink); }
header, main, .bar { padding: 0 clamp(.8rem, 3vw, 2.5rem); max-width: 110rem; margin: 0 auto; }
header { padding-top: 1.4rem; }
h1 { font-size: 1.6rem; margin: 0 0 .3rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid var(--line); }
h3 { margin: 1.6rem 0 .3rem; }
nav { position: sticky; top: 0; background: #fff; border-bottom: 1px solid var(--line); padding: .4rem 0; z-index: 5; }
nav a { margin-right: 1.2rem; }
.meta { color: var(--muted); margin: .2rem 0; } .bad { color: var(--bad); font-weight: 600; }
.alert { border-left: 4px solid var(--bad); background: #fdf3f4; padding: .4rem .8rem; margin: .6rem 0; }
.alert ul { margin: .2rem 0; }
figure { margin: .6rem 0; } figure img { max-width: 100%; height: auto; }
table { border-collapse: separate; border-spacing: 0; }
th, td { padding: .3rem .6rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #f6f6f6; font-weight: 600; } td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.wide { overflow-x: auto; max-width: 100%; }
.scroll { overflow: auto; max-width: 100%; max-height: 75vh; border: 1px solid var(--line); }
.scroll table { min-width: 100%; } .scroll td { white-space: nowrap; }
.row { display: flex; flex-wrap: wrap; gap: 1rem 2.5rem; align-items: flex-start; }
.scroll thead th { position: sticky; top: 0; z-index: 2; }
.scroll .f1, .scroll .f2, .scroll .f3 { position: sticky; background: #fff; z-index: 1; }
.scroll thead .f1, .scroll thead .f2, .scroll thead .f3 { background: #f6f6f6; z-index: 3; }
.f1 { left: 0; min-width: var(--c1); max-width: var(--c1); overflow: hidden; text-overflow: ellipsis; }
.f2 { left: var(--c1); min-width: var(--c2); } .f3 { left: calc(var(--c1) + var(--c2)); min-width: var(--c3);
      border-right: 2px solid #c9c9c9; }
th button { all: unset; cursor: pointer; } th button:focus-visible { outline: 2px solid #3a7bd5; }
th[aria-sort=ascending] button::after { content: " ▲"; } th[aria-sort=descending] button::after { content: " ▼"; }
td.passed { color: var(--pass); } td.failed, td.timeout, td.too_large { color: var(--bad); }
td.error { color: #9c27b0; font-weight: 600; } td.not_tried { color: #9aa0a6; }
.tag { font-size: .8em; padding: 0 .35em; border-radius: .3em; background: #eee; color: var(--muted); }
.tag.hidden { background: #efe7f7; color: var(--hidden); }
.msg { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: .82em; white-space: pre-wrap;
       word-break: break-word; margin: .2rem 0; }
.panel { border: 1px solid var(--line); border-radius: .4rem; padding: .2rem 1rem 1rem; margin: 1rem 0; }
.panel:target { border-color: #3a7bd5; box-shadow: 0 0 0 3px #d6e4fb; }
.panel details { border-top: 1px solid var(--line); padding: .4rem 0; } .panel summary { cursor: pointer; }
.checks { list-style: none; padding-left: .4rem; margin: .3rem 0; } .checks li { margin: .35rem 0; }
.mark-passed { color: var(--pass); } .mark-failed, .mark-timeout { color: var(--bad); }
"""

TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'; \
script-src '{{ script_hash }}'">
<title>{{ s.course }}: class report</title>
<style>{{ style|safe }}</style>
</head>
<body>
<header>
<h1>{{ s.course }}</h1>
<p class="meta">Graded {{ date }} · course {{ s.course_version }}{% if commit %} (commit {{ commit }}){% endif %}
 · JAX {{ s.jax_version }} · seed {{ s.seed }}{% if s.layout != "folders" %} · {{ s.layout }}{% endif %}</p>
<p class="meta">{{ s.students }} students: {{ s.graded_now }} graded in this run, {{ s.reused }} reused unchanged
 from an earlier run · class mean {{ fmt(s.mean_total) }} of {{ fmt(s.max_total) }},
 median {{ fmt(s.median_total) }}</p>
{% if s.platform_errors %}<div class="alert"><span class="bad">The platform failed while grading
 {{ s.platform_errors|join(", ") }};</span> their scores are not theirs. Run <code>course grade</code> again.</div>
{% endif %}
{% if bad_references %}<div class="alert">Reference solutions that did not pass under this seed:
 {{ bad_references|join(", ") }}. Check those graders (<code>course validate</code>) before trusting their scores.</div>
{% endif %}
{% if s.bad_entries %}<div class="alert" id="not-graded"><span class="bad">{{ s.bad_entries|length }} entr{{ "y" if
 s.bad_entries|length == 1 else "ies" }} could not be graded whole:</span><ul>
{% for b in s.bad_entries %}<li><code>{{ b.entry }}</code> {{ b.reason }}.</li>{% endfor %}</ul></div>{% endif %}
{% if s.missing %}<div class="alert">{{ s.missing|length }} student{{ "" if s.missing|length == 1 else "s" }} of the
 roster submitted nothing: {% for m in s.missing %}{{ m.student }}{% if m.name %} ({{ m.name }}){% endif %}
{%- if not loop.last %}, {% endif %}{% endfor %}.</div>{% endif %}
<p class="meta">Isolation on: {{ s.isolation.on|join("; ") }}.{% if s.isolation.off %}
 <span class="bad">Off on this machine: {{ s.isolation.off|join("; ") }}.</span>{% endif %}</p>
</header>
<nav><div class="bar"><a href="#overview">Overview</a><a href="#students">Students</a><a href="#exercises">Exercises</a>
<a href="#panels">Each student</a></div></nav>
<main>
<h2 id="overview">Overview</h2>
<div class="row"><figure><img alt="Distribution of total scores" src="{{ totals_chart }}">
{% if left_out %}<figcaption class="meta">{{ left_out }} student{{ "" if left_out == 1 else "s" }} who tried nothing
 not drawn.</figcaption>{% endif %}</figure>
<div class="wide"><table>
<thead><tr><th>#</th><th>exercise</th><th>topic</th><th class="num">tried</th><th class="num">passed</th>
<th class="num">failed</th><th class="num">timed out</th><th class="num">errors</th><th class="num">not tried</th>
<th class="num">pass rate</th><th class="num">mean of those who tried</th></tr></thead>
<tbody>{% for e in s.exercises %}<tr><td>{{ e.position }}</td><td><a href="#ex-{{ e.name }}">{{ e.name }}</a></td>
<td>{{ e.topic }}</td><td class="num">{{ e.tried }}</td><td class="num">{{ e.passed }}</td>
<td class="num">{{ e.failed }}</td><td class="num">{{ e.timeout }}</td><td class="num">{{ e.error }}</td>
<td class="num">{{ e.not_tried }}</td><td class="num">{{ pct(e.pass_rate) }}</td>
<td class="num">{{ fmt(e.mean_score) }} / {{ fmt(e.max_score) }}</td></tr>{% endfor %}</tbody>
</table></div></div>

<h2 id="students">Students</h2>
<p class="meta">Click a heading to sort; click a name for that student's checks and messages.</p>
<div class="scroll"><table class="sortable" id="students-table">
<thead><tr><th class="f1"><button type="button">student</button></th>
<th class="f2 num"><button type="button">total</button></th><th class="f3 num"><button type="button">%</button></th>
{% for e in s.exercises %}<th class="num"><button type="button" title="{{ e.title }}">{{ e.position }}.
 {{ e.name }}</button></th>{% endfor %}</tr></thead>
<tbody>{% for r in students %}<tr><td class="f1" data-sort="{{ r.id }}" title="{{ r.id }}{% if r.name %}: {{ r.name
 }}{% endif %}"><a href="#{{ r.anchor }}">{{ r.id }}</a>
{%- if r.error %} <span class="bad">!</span>{% endif %}{% if r.name %} <span class="meta">{{ r.name }}</span>{% endif
 %}</td>
<td class="f2 num" data-sort="{{ r.total }}">{{ fmt(r.total) }}</td>
<td class="f3 num" data-sort="{{ r.percent }}">{{ r.percent }}</td>
{% for c in r.cells %}<td class="num {{ c.status }}" data-sort="{{ c.sort }}">{{ c.text }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table></div>

<h2 id="exercises">Exercises</h2>
{% for e in s.exercises %}<section id="ex-{{ e.name }}">
<h3>{{ e.position }}. {{ e.name }}: {{ e.title }} <span class="tag">{{ e.topic }}</span></h3>
<p class="meta">{{ e.tried }} tried · passed {{ e.passed }} · failed {{ e.failed }} · timed out {{ e.timeout }}
 · errors {{ e.error }} · not tried {{ e.not_tried }}{% if e.too_large %} · files too large {{ e.too_large }}{% endif %}
 · mean {{ fmt(e.mean_score) }} of {{ fmt(e.max_score) }}</p>
{% if e.tried %}<div class="row"><figure><img alt="Scores of those who tried {{ e.name }}"
 src="{{ exercise_charts[e.name][0] }}"></figure><figure><img alt="Pass rate of each check of {{ e.name }}"
 src="{{ exercise_charts[e.name][1] }}"></figure></div>{% endif %}
<div class="wide"><table><thead><tr><th>check</th><th class="num">passed</th><th class="num">failed</th>
<th>most common failures</th></tr></thead><tbody>
{% for c in e.checks %}<tr><td>{{ c.title }} {% if c.hidden %}<span class="tag hidden">hidden</span>{% endif %}
<br><span class="meta"><code>{{ c.id }}</code></span></td><td class="num">{{ c.passed }}</td>
<td class="num">{{ c.failed }}</td><td>{% for f in c.common_failures[:3] %}<div class="msg">{{ f.count }}× {{
 f.message }}</div>{% endfor %}</td></tr>{% endfor %}</tbody></table></div>
</section>{% endfor %}

<h2 id="panels">Each student</h2>
{% for r in students %}<section class="panel" id="{{ r.anchor }}">
<h3>{{ r.id }}{% if r.name %} <span class="meta">{{ r.name }}</span>{% endif %}: {{ fmt(r.total) }} of
 {{ fmt(s.max_total) }} ({{ r.percent }}%)</h3>
<p class="meta">entry <code>{{ r.entry }}</code>{% if r.note %} · {{ r.note }}{% endif %} ·
 <a href="#students">back to the table</a></p>
{% for x in r.exercises %}<details{% if x.open %} open{% endif %}>
<summary><strong>{{ x.position }}. {{ x.name }}</strong>: <span class="mark-{{ x.status }}">{{ x.label }}</span>,
 {{ fmt(x.score) }}/{{ fmt(x.max_score) }}{% if x.file %} · <code>{{ x.file }}</code>{% endif %}</summary>
{% if x.why %}<div class="msg">{{ x.why }}</div>{% endif %}
{% if x.note %}<p class="meta">{{ x.note }}</p>{% endif %}
<ul class="checks">{% for c in x.checks %}<li><span class="mark-{{ c.status }}">{{ c.mark }}</span> {{ c.title }}
{%- if c.hidden %} <span class="tag hidden">hidden</span>{% endif %} <span class="meta">{{ fmt(c.score) }}/{{
 fmt(c.max_score) }}</span>{% if c.message %}<div class="msg">{{ c.message }}</div>{% endif %}</li>{% endfor %}</ul>
</details>{% endfor %}
</section>{% endfor %}
</main>
<script>{{ script|safe }}</script>
</body>
</html>
"""
