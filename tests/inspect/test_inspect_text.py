"""Folding `course inspect`'s verbatim text to the terminal: between words, under its own line number, never wider."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from course import ui
from course.ui.inspection_kernels import listing, source
from course.ui.inspection_text import fit

DOT = "l:f32[128,128] = dot_general[ dimension_numbers=(([1], [1]), ([], [])) preferred_element_type=float32 ] j k"


def test_a_long_equation_folds_between_words_under_itself() -> None:
    """Every line fits, continuation lines hang under the first, and no word is split."""
    lines = fit(DOT, 40, hang=4)
    assert len(lines) > 1 and all(len(line) <= 40 for line in lines)
    assert all(line.startswith("    ") for line in lines[1:])
    assert re.findall(r"\w+", " ".join(lines)) == re.findall(r"\w+", DOT)


def test_a_text_past_the_line_limit_is_elided_and_says_so() -> None:
    """A text that would take more than four lines ends its fourth in `…`."""
    lines = fit(" ".join(["word"] * 80), 30, hang=2)
    assert len(lines) == 4 and lines[-1].endswith(" …") and all(len(line) <= 30 for line in lines)


@pytest.mark.parametrize("width", [80, 60])
def test_the_line_column_is_not_padded_past_the_terminal(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Short rows keep `line N` in one column that fits; a long row folds under its own number."""
    buffer = io.StringIO()
    monkeypatch.setattr(ui, "out", Console(file=buffer, width=width, color_system=None))
    rows = [{"depth": 0, "text": "j:f32[128,64] <- q_ref[...]", "n": 1, "kind": "load", "line": 27},
            {"depth": 0, "text": DOT, "n": None, "kind": None, "line": 27},
            {"depth": 1, "text": "m:f32[128,128] = mul l 0.125:f32[]", "n": None, "kind": None, "line": 28}]
    listing({"rows": rows}, indent=6)
    source({"27": "s = lax.dot_general(q_ref[...], k_ref[...], (((1,), (1,)), ((), ())), preferred_element_type="
                  "jnp.float32)"}, indent=6)
    lines = buffer.getvalue().splitlines()
    assert all(len(line) <= width for line in lines)
    tagged = [line for line in lines if re.search(r"  line \d+$", line)]
    assert len(tagged) == 3 and len({line.rindex("line") for line in tagged}) == 1
    assert lines[1].startswith("        1 j:f32[128,64]") and "dot_general" in lines[2]
