"""What runs inside the exercise sandbox: the instructor's hidden tests, under pytest.

The exercise's code is untrusted for the host: it runs in a sandbox of its own
(``warm.py``), never in the worker that holds the database and broker credentials,
and reaches the student's code only through the worker (``protocol.py``). Modules
here import the standard library, torch, pytest and the engine's ``inside`` and
``report`` modules, nothing of the service (kept by an import contract).
"""
