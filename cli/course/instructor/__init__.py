"""Instructor commands behind `course new` and `course validate`: scaffolding and soundness checks."""
