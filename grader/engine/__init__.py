"""The grading engine: ``grade(exercise, source) -> Report``.

Only ``inside/`` is mounted into the sandbox; the rest is the trusted side. This
package's own import stays lazy and light.
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
        from grader.engine.sandbox import SandboxUnavailable
        return SandboxUnavailable
    raise AttributeError(name)
