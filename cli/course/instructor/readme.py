"""The README a release gives students: setting up, the learner's tour and the notebook workflow, nothing else.

It is made from the course's own README, so the tour students read is the one the course keeps:
the introduction (without the line that runs the project's tests), the learner's tour and any
notebook section are kept; the instructor's tour and the developers' notes are left out, and a
link to a file the release does not hold keeps only its text. What the course's README lacks (a
set-up section for students, a notebook section) is written here.
"""

from __future__ import annotations

import re

SETUP = """## Set up

You need Python 3.11 or newer. In this folder:

```console
$ python3 -m venv .venv && . .venv/bin/activate
$ pip install -e .
$ course
```

The last line lists the exercises and says what to do next. JAX {jax} is pinned and everything
runs on the CPU, so your grades do not depend on your machine. Your progress is kept in
`.course/progress.json`; `course reset NAME` keeps your own version in `.course/backups/` before
it brings a stub back.
"""

TOUR = """## A learner's tour

```console
$ course                      # the exercises, your status, and what to do next
$ course show NAME            # the lesson and the task, and the file to edit
$ course check                # grade the current exercise (the first one not passed)
$ course hint NAME            # one hint at a time
$ course watch                # re-grade on every save
$ course progress             # what has passed and your points
```
"""

NOTEBOOK = """## In a notebook

You can work in Jupyter instead of an editor: the same graders run, on the same files.

```python
%load_ext course
%course check NAME          # grade an exercise, as `course check NAME` does
```

A cell that starts with `%%course NAME` is graded as your file for that exercise, and
`course.check("NAME")` does the same from plain Python.
"""

_SECTION = re.compile(r"^## ", re.MULTILINE)
_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_KEEP = re.compile(r"learner|notebook|jupyter|student", re.IGNORECASE)
_DROP = re.compile(r"pytest|\[test\]|run the tests|^both need|instructor|developer", re.IGNORECASE)


def _sections(text: str) -> tuple[str, list[str]]:
    """The text before the first `## ` heading, and each `## ` section (heading included)."""
    starts = [m.start() for m in _SECTION.finditer(text)]
    if not starts:
        return text, []
    return text[: starts[0]], [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]


def _unlinked(text: str, present: set[str]) -> str:
    """Links to files the release does not hold keep their text only."""

    def one(match: re.Match[str]) -> str:
        """A link kept when its target is in the release or on the web."""
        target = match[2].split("#")[0].rstrip("/")
        keep = not target or "://" in target or target in present or any(p.startswith(target + "/") for p in present)
        return match[0] if keep else match[1]

    return _LINK.sub(one, text)


def student_readme(course_readme: str, title: str, jax_version: str, present: set[str]) -> str:
    """The release's README.md, from the course's README (`present`: the release's files, as POSIX paths)."""
    intro, sections = _sections(course_readme)
    heading = next((line for line in intro.splitlines() if line.startswith("# ")), f"# {title}")
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", intro) if p.strip() and p.strip() != heading]
    kept_intro = [p for p in paragraphs if not p.startswith(("- ", "* ")) and not _DROP.search(p)]
    kept = [s.strip() for s in sections if _KEEP.search(s.splitlines()[0]) and not _DROP.search(s.splitlines()[0])]
    if not any(re.search(r"learner|tour", s.splitlines()[0], re.IGNORECASE) for s in kept):
        kept.insert(0, TOUR.strip())
    if not any(re.search(r"notebook|jupyter", s.splitlines()[0], re.IGNORECASE) for s in kept):
        kept.append(NOTEBOOK.strip())
    parts = [heading, *kept_intro, SETUP.format(jax=jax_version).strip(), *kept]
    return _unlinked("\n\n".join(parts), present) + "\n"
