"""LTI 1.3: the grader as a tool an LMS launches (login, launch, deep linking, the tool's
JWKS and configuration document), score passback (tasks.py) and platform registration.

pylti1p3 is used only in tool.py, behind an interface of ours. The blueprint ``bp``
(views.py) is loaded when first asked for, so that `grader lti ...` starts without Flask.
"""


def __getattr__(name: str):
    if name in ("bp", "views"):
        import importlib

        views = importlib.import_module("grader.lti.views")
        return views.bp if name == "bp" else views
    raise AttributeError(f"module 'grader.lti' has no attribute {name!r}")
