"""Tests of `course.grading`, laid out as the package is (`judge/`, `observe/calls|traces|kernels/`).

This folder's own modules (`eight_devices`, `pipelines`, `package_table`) are shared by the tests in
the folders below; pytest puts the folder of a `conftest.py` on the import path, so they import by
their bare names from anywhere under it.
"""
