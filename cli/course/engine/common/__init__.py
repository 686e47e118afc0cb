"""What every grading process has, whichever its role (judge, executor, or both in one).

The notary that holds the signing key (`notary`, its hook `notary_hook`) and the barrier and guard around it,
the standard streams, the peers of a multi-process grading, the learner's file loaded and described
(`submission`), and the compilation cache's settings. Runs inside the grading process; the parent uses only
the cache's upkeep and the barrier's note of trusted code (in the warm worker). The judge and the executor
both import it; it imports neither, nor the parent: only `wire` and `contain`.
"""
