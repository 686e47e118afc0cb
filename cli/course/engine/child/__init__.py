"""The grading process's entry: the pytest plugins it is started with (`-p course.engine.child.plugin`, or
`course.engine.child.inspector` for an inspection run).

Runs in the grading process the parent starts. `plugin` sets the process up and `grading` follows its checks;
`roles` decides the process's role (judge, executor, or both in one) and installs it, so this is the one
package that imports both `judge` and `executor`. What crosses to the parent is only what the notary signs
(`wire.report`) and the events on its pipe.
"""
