"""Automated grading of PyTorch autograd exercises.

Kept import-free on purpose: importing any part of the service must not drag in the
rest (the web process never loads the engine or torch).
"""

__version__ = "0.1.0"
