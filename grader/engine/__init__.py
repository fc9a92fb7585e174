"""The grading engine: ``grade(exercise, source) -> Report``.

The worker's side of both sandboxes, and only that: what runs inside them is
``grader.inside`` (the student sandbox) and ``grader.testing`` (the exercise sandbox),
and they speak ``grader.protocol``. Everything here runs in the worker and runs neither's
code. This package's own import stays lazy and light.
"""

__all__ = ["grade", "Report", "TestResult", "SandboxUnavailable"]


def __getattr__(name):
    if name == "grade":
        from grader.engine.grading import grade
        return grade
    if name in ("Report", "TestResult"):
        from grader.protocol import report
        return getattr(report, name)
    if name == "SandboxUnavailable":
        from grader.engine.warm_process import SandboxUnavailable
        return SandboxUnavailable
    raise AttributeError(name)
