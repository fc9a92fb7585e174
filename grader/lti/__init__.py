"""LTI 1.3: the grader as a tool an LMS launches (login, launch, deep linking, the tool's
JWKS and configuration document), score passback (tasks.py) and platform registration.

pylti1p3 is used only in tool.py, behind an interface of ours. The blueprint ``bp`` is
views.py's; this package's own import loads nothing, so that `grader lti ...` starts
without Flask.
"""
