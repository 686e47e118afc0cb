"""Calling the learner's code and recording what it did: compiles, executions, jit builds, waits, donations."""
