"""Naming rules shared by the schema and the registry, kept apart so neither import is heavy."""

from __future__ import annotations

import re

NAME_RE = re.compile(r"^[a-z0-9_]{1,40}$")
"""An exercise name: lower-case letters, digits and `_`, at most 40 characters."""
