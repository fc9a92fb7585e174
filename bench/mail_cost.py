"""What mail costs a request, and how much mail a class gets.

    .venv/bin/python bench/mail_cost.py [--n 40] [--students 300]

1. "Forgot your password?" and a roster import of one new student (both queue a mail), timed
   in the web app with a real SMTP server (aiosmtpd on loopback) answering, then with nothing
   listening on its port, and against a baseline page that queues no mail, in the same run:
   the mail is sent by a worker's task after the request, so the SMTP server's state should
   change nothing.
2. A class of ``--students`` with one assignment due within a day, a third of them at full
   marks: the mails the day's periodic tasks queue (one reminder per student with attempts
   left), and how long the reminder pass takes.

Needs a Redis at GRADER_REDIS_URL (default redis://127.0.0.1:6379/0; database 15 is used and
flushed) and writes a SQLite database in a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--students", type=int, default=300)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="mail-bench-"))
    redis_url = os.environ.get("GRADER_REDIS_URL", "redis://127.0.0.1:6379/0").rsplit("/", 1)[0] + "/15"
    os.environ.update(GRADER_REDIS_URL=redis_url, GRADER_INSTANCE_DIR=str(folder / "instance"),
                      GRADER_PUBLIC_URL="https://grader.example.edu")
    import logging

    import redis as redis_py
    from sqlalchemy import select

    from grader import clock, courses, db
    from grader.accounts import users
    from grader.accounts.models import User
    from grader.app import create_app
    from grader.courses import notices
    from tests.live import publish_basics
    from tests.mailbox import Mailbox

    redis_py.Redis.from_url(redis_url).flushdb()
    logging.getLogger("grader.mail").setLevel(logging.ERROR)  # the per-address cap drops most resets here
    url = f"sqlite:///{folder / 'grader.db'}"
    db.upgrade(url)
    publish_basics(url)
    with db.transaction(url) as s:
        prof = users.create_user(s, email="prof@example.org", password="correct horse", role="instructor")
        course_id = courses.create_course(s, title="Deep learning", code="DL101", instructor=prof).id
        users.create_user(s, email="ada@example.org", password="correct horse")
    app = create_app({"TESTING": True, "DATABASE_URL": url, "RATELIMIT_ENABLED": False, "WTF_CSRF_ENABLED": False})
    client = app.test_client()
    client.post("/login", data={"email": "prof@example.org", "password": "correct horse"})
    box = Mailbox(folder).start()
    os.environ["GRADER_SMTP_URL"] = box.url
    counter = iter(range(10**9))

    def forgot():
        client.post("/password/forgot", data={"email": "ada@example.org"})

    def roster():
        client.post(f"/courses/{course_id}/members",
                    data={"roster_text": f"email,name,role\nnew{next(counter)}@example.org,New,student\n"})

    def page():
        client.get("/password/forgot")

    def timed(step) -> list[float]:
        step()
        out = []
        for _ in range(args.n):
            started = time.perf_counter()
            step()
            out.append((time.perf_counter() - started) * 1000)
        return out

    rows = []
    for state in ("answering", "down"):
        if state == "down":
            box.stop()
        for name, step in (("page, no mail (baseline)", page), ("forgot password", forgot),
                           ("roster of one new student", roster)):
            ms = timed(step)
            rows.append((state, name, statistics.median(ms), statistics.quantiles(ms, n=20)[-1]))
    base = {state: p50 for state, name, p50, _ in rows if name.startswith("page")}
    print(f"{'SMTP server':<11} {'request':<27} {'p50 ms':>7} {'p95 ms':>7} {'× baseline':>10}")
    for state, name, p50, p95 in rows:
        print(f"{state:<11} {name:<27} {p50:7.1f} {p95:7.1f} {p50 / base[state]:10.2f}")

    # A class of N with one assignment due in twelve hours.
    with db.transaction(url) as s:
        course = courses.create_course(s, title="Big class", code="DL102")
        assignment = courses.create_assignment(s, course, exercise="autograd-basics", title="Gradients",
                                               due_at=(clock.now() + timedelta(hours=12)).isoformat())
        from grader import submissions
        for i in range(args.students):
            user = users.create_user(s, email=f"s{i}@example.org", password=None, name=f"S{i}")
            courses.set_role(s, course.id, user.id, "student")
            if i % 3 == 0:
                row = submissions.create(s, user=user, exercise_slug="autograd-basics", source="x = 1\n",
                                         assignment_id=assignment.id)
                row.status, row.score, row.max_score = "graded", 6.0, 6.0
    started = time.perf_counter()
    with db.transaction(url) as s:
        queued = notices.remind_due(s)
    took = time.perf_counter() - started
    with db.transaction(url) as s:
        again = notices.remind_due(s)
    print(f"\na class of {args.students}, one assignment due within a day, a third at full marks:")
    print(f"  reminders queued: {queued} (then {again} on the next pass: each student once), "
          f"in {took * 1000:.0f} ms ({took * 1000 / args.students:.2f} ms per student)")
    print(f"  mails that day for the class: {queued} reminders; grade notices only for grades over "
          f"{notices.SLOW_GRADE.seconds} s or failed")


if __name__ == "__main__":
    main()
