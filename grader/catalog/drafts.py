"""Drafts and release: an exercise published through an upload (the instructor page, the
API, `grader exercise push`) is a draft until its owner releases it to the catalogue.

A draft is shown to its author (the user or API key whose upload it is graded with now),
to the administrators, and to the staff of the courses whose assignments place it; a
course's students see it through those assignments alone. Who sees what is the course
core's rule (grader.courses.exercises), which asks this module what is the catalogue's
own: released or not, and whose. Releasing is for whoever may publish the exercise's next
version (uploads.owner_key): the key that published it, else an administrator or the
user who uploaded it. A released exercise stays released, its new versions included.
"""

from __future__ import annotations

from sqlalchemy import and_, false, or_, select
from sqlalchemy.orm import Session

from grader.catalog.models import Exercise, Upload
from grader.catalog.uploads import owner_key
from grader.refusals import Refused


class NotReleasable(Refused):
    """A release asked for by someone who does not own the exercise (``exercise_not_yours``)."""


def released():
    """A condition on Exercise: published and in the catalogue, for everyone."""
    return and_(Exercise.published.is_(True), Exercise.released.is_(True))


def authored(user_id: int | None = None, key_id: int | None = None):
    """A condition on Exercise: graded now with an upload that the user ``user_id`` or the
    API key ``key_id`` sent (its author, who sees it as a draft)."""
    by = []
    if user_id is not None:
        by.append(Upload.uploaded_by == user_id)
    if key_id is not None:
        by.append(Upload.api_key_id == key_id)
    if not by:
        return false()
    return Exercise.upload_id.in_(select(Upload.id).where(or_(*by)))


def is_author(session: Session, exercise: Exercise, *, user_id: int | None = None,
              key_id: int | None = None) -> bool:
    return session.scalar(select(Exercise.slug).where(Exercise.slug == exercise.slug,
                                                      authored(user_id, key_id))) is not None


def may_release(session: Session, exercise: Exercise, *, user_id: int | None = None, admin: bool = False,
                key_id: int | None = None) -> bool:
    """The ownership rule of new versions (uploads.owner_key): an exercise an API key
    published is that key's to release; any other, an administrator's or its uploader's.
    A key never releases what it did not publish; a user never what a key published,
    an administrator (``admin``: the user is one) excepted."""
    owner = owner_key(session, exercise)
    if key_id is not None:
        return owner is not None and owner == key_id
    if admin:
        return True
    return user_id is not None and owner is None and is_author(session, exercise, user_id=user_id)


def release(session: Session, exercise: Exercise, *, user_id: int | None = None, admin: bool = False,
            key_id: int | None = None) -> bool:
    """Put the exercise in the catalogue, for everyone, from now on. Returns whether it
    was a draft until now; NotReleasable (nothing changed) where the caller may not."""
    if not may_release(session, exercise, user_id=user_id, admin=admin, key_id=key_id):
        raise NotReleasable("exercise_not_yours", f"{exercise.slug} is released by whoever published it (the key "
                                                  f"that sent it, else an administrator)")
    was_draft = not exercise.released
    exercise.released = True
    return was_draft
