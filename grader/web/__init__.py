"""The pages students and instructors use: signing in, exercises, submissions."""

from flask import Blueprint

bp = Blueprint("web", __name__)

from grader.web import account, analytics, auth, check_rows, client, comments, courses, headers, instructor, invitations, mail, people, practice, similarity, student_work, tokens, views  # noqa: E402,F401  (they add routes to bp)
