"""What holds a grading process in: its sandbox, the protections this machine gives, what the operating system
offers, and its limits.

`sandbox` and `contain` are run by path (stdlib only) before a cold grading starts, and must stay in one
folder: the first loads the second by path. `protections` probes the machine; `system`, `proctable` and
`cgroups` are the operating system's offers; `limits` the budget. Used by the parent, which applies them, and
by the grading process, which enters them; it imports nothing of the engine but `wire`.
"""
