"""What the judge concludes with: values compared, program texts read, learner's lines and errors told.

These helpers take what a call gave back (arrays, plain values, the texts of programs, what was raised)
and never run, trace or instrument the learner's code, so a split grading's judge uses them in a process
that never imports the learner's file (docs/security.md, "The judge"). They import nothing from
`course.grading.observe` (tests/test_layering.py holds them to it).
"""
