"""The grading engine: everything on both sides of the process boundary, one subpackage per side.

`parent` starts a grading process and decides its verdict; `child` is the pytest plugin every grading
process is started with, which makes it a `judge` (never runs learner code), an `executor` (runs it), or
both in one; `common` is what every grading process has, whichever its role. `wire` is what crosses between
them, as data, and `contain` what holds a grading in. Imports run one way (`tests/test_layering.py`).
Nothing here knows of the terminal or of progress.
"""
