"""What crosses between the processes of a grading, as data: the framed messages of judge and executor
(`wire`), traces (`jaxprs` written, `jaxpr_objects` and `jaxpr_values` read back), arrays and their placement,
the signed report a grading process hands its parent (`report`), and the gate the parent opens (`gate`).

Imported on both sides of every border (parent, judge, executor); it imports nothing else of the engine, so
that what one side writes and the other reads is defined once. Everything read here is hostile input.
"""
