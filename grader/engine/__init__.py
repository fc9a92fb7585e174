"""The grading engine: ``grade(exercise, source) -> Report``.

The worker's side of both sandboxes: ``inside/`` is the only code mounted into the
student sandbox, ``grader/suite/`` what runs in the exercise sandbox; the rest runs in
the worker and runs neither's code. This package's own import stays lazy and light.
"""

__all__ = ["grade", "Report", "TestResult", "SandboxUnavailable"]


def __getattr__(name):
    if name == "grade":
        from grader.engine.grading import grade
        return grade
    if name in ("Report", "TestResult"):
        from grader.engine import report
        return getattr(report, name)
    if name == "SandboxUnavailable":
        from grader.engine.warm_process import SandboxUnavailable
        return SandboxUnavailable
    raise AttributeError(name)
