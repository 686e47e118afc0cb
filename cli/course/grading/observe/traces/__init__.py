"""Reading what the learner's code traced and compiled: jaxprs, loops, matmuls, collectives, shardings."""
