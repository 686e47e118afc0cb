"""The parent: the `course` process that starts gradings, holds them to their limits and reads their verdicts.

It builds each grading's command line and environment (`invocation`), launches it cold or from the warm worker
(`isolation`, `tree` for its processes; `worker`, whose `forkserver` process forks gradings but runs no JAX
once `warmup` has imported what they need), starts the judge of a split grading (`judging`) and the processes
of a cohort (`cohort`, `lockstep`), and turns each signed report into a verdict (`verdict`, `verdict_text`).
Only data crosses from the children: the signed report (`wire.report`), events and output on pipes. It imports
`wire`, `contain` and `common`, never `judge`, `executor` or `child`.
"""
