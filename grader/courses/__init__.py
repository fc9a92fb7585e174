"""The course core: courses, who is in them, assignments and their rules, and what counts.

    roster.py       a course, its members and their roles, the exercises it uses; rosters
    assignments.py  assignments (an exercise at a pinned version, due dates, rules), extensions
                    and scores set by hand (granted, listed, changed, revoked)
    taking.py       taking a submission or practice run: the one way code is handed in
    counting.py     a submission or practice run under the rules; where a student stands
                    (attempts, the score that counts, held feedback)
    rules.py        the rules as pure functions of times and attempts
    starts.py       when a student started a timed assignment (their clock), recorded once
    times.py        a course's time zone, and times as it reads them
    fields.py       CourseError, and the checks of what forms and API bodies give
    access.py       who may see a submission at all
    exercises.py    who sees which exercise: a draft (not released to the catalogue) is its
                    author's and its courses' staff's, and reaches students through assignments
    comments.py     staff's comments on a submission, shown to its student as its feedback is
    visibility.py   how much of it they are shown now (held results, late, the score that counts)
    gradebook.py, analytics.py, regrades.py, similarity.py, invitations.py, tasks.py:
                    what staff run a course with
    models.py       the tables

Surfaces ask this package (``from grader import courses``): its names below are the
domain's face; the modules above are where each rule is written once.
"""

from grader.courses.assignments import (STANDING_TASK, announce_standing, course_of, create_assignment,
                                        extension_of, grant_extension, list_extensions, list_overrides, list_revoked,
                                        override_of, revoke_extension, revoke_override, rules_of, set_override)
from grader.courses.counting import (COUNTED_STATUSES, Standing, counted, exercise_held_until,
                                     feedback_held_until, practice, release_of, standing, submit)
from grader.courses import exercises, starts
from grader.courses.fields import CourseError
from grader.courses.roster import (MAX_ROSTER_LINES, RosterResult, course_by_id, course_called, create_course,
                                   import_roster, members, place, role_in, roster_rows, set_role)
from grader.courses.rules import is_late
from grader.courses.taking import Taken, take
from grader.courses.times import shown, zone
from grader.courses.visibility import Seen, held_report, seen

__all__ = [
    "STANDING_TASK", "announce_standing", "course_of", "create_assignment", "extension_of", "grant_extension",
    "list_extensions", "list_overrides", "list_revoked", "revoke_extension", "revoke_override", "override_of", "rules_of",
    "set_override", "exercises", "starts", "COUNTED_STATUSES", "Standing", "counted", "exercise_held_until",
    "feedback_held_until", "practice", "release_of", "standing", "submit", "CourseError", "MAX_ROSTER_LINES",
    "RosterResult", "course_by_id",
    "course_called", "create_course", "import_roster", "members", "place", "role_in", "roster_rows", "set_role",
    "shown", "zone", "Seen", "held_report", "seen", "Taken", "take", "is_late",
]
