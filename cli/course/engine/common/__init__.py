"""What every grading process has, whichever its role (judge, executor, or both in one): the notary that
holds the signing key and the barrier and guard around it, its standard streams, its peers in a multi-process
grading, the learner's file loaded and described, and the compilation cache's settings.

Runs inside the grading process (the parent reads only constants and the cache's upkeep from it); the judge
and the executor both import it, and it imports neither, nor the parent: only `wire` and `contain`.
"""
