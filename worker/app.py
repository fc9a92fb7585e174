"""The Celery app. Importing it imports no engine: the web side enqueues through it.

Run a worker with:  celery -A worker.app:celery worker -Q cpu   (or -Q gpu, one per GPU)
"""

from __future__ import annotations

import os

from celery import Celery

from grader.settings import settings

# The longest a grade may take (the longest exercise's submission limit, with room);
# Redis must not hand an unacknowledged task to another worker before then. The
# sweeper resends a submission still running this long after it started.
GRADE_HARD_LIMIT = int(os.environ.get("GRADER_GRADE_LIMIT_S", 360))
GRADE_SOFT_LIMIT = max(1, GRADE_HARD_LIMIT - 60 if GRADE_HARD_LIMIT > 120 else GRADE_HARD_LIMIT * 5 // 6)


def make_celery() -> Celery:
    config = settings()
    app = Celery("grader", broker=config.redis_url,
                 include=["worker.tasks", "grader.lti.tasks", "grader.webhooks.tasks"])
    app.conf.update(
        task_default_queue="cpu",
        task_acks_late=True,                # a task is done when graded, not when received
        task_reject_on_worker_lost=True,    # a worker killed mid-grade puts it back
        worker_prefetch_multiplier=1,
        task_soft_time_limit=GRADE_SOFT_LIMIT,
        task_time_limit=GRADE_HARD_LIMIT,
        broker_transport_options={"visibility_timeout": GRADE_HARD_LIMIT * 2},
        broker_connection_retry_on_startup=True,
        # A Redis blip must not cut a grade short: it finishes and is stored; the copy
        # Redis may deliver again finds the row graded and does nothing.
        worker_cancel_long_running_tasks_on_connection_loss=False,
        task_ignore_result=True,            # results live in the database
        beat_schedule={"sweep-stuck-submissions": {"task": "grader.sweep_stuck", "schedule": 30.0}},
    )
    return app


celery = make_celery()
