"""What crosses between the processes of a grading, as data.

The framed messages of judge and executor (`wire`), traces (`jaxprs` written, `jaxpr_objects` and
`jaxpr_values` read back, `jaxpr_classes`, `trace_effects` and `trace_shardings` shared), arrays and their
placement (`placement`), the signed report a grading process hands its parent (`report`, and an inspection's
`observation`), and the gate the parent opens (`gate`). Imported on every side of every border; it imports
nothing else of the engine, so that what one side writes and the other reads is defined once. Everything read
here is hostile input.
"""
