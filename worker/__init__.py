"""Celery workers: a thin adapter from the queue to grader.engine and the database."""
