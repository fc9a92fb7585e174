"""Everything the exercise sandbox runs, and what hidden tests import.

    api.py        the hidden tests' API, a pytest plugin: ``from grader.testing import points, ...``
    feedback.py   hints and messages in the student's language
    evidence.py   what a student's code did, read from data (the facts hints may state)
    harness.py    runs one suite under pytest and collects its verdicts
    warm.py       the sandbox's warm process, and the child that runs each grade

The API's names are handed out lazily, so that the warm process (``grader.testing.warm``)
imports torch only after it has dropped its privileges. Nothing here knows the service or
the worker (an import contract keeps it so); the worker is reached through
``grader.protocol`` frames.
"""

from __future__ import annotations

__all__ = [
    "points", "visible", "hint", "Hint", "Text", "Mistake", "Feedback", "StudentError", "Call",
    "expect_close", "expect_true", "hints_for_errors", "describe", "TensorState", "gradcheck_from_values",
    "expect_gradient", "expect_no_hand_made_grad", "expect_leaf", "rebuilds_graph", "calls_method",
    "mean_for_sum",
]


def __getattr__(name: str):
    if name in ("rebuilds_graph", "calls_method"):
        from grader.testing import evidence
        return getattr(evidence, name)
    if name in __all__:
        from grader.testing import api
        return getattr(api, name)
    raise AttributeError(f"module 'grader.testing' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
