"""The judge: the grading process that runs checks marked `judge` and never imports the learner's file.

`remote` stands for the learner's module and `proxies` for its functions and objects; every use becomes a
request through the `link` to the executor, and what comes back (`wire` messages, traces, arrays) is read as
hostile data and checked to be one program (`consistency`). It imports `wire`, `contain` and `common`, never
the executor.
"""
