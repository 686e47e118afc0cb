"""What the executor watches the learner's code do, in the process that runs it, by topic:

- `calls`: calling it and recording what happened (compiles, executions, jit builds, host waits,
  donations, strict TPU runs);
- `traces`: reading what it traced and compiled (jaxprs, loops, matmuls, collectives, shardings);
- `kernels`: its Pallas kernels (refs and memory spaces, grids, DMAs and semaphores, a shadow
  interpreter of the kernel body).

In a judge check, a helper here that is handed the learner's function seen from the judge asks the
executor to do the work and sends back raw artifacts that the judge reads (`jit_calls`).
"""
