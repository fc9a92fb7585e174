"""The one Celery app. Importing it imports no engine: the web side enqueues through it.

Each domain's tasks live beside its models (grader/<domain>/tasks.py) and are named in
``include`` below, so a worker loads them all. Run a worker with:

    celery -A grader.tasks:celery worker -Q cpu,cpu-regrade   (or -Q gpu,gpu-regrade, one per GPU)
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import threading

from celery import Celery, signals

from grader import logs, metrics
from grader.settings import Settings, settings

# The longest a grade may take (the longest exercise's submission limit, with room);
# Redis must not hand an unacknowledged task to another worker before then. The
# sweeper resends a submission still running this long after it started.
GRADE_HARD_LIMIT = settings().grade_limit_s
GRADE_SOFT_LIMIT = max(1, GRADE_HARD_LIMIT - 60 if GRADE_HARD_LIMIT > 120 else GRADE_HARD_LIMIT * 5 // 6)
# Every deployment has CPU workers: tasks that only talk HTTP or SQL go there.
NOTIFY_QUEUE = "cpu"
TASK_MODULES = ["grader.submissions.tasks", "grader.catalog.tasks", "grader.courses.tasks", "grader.lti.tasks",
                "grader.webhooks.tasks", "grader.mail.tasks"]


def make_celery(config: Settings | None = None) -> Celery:
    config = config or settings()
    app = Celery("grader", broker=config.redis_url, include=TASK_MODULES)
    app.conf.update(
        task_default_queue="cpu",
        task_acks_late=True,                # a task is done when graded, not when received
        task_reject_on_worker_lost=True,    # a worker killed mid-grade puts it back
        worker_prefetch_multiplier=1,
        task_soft_time_limit=GRADE_SOFT_LIMIT,
        task_time_limit=GRADE_HARD_LIMIT,
        # A worker given "-Q cpu,cpu-regrade" takes from the first queue while it holds work:
        # a regrade never delays a live submission behind it.
        broker_transport_options={"visibility_timeout": GRADE_HARD_LIMIT * 2, "queue_order_strategy": "priority"},
        broker_connection_retry_on_startup=True,
        # A Redis blip must not cut a grade short: it finishes and is stored; the copy
        # Redis may deliver again finds the row graded and does nothing.
        worker_cancel_long_running_tasks_on_connection_loss=False,
        task_ignore_result=True,            # results live in the database
        beat_schedule={"sweep-stuck-submissions": {"task": "grader.sweep_stuck", "schedule": 30.0},
                       "end-lost-checks": {"task": "grader.end_lost_checks", "schedule": 60.0},
                       "sweep-stuck-regrades": {"task": "grader.sweep_regrades", "schedule": 60.0},
                       # LMS scores held with hidden results go once their release comes
                       "release-held-lti-scores": {"task": "grader.lti.release_held", "schedule": 60.0},
                       "resend-lost-mail": {"task": "grader.mail.sweep", "schedule": 300.0},
                       # notices held over an address's hourly limit, sent as one mail
                       "send-mail-digests": {"task": "grader.mail.digest", "schedule": 600.0},
                       # students with an assignment due within a day and attempts left
                       "remind-due-assignments": {"task": "grader.courses.remind_due", "schedule": 900.0},
                       # staff comments made while feedback was held, told once it is released
                       "tell-released-comments": {"task": "grader.courses.tell_comments", "schedule": 300.0}},
    )
    return app


celery = make_celery()
# A worker's logs as JSON lines where GRADER_LOG_FORMAT=json; its metrics served where
# GRADER_WORKER_METRICS_PORT is set (grader/ops/).
signals.after_setup_logger.connect(logs.for_celery, weak=False)
signals.after_setup_task_logger.connect(logs.for_celery, weak=False)
signals.worker_init.connect(metrics.serve_for_worker, weak=False)

# ------------------------------------------------------------------ who is grading now

# A worker that is up says so in Redis every few seconds, with the queues it takes, in one
# hash of every worker's word (read in one round trip: the submission page asks on each poll);
# its word lapses soon after it stops (killed, out of memory, the machine gone), so the pages
# can tell a student within seconds that their grade waits for a worker to come back. Times
# are Redis's own, so the web's and the workers' clocks need not agree.
HEARTBEAT_S = 3.0
HEARTBEAT_TTL_S = 10
_WORKERS = "grader:workers"
_beating = threading.Event()


@functools.lru_cache(maxsize=8)
def _redis_at(url: str):
    import redis

    return redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)


def _redis():
    """A client of the service's Redis, made once per URL (its pool survives a fork)."""
    return _redis_at(settings().redis_url)


