"""`report.html`: one self-contained page, charts drawn by matplotlib, every student's text escaped."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path

from typer.testing import CliRunner

from class_helpers import SOLUTION, class_course, write_folder
from course.cli import app


class _Tags(HTMLParser):
    """Every tag of a page, with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        """Keep the tag."""
        self.tags.append((tag, dict(attrs)))


HOSTILE = "def double(x):\n    raise RuntimeError('<script>alert(1)</script><img src=http://evil.example/x>')\n"


def test_the_report_is_self_contained_and_escapes_student_text(tmp_path: Path, cli: CliRunner) -> None:
    """No script, no network address in any attribute, two SVG charts inline, the hostile message as text."""
    course, subs = class_course(tmp_path), tmp_path / "subs"
    write_folder(subs / "alice", {"ex_pass.py": SOLUTION, "ex_fail.py": SOLUTION})
    write_folder(subs / "mallory", {"ex_pass.py": HOSTILE})
    done = cli.invoke(app, ["grade", str(subs), "--out", str(tmp_path / "out"), "--course", str(course)])
    assert done.exit_code == 0, done.output
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    parser = _Tags()
    parser.feed(page)
    assert {tag for tag, _ in parser.tags} >= {"html", "table", "img"} and "script" not in {t for t, _ in parser.tags}
    links = [v for _, attrs in parser.tags for v in attrs.values() if v and re.match(r"(?:https?:)?//", v)]
    assert links == []  # nothing to fetch: every image is a data URI
    charts = re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(charts) == 2
    svgs = [base64.b64decode(c).decode() for c in charts]
    assert all(s.lstrip().startswith("<?xml") and "<svg" in s and "http://evil" not in s for s in svgs)
    assert "alice" in page and "mallory" in page and "Class course" in page
    assert "Isolation on: a private copy of each submitted file" in page
