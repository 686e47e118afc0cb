"""The executor: the grading process that imports and runs the learner's code for the judge (`serve`).

It makes each call as asked (`asks`), keeps the objects that cannot cross by number (`held`), and sends back
only `wire` data: values and exceptions (`values`), traces, and the programs its calls ran (`runs`). It
imports `wire`, `contain` and `common`, never the judge.
"""
