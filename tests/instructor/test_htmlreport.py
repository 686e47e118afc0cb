"""`report.html`: one self-contained page an instructor works from; its structure, checked without a browser.

(`test_report_browser.py` looks at it in Chromium where one is installed.)
"""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser

import pytest
from typer.testing import CliRunner

from class_helpers import SOLUTION, STUB, WRONG, class_course, write_folder
from course.cli import app

HOSTILE = "def double(x):\n    raise RuntimeError('<script>alert(1)</script><img src=http://evil.example/x>')\n"
LOOPS = "def double(x):\n    while True:\n        pass\n"


class _Tags(HTMLParser):
    """Every tag of a page with its attributes, and the text of its scripts."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Keep the tag."""
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_data(self, data: str) -> None:
        """Keep a script's text."""
        if self._in_script:
            self.scripts.append(data)

    def handle_endtag(self, tag: str) -> None:
        """A script ends."""
        self._in_script = False

    def with_attr(self, name: str) -> list[dict[str, str | None]]:
        """The attributes of every tag that has `name`."""
        return [attrs for _, attrs in self.tags if name in attrs]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, _Tags]:
    """A small class graded for real: full marks, a hostile message, a file too large, a stub, a timeout
    (ex_pass is given a 2 s limit here)."""
    tmp_path = tmp_path_factory.mktemp("graded")
    course, subs = class_course(tmp_path), tmp_path / "subs"
    meta = course / "exercises" / "01_ex_pass" / "exercise.toml"
    meta.write_text(re.sub(r"(?m)^timeout_s *=.*$", "", meta.read_text()) + "timeout_s = 2\n", encoding="utf-8")
    write_folder(subs / "alice", {"ex_pass.py": SOLUTION, "ex_fail.py": SOLUTION})
    write_folder(subs / "mallory", {"ex_pass.py": HOSTILE, "ex_fail.py": WRONG})
    write_folder(subs / "olga", {"ex_pass.py": "#" * (2 << 20), "ex_fail.py": STUB})
    write_folder(subs / "tim", {"ex_pass.py": STUB})
    write_folder(subs / "wallace", {"ex_pass.py": LOOPS})
    env = {"COURSE_NO_PROGRESS": "1", "COURSE_ROOT": None, "COURSE_WORKSPACE": None, "COURSE_DEBUG": None}
    done = CliRunner().invoke(app, ["grade", str(subs), "--out", str(tmp_path / "out"), "--course", str(course)],
                              env=env)
    assert done.exit_code == 0, done.output
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(page)
    return page, parser


def test_the_report_is_self_contained_and_runs_only_its_own_script(graded: tuple[str, _Tags]) -> None:
    """Nothing to fetch; student text escaped; the one script allowed by its hash in the page's policy."""
    page, parser = graded
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    links = [v for attrs in (a for _, a in parser.tags) for v in attrs.values() if v and re.match(r"(?:https?:)?//", v)]
    assert links == []  # every image is a data URI
    policy = next(a["content"] for t, a in parser.tags if t == "meta" and a.get("http-equiv") ==
                  "Content-Security-Policy")
    assert "default-src 'none'" in policy and "img-src data:" in policy
    assert len(parser.scripts) == 1
    digest = base64.b64encode(hashlib.sha256(parser.scripts[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy
    charts = re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(charts) == 1 + 2 * 2  # the totals, and per exercise its scores and its checks
    assert all("http://evil" not in base64.b64decode(c).decode() for c in charts)


def test_the_report_says_when_and_how_and_what_each_exercise_did(graded: tuple[str, _Tags]) -> None:
    """Date, course version, seed, graded now and reused; per exercise the counts; check charts by title."""
    page = graded[0]
    page = " ".join(page.split())
    assert re.search(r"Graded \d{4}-\d\d-\d\dT[\d:]+Z · course \d", page) and " · seed " in page
    assert "5 graded in this run, 0 reused" in page
    assert "4 tried · passed 1 · failed 2 · timed out 1 · errors 0 · not tried 1" in page  # ex_pass
    assert "3 tried · passed 1 · failed 2 · timed out 0 · errors 0 · not tried 2" in page  # ex_fail
    assert "1 student who tried nothing not drawn" in page  # tim: the stub only
    assert "double works on negative numbers." in page and "hidden" in page


def test_the_students_table_sorts_and_links_each_name_to_a_panel(graded: tuple[str, _Tags]) -> None:
    """Name, total and percent first and frozen; every heading a sort button; each name a link to its panel,
    where each check and message is, and a file too large or not tried says so."""
    page, parser = graded
    table = page[page.index('id="students-table"'):page.index("</table>", page.index('id="students-table"'))]
    heads = re.findall(r'<th class="([^"]*)"><button type="button"[^>]*>([^<]+)</button>', table)
    assert [h[1] for h in heads[:3]] == ["student", "total", "%"] and [h[0][:2] for h in heads[:3]] == ["f1", "f2",
                                                                                                        "f3"]
    assert len(heads) == 3 + 2
    anchors = [a["href"][1:] for a in parser.with_attr("href") if a["href"].startswith("#student-")]
    ids = {a["id"] for a in parser.with_attr("id")}
    assert sorted(anchors) == sorted(f"student-{s}" for s in ("alice", "mallory", "olga", "tim", "wallace"))
    assert set(anchors) <= ids
    olga = page[page.index('id="student-olga"'):]
    olga = olga[: olga.index("</section>")]
    assert "file too large" in olga and "over the 1048576 byte limit" in olga
    tim = page[page.index('id="student-tim"'):]
    assert "not tried" in tim[: tim.index("</section>")]
    mallory = page[page.index('id="student-mallory"'):]
    assert "RuntimeError" in mallory[: mallory.index("</section>")]
    wallace = page[page.index('id="student-wallace"'):]
    assert "timed out" in wallace[: wallace.index("</section>")] and ">timed out 0/3<" in table
    assert re.search(r'data-sort="-?[\d.]+">(not tried|file too large|\d)', table)
