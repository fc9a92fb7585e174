"""How long the worker leaves a warm process idle between submissions.

Work done ahead for the next submission (a spare's rehearsal, pages copied before they are
written) costs CPU that a submission would otherwise spend itself, and saves it time. That
is worth it where the worker pauses between submissions, on CPU that is idle; a worker
grading back to back (a queue before a deadline) has no idle CPU, and there the work ahead
is CPU taken from the next grade. So it is done unless each of the last few submissions
came within ``AHEAD_AFTER_IDLE_S`` of the end of the one before. How long the worker
waited is no submission's doing: nothing of a submission decides it.
"""

from __future__ import annotations

import collections
import time

from . import walls

AHEAD_AFTER_IDLE_S = 0.05


class Pauses:
    def __init__(self, keep: int = 3) -> None:
        self._idle: collections.deque[float] = collections.deque(maxlen=keep)  # before each of the last
        # The last time the request pipe was found empty: what a submission's idle time is
        # measured to when it came while we were busy (forking a spare under load takes tens
        # of milliseconds, and counted as the worker's pause it made a queue look idle).
        self._quiet_at = 0.0
        self._ended = time.monotonic()  # when the last submission ended
        self.seen = 0  # submissions begun

    def quiet(self, requests: int, within: float = 0.0) -> bool:
        """No request waits (within ``within`` seconds); notes when that was last so."""
        if walls.readable(requests, within):
            return False
        self._quiet_at = time.monotonic()
        return True

    def began(self, waited: bool) -> None:
        """A submission's first request is read; ``waited``: it was there before the read."""
        self._idle.append(max(0.0, (self._quiet_at if waited else time.monotonic()) - self._ended))
        self.seen += 1

    def ended(self) -> None:
        self._ended = time.monotonic()

    def idle(self) -> bool:
        """Whether work ahead pays: the worker paused before at least one of the last few."""
        return len(self._idle) < self._idle.maxlen or max(self._idle) >= AHEAD_AFTER_IDLE_S
