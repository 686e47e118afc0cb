"""Allow `python -m course`."""

from course.cli import main

main()
