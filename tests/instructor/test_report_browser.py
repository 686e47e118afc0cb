"""`report.html` in a real browser (headless Chromium, where installed) at 1280 and 1920 pixels wide.

A probe added to a copy of the page (and to its Content-Security-Policy, by hash) measures what
the instructor sees: nothing wider than the window, the students' table scrolling in its own box
with name, total and percentage frozen at its left, every column sorting, each name linking to
its panel. Screenshots of each width are written beside the page for a person to look at.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from class_helpers import synthetic_run
from course.instructor import gradebook

CHROMIUM = next(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n))

REPO = Path(__file__).resolve().parents[2]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]
PROBE = """
(function () {
  var out = {}, box = document.querySelector(".scroll"), table = document.getElementById("students-table");
  var row = table.tBodies[0].rows[0], frozen = [".f1", ".f2", ".f3"].map(function (s) { return row.querySelector(s); });
  out.page_width = document.documentElement.scrollWidth; out.window = window.innerWidth;
  out.box_right = box.getBoundingClientRect().right; out.box_left = box.getBoundingClientRect().left;
  out.table_wider_than_box = table.scrollWidth > box.clientWidth;
  out.frozen_before = frozen.map(function (c) { return c.getBoundingClientRect().left; });
  out.frozen_right = frozen[2].getBoundingClientRect().right;
  box.scrollLeft = box.scrollWidth;
  out.scrolled = box.scrollLeft;
  out.frozen_after = frozen.map(function (c) { return c.getBoundingClientRect().left; });
  var last = row.cells[row.cells.length - 1].getBoundingClientRect();
  out.last_visible_after = last.right <= box.getBoundingClientRect().right + 1;
  var buttons = table.tHead.rows[0].querySelectorAll("button");
  function column(k) { return Array.prototype.map.call(table.tBodies[0].rows, function (r) {
    return parseFloat(r.cells[k].getAttribute("data-sort")); }); }
  buttons[1].click(); out.total_up = column(1);
  buttons[1].click(); out.total_down = column(1);
  buttons[3].click(); out.first_exercise_up = column(3);
  var link = table.tBodies[0].rows[0].querySelector("a");
  out.link_target = !!document.getElementById(link.getAttribute("href").slice(1));
  document.body.setAttribute("data-probe", JSON.stringify(out));
})();
"""


def _digest(script: str) -> str:
    """A script's hash as a Content-Security-Policy source."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


class _Probe(HTMLParser):
    """The probe's findings, from the body's attribute in the dumped DOM."""

    found: dict = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Keep the body's data-probe."""
        if tag == "body" and dict(attrs).get("data-probe"):
            self.found = json.loads(dict(attrs)["data-probe"])


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with a fresh profile."""
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                          timeout=120, check=False)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of a made-up class of 40 on this course's twelve exercises (wide enough to scroll)."""
    out = tmp_path_factory.mktemp("report")
    gradebook.write(synthetic_run(REPO, 40), out)
    return out / "report.html"


@pytest.mark.parametrize("width", [1280, 1920])
def test_the_report_fits_the_window_and_its_table_scrolls_with_name_and_totals_frozen(report: Path, width: int,
                                                                                      tmp_path: Path) -> None:
    """Measured in Chromium: no sideways scroll of the page; the table scrolls in its box with its first three
    columns held; the total sorts both ways; a name links to its panel."""
    page = report.read_text(encoding="utf-8")
    probed = re.sub(r"script-src ([^\"]+)\"", lambda m: f"script-src {m[1]} {_digest(PROBE)}\"", page, count=1)
    probed = probed.replace("</body>", f"<script>{PROBE}</script>\n</body>")
    copy = tmp_path / "probed.html"
    copy.write_text(probed, encoding="utf-8")
    done = _chromium([f"--window-size={width},900", "--virtual-time-budget=5000", "--dump-dom", copy.as_uri()],
                     tmp_path / "profile")
    parser = _Probe()
    parser.feed(done.stdout)
    seen = parser.found
    assert seen, done.stderr[-2000:]
    assert seen["page_width"] <= seen["window"] and seen["box_right"] <= seen["window"], seen
    assert seen["table_wider_than_box"] and seen["scrolled"] > 0, seen
    assert seen["frozen_before"] == pytest.approx(seen["frozen_after"], abs=1), seen  # held while the rest moved
    assert seen["frozen_right"] <= seen["box_left"] + 0.35 * width and seen["last_visible_after"], seen
    assert seen["total_up"] == sorted(seen["total_up"]) and seen["total_down"] == sorted(seen["total_down"])[::-1]
    assert seen["first_exercise_up"] == sorted(seen["first_exercise_up"]) and seen["link_target"], seen
    shot = report.with_name(f"report-{width}.png")
    _chromium([f"--window-size={width},1100", f"--screenshot={shot}", report.as_uri()], tmp_path / "profile2")
    assert shot.is_file() and shot.stat().st_size > 10_000
