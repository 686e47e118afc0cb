"""Allow `python -m course`."""

from course.entry import main

main()