def _beat_while_up(sender=None, **_kwargs) -> None:
    hostname = getattr(sender, "hostname", None) or "worker"
    queues = sorted(sender.app.amqp.queues.consume_from) if sender is not None else []
    client = _redis()

    def say_up():
        try:
            seconds, _ = client.time()
            client.hset(_WORKERS, hostname, json.dumps({"queues": queues, "until": seconds + HEARTBEAT_TTL_S}))
        except Exception:  # Redis away for a moment: the next beat tries again
            pass

    def beat():
        while not _beating.wait(HEARTBEAT_S):
            say_up()
        try:
            client.hdel(_WORKERS, hostname)
        except Exception:
            pass

    say_up()
    threading.Thread(target=beat, name="grader-heartbeat", daemon=True).start()


def _stop_beating(**_kwargs) -> None:
    _beating.set()


def _settled(**_kwargs) -> None:
    """What a worker loaded to start (torch, the app, the tasks) lives as long as it does:
    out of the collector's sight, so that neither each collection nor the one at exit walks
    it again (about half a second of CPU at each stop)."""
    gc.freeze()


signals.worker_ready.connect(_beat_while_up, weak=False)
signals.worker_ready.connect(_settled, weak=False)
signals.worker_shutdown.connect(_stop_beating, weak=False)


_GRADING = "grader:grading:"


@contextlib.contextmanager
def grading_on(hostname: str, submission_id: str):
    """While a worker grades a submission, Redis knows which worker: should it die mid-grade,
    the same worker started again (`grader up` restarts it under its name) takes the grade up
    at once (:func:`orphans_of`), rather than after the sweeper's deadline."""
    key = _GRADING + submission_id
    try:
        _redis().set(key, hostname, ex=GRADE_HARD_LIMIT * 2)
    except Exception:  # Redis away: the sweeper remains
        pass
    try:
        yield
    finally:
        try:
            _redis().delete(key)
        except Exception:
            pass


def orphans_of(hostname: str) -> list[str]:
    """The submissions a worker of this name was grading when it died (asked as a worker of
    that name starts, when it grades nothing yet); each is forgotten as it is returned."""
    try:
        client = _redis()
        keys = list(client.scan_iter(match=_GRADING + "*", count=500))
        values = client.mget(keys) if keys else []
        mine = [key for key, value in zip(keys, values) if value is not None and value.decode() == hostname]
        if mine:
            client.delete(*mine)
    except Exception:
        return []
    return [key.decode()[len(_GRADING):] for key in mine]


def workers_taking(queue: str | None) -> int | None:
    """How many workers that take ``queue`` (None: any) said within the last seconds that
    they are up; None when Redis cannot be asked (then nobody can tell)."""
    try:
        with _redis().pipeline(transaction=False) as pipe:
            (seconds, _), said = pipe.time().hgetall(_WORKERS).execute()
    except Exception:
        return None
    words = [json.loads(value) for value in said.values()]
    return sum(1 for word in words
               if word.get("until", 0) > seconds and (queue is None or queue in word.get("queues", [])))


def send_task(name: str, args: list, *, queue: str, countdown: float | None = None) -> None:
    """Enqueue a task by name: the sender needs none of the task's code (the web process
    imports no engine)."""
    celery.send_task(name, args=args, queue=queue, countdown=countdown)


def queue_for(device: str) -> str:
    """cpu exercises go to the cpu queue, cuda ones to gpu; "any" to gpu only where the
    deployment has GPU workers."""
    if device == "cuda" or (device == "any" and settings().gpu_queue):
        return "gpu"
    return "cpu"


def backoff(retries: int, base: float, cap: float = 600.0) -> float:
    """Seconds before a task's next try: base, 2*base, 4*base... at most ``cap`` (below
    the broker's visibility timeout, so a waiting task is not handed out twice)."""
    return min(cap, base * 2 ** retries)
