"""Automated grading of PyTorch autograd exercises.

Kept import-free on purpose: the sandbox imports ``grader.engine.wire`` and
``grader.engine.inside`` and must not drag anything else in.
"""

__version__ = "0.1.0"
