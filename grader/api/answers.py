"""The JSON bodies /api/v1 answers with, each declared once: a view builds its answer as one
of these models (``reply``), and the OpenAPI document's response schemas are generated from
them (grader.api.openapi), as the request schemas are from grader.api.bodies.

A model's docstring is its schema's description, a field's ``description`` the property's:
both are published, so internal notes go in comments. Every answer is checked as it is made,
strictly: a field that is misspelt, missing, of another type or null where the document says
it is not fails in the view that made it, not in an integrator's client. A field with a
default (None) is one the answer may leave out: ``reply`` leaves out what the view did not
give, and sends null only where the view gave None to a field that takes it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from flask import Response, jsonify
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema

from grader.bundle import SLUG
from grader.courses import rules
from grader.courses.models import MEMBER_ROLES, RegradeStatus
from grader.refusals import CODES
from grader.submissions.models import SubmissionStatus
from grader.webhooks import EVENT


def _published(schema: dict, model: type[Answer]) -> None:
    # Checked strictly, published open: a field added to an answer later breaks no client.
    if not model.closed and schema.get("additionalProperties") is False:
        del schema["additionalProperties"]
    if "description" in schema:  # a docstring's line breaks are the source's, not the text's
        schema["description"] = " ".join(schema["description"].split())


class Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra=_published)
    closed: ClassVar[bool] = False  # the document promises no property beyond these


def reply(answer: Answer, status: int = 200, headers: dict | None = None) -> Response:
    """The answer as the response: what the view gave, as JSON."""
    response = jsonify(answer.model_dump(mode="json", exclude_unset=True))
    response.status_code = status
    response.headers.update(headers or {})
    return response


def _with_zone(value: str) -> str:
    # RFC 3339, as the document's date-time promises: a time without its offset is none.
    if datetime.fromisoformat(value).tzinfo is None:
        raise ValueError(f"{value!r} has no UTC offset")
    return value


# A number as the view has it: a whole one stays whole in the JSON.
Number = Annotated[int | float, WithJsonSchema({"type": "number"})]
DateTime = Annotated[str, AfterValidator(_with_zone), Field(json_schema_extra={"format": "date-time"})]
Uri = Annotated[str, Field(json_schema_extra={"format": "uri"})]
SubmissionId = Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")]
Status = Literal[tuple(map(str, SubmissionStatus))]
# A time as the course reads it, in its zone and with it: 2026-12-10 23:59 KST (Asia/Seoul).
Shown = str
Student = Annotated[str, Field(description="The student as the gradebook names them (your key's own id for them).")]


class Progress(Answer):
    done: int
    total: int


# ------------------------------------------------------------------ errors

class ErrorDetail(Answer):
    code: Literal[tuple(sorted(CODES))] = Field(description="Machine-readable; stable across versions of v1.")
    message: str = Field(description="What is wrong, for people.")
    # Where a source does not parse (syntax_error): nothing was stored, no attempt used.
    line: int = Field(None, ge=1, description=(
        "`syntax_error` only: the line of the source (a notebook's: of its graded source) where it does not "
        "parse; absent where the parser cannot say (nesting too deep)."))
    column: int = Field(None, ge=1, description="`syntax_error` only, with `line`: the column, in characters from 1.")
    cell: int = Field(None, ge=1, description="`syntax_error` of a notebook only: the cell, counting every cell "
                                              "from 1.")
    cell_line: int = Field(None, ge=1, description="With `cell`: the line within that cell.")
    entry: str = Field(None, description=(
        "`damaged_zip` only: the path inside the zip of the entry that is damaged; absent where the damage is the "
        "zip's own (cut short, its directory unreadable)."))


class Error(Answer):
    error: ErrorDetail


# ------------------------------------------------------------------ exercises

class Title(Answer):
    model_config = ConfigDict(extra="allow")  # a bundle may name it in more languages
    en: str
    ko: str = None


class Exercise(Answer):
    slug: str = Field(pattern=SLUG.pattern, json_schema_extra={"examples": ["autograd-basics"]})
    version: int = Field(ge=1)
    title: Title
    device: Literal["cpu", "cuda", "any"] = Field(
        description="Where submissions are graded; `any` runs on a GPU where the deployment has one.")
    max_score: Number = Field(description="The sum of the points of the hidden tests.")
    functions: list[str] = Field(description="The functions a submission must define.")
    released: bool = Field(description=(
        "In the catalogue, for everyone. `false`: a draft (published through an upload and not released yet), "
        "seen only by its author, the administrators and the staff of the courses whose assignments use it; a "
        "course's students reach it through those assignments alone."))


class ExerciseList(Answer):
    exercises: list[Exercise]


class Statement(Answer):
    en: str | None
    ko: str | None


class ExerciseDetail(Exercise):
    statement: Statement = Field(description="The statement in Markdown; null where the catalogue has no such "
                                             "text.")


class ExerciseCheckAccepted(Answer):
    id: int
    url: Uri
    status: Literal["checking"]
    slug: str
    version: int


class CheckResult(Answer):
    subject: str = Field(description="solution, starter, mutant:<name> or bundle")
    expected: str
    actual: str
    ok: bool
    reason: str | None = Field(description="Why a row failed.")


class ExerciseCheck(Answer):
    id: int
    url: Uri
    slug: str
    version: int
    status: Literal["checking", "published", "rejected"]
    error: str | None = Field(description="Why it was rejected.")
    uploaded_at: DateTime
    checked_at: DateTime | None
    holds: int
    violated: int
    warnings: list[str] = Field(description=(
        "What the check warns of, failing nothing: a bundle still `grader new`'s template, a title a released "
        "exercise has already. Empty while checking."))
    checks: list[CheckResult]


class ExerciseVersion(Answer):
    version: int
    state: Literal["published", "kept", "checking", "rejected"] = Field(description=(
        "`published`: what new submissions are graded against; `kept`: published before, still graded against "
        "for the assignments pinned to it."))
    check: Uri | None = Field(description="Its check (null: the site's catalogue folder).")
    uploaded_at: DateTime | None
    checked_at: DateTime | None
    error: str | None


class ExerciseVersions(Answer):
    slug: str
    versions: list[ExerciseVersion]


# ------------------------------------------------------------------ submissions and practice runs

class SubmissionAccepted(Answer):
    id: SubmissionId
    url: Uri = Field(description="Where to follow it (GET).")
    status: Literal["queued"]
    practice: bool = Field(None, description="Present (true) for a practice run.")


class NotebookCell(Answer):
    cell: int = Field(description="The cell's number in the notebook, from 1.")
    first_line: int = Field(description="The graded source's line of its first line.")
    lines: int


class NotebookMap(Answer):
    cells: list[NotebookCell]


class Comment(Answer):
    closed = True
    id: int
    body: str = Field(description="Plain text, as written: escape it where it is shown.")
    line: int | None = Field(ge=1, description="The line of the graded source it is on; null: on the whole "
                                               "submission.")
    author: str = Field(description="Who wrote it, as the student is shown it: a staff member's name, or "
                                    "`API key <prefix>`.")
    created_at: DateTime


class Submission(Answer):
    id: SubmissionId
    exercise: str
    exercise_version: int
    assignment: int | None
    user: str | None = Field(description="The user's external id (null for users who signed in on the site).")
    status: Status = Field(description="`failed`: the grader could not grade it (never a zero score); "
                                       "`failure_reason` says why.")
    progress: Progress
    delayed: bool = Field(None, description=(
        "While queued or running: no worker that takes its queue is up (one stopped); it is graded when one is "
        "back, and nothing need be sent again. Within seconds of a worker stopping."))
    score: Number | None
    max_score: Number | None
    failure_reason: str | None
    report: dict[str, Any] | None = Field(description=(
        "The grading report (per test: name, passed, points, max points, message, hint); null until graded. For "
        "a notebook, every line number of the graded source in a message (`File \"submission.py\", line 12`) is "
        "followed by its cell, `(cell 3, line 2)`. Read with a personal token before an assignment releases its "
        "hidden tests' results, it lists the visible tests alone, its score, duration, warnings and output are "
        "empty, and its status is null (graded or not) unless the code failed before any test ran (syntax_error, "
        "submission_error): a limit reached may have been a hidden test's."))
    comments: list[Comment] = Field(description=(
        "What the course's staff said of it, the overall comments first, then by line. Read with the student's "
        "personal token, empty while the assignment holds the feedback (`feedback_held_until`): comments are "
        "released with the hidden tests' results."))
    feedback_held_until: DateTime = Field(None, description=(
        "Present only when read with the student's personal token while the assignment holds the hidden tests' "
        "results (and the score) until its due date."))
    late: bool = Field(None, description=(
        "Present for a submission made for an assignment: whether it came after the student's own due date (an "
        "extension's included)."))
    late_penalty_percent: Number = Field(None, description=(
        "Present with `late`: the percentage of its score this submission loses for lateness (0 when on time)."))
    counted_score: Number | None = Field(None, description=(
        "Present for a submission made for an assignment: the score that counts for its author on that "
        "assignment now (best or latest, late penalties and a score set by hand applied), which may come from "
        "another of their submissions. Null while the hidden results are held from the reader, or before any "
        "grade."))
    counted_max_score: Number | None = Field(None, description="Present with `counted_score`: its maximum.")
    notebook: NotebookMap | None = Field(description=(
        "Null unless the submission was a notebook: then where each code cell graded is in the graded source."))


class PracticeRun(Answer):
    """As a Submission, with `practice: true`; its report lists the visible tests alone and its score is of their
    points. Never retried: `failed` (also when it was not run within ten minutes) means run it again. A user's
    latest 20 runs are kept."""

    id: SubmissionId
    practice: Literal[True]
    exercise: str
    exercise_version: int
    assignment: int | None
    user: str | None
    status: Status
    progress: Progress
    score: Number | None
    max_score: Number | None
    failure_reason: str | None
    report: dict[str, Any] | None
    notebook: NotebookMap | None


class Webhook(Answer):
    id: int
    url: Uri
    secret: str = Field(description=(
        "Signs every delivery; shown only in this response. A delivery is a POST of the submission's result "
        "(JSON, `event` and `submission`) with `X-Grader-Timestamp: <unix seconds>` and `X-Grader-Signature: "
        "sha256=<hex HMAC-SHA256(secret, \"<timestamp>.<body>\")>`. Any 2xx answer ends it; others are retried "
        "with growing delays."))
    events: list[Literal[EVENT]]


# ------------------------------------------------------------------ courses and assignments

class Assignment(Answer):
    """Times in the course's time zone, with it: 2026-12-10 23:59 KST (Asia/Seoul)."""

    id: int
    course: int
    exercise: str
    version: int
    title: str
    opens_at: Shown | None = None
    due_at: Shown
    late_until: Shown | None = None
    late_policy: Literal[rules.LATE_POLICIES] = None
    late_percent: Number = None
    late_cap: Number | None = None
    attempts: int | None = None
    cooldown_minutes: int = None
    counts: Literal[rules.COUNTS] = None
    feedback: Literal[rules.FEEDBACK] = None
    time_limit_minutes: int | None = Field(None, description="Each student's minutes from their start; null: "
                                                             "untimed.")


class Course(Answer):
    id: int
    title: str
    code: str
    time_zone: str
    assignments: list[Assignment]


class RosterMember(Answer):
    user: str = Field(description="The member as the gradebook names them: their e-mail, else your key's own id "
                                  "for them.")
    name: str
    role: Literal[tuple(map(str, MEMBER_ROLES))]


class Roster(Answer):
    added: list[str]
    changed: list[str]
    members: list[RosterMember]


class AssignmentCourse(Answer):
    id: int
    code: str
    title: str


class ListedAssignment(Answer):
    """An assignment the caller can submit to. Read with a personal token, it carries where the token's owner
    stands: their own due date (an extension's included), attempts, why a submission now would be refused, and
    the score that counts (null while the hidden results are held)."""

    id: int
    title: str
    exercise: str
    course: AssignmentCourse
    due_at: DateTime
    due_at_shown: str = Field(description="The due date in the course's zone, with it.")
    attempts: int | None = None
    feedback: Literal[rules.FEEDBACK] = None
    attempts_used: int = None
    attempts_left: int | None = None
    refusal: str | None = Field(None, description=(
        "The code a submission now would be refused with (closed, no_attempts_left, cooling_down, not_open, "
        "time_up); null: it would be taken."))
    counted_score: Number | None = None
    counted_max_score: Number | None = None
    feedback_held_until: DateTime | None = None
    time_limit_minutes: int | None = Field(None, description=(
        "A timed assignment's minutes from each student's start (with a personal token: the owner's own, an "
        "extension's extra minutes included); null: untimed."))
    started_at: DateTime | None = Field(None, description=(
        "When the owner started this timed assignment (its page's start button, or their first submission); "
        "null: not yet."))
    ends_at: DateTime | None = Field(None, description=(
        "The owner's own deadline on a timed assignment they started: their start plus their time limit, or the "
        "close date if sooner. A submission after it is refused with time_up."))


class AssignmentList(Answer):
    assignments: list[ListedAssignment]


# ------------------------------------------------------------------ extensions and overrides

_USER_ID = "The student, as the revoke's path names them."


class Extension(Answer):
    assignment: int
    user: str
    due_at: Shown | None = None
    extra_attempts: int
    extra_minutes: int = None
    reason: str


class ListedExtension(Answer):
    user_id: int = Field(description=_USER_ID)
    user: Student
    name: str = None
    due_at: DateTime | None = None
    due_at_shown: Shown | None = Field(None, description="The new due date in the course's time zone.")
    extra_attempts: int
    extra_minutes: int = None
    reason: str
    granted_by: str
    granted_at: DateTime = Field(description="When it was granted or last changed.")


class ExtensionList(Answer):
    assignment: int
    extensions: list[ListedExtension]


class Override(Answer):
    assignment: int
    user: str
    score: Number
    reason: str
    set_by: str
    set_at: Shown


class ListedOverride(Answer):
    user_id: int = Field(description=_USER_ID)
    user: Student
    name: str = None
    score: Number
    reason: str
    granted_by: str
    granted_at: DateTime = Field(description="When it was set or last changed.")


class OverrideList(Answer):
    assignment: int
    overrides: list[ListedOverride]


# ------------------------------------------------------------------ regrades

class TestChange(Answer):
    submission: SubmissionId
    test: str
    was: bool = Field(description="Passed before.")
    now: bool = Field(description="Passes after.")


class RegradeStudent(Answer):
    student: Student
    before: Number | None = Field(description="The score that counted before; null: none.")
    after: Number | None = Field(description="The score that counts with the new grades.")
    tests: list[TestChange] = Field(description="The tests whose verdict changed, per submission.")


class Regrade(Answer):
    """Every graded source of the assignment graded again against the exercise's current version, as new grades
    beside the old ones. `students`: those whose score that counts or whose tests' verdicts changed (when no
    longer running)."""

    id: int
    assignment: int
    version: int
    status: Literal[tuple(map(str, RegradeStatus))]
    requested_by: str = None
    created_at: Shown = None
    url: Uri = None
    progress: Progress
    students: list[RegradeStudent]
    unchanged: int


class SkippedRegrade(Answer):
    assignment: int
    reason: str


class ExerciseRegrades(Answer):
    exercise: str
    regrades: list[Regrade]
    skipped: list[SkippedRegrade]


# ------------------------------------------------------------------ similar submissions

class SharedRegion(Answer):
    start: int = Field(description="Character offset, from 0.")
    end: int = Field(description="Character offset, excluded.")
    first_line: int = Field(description="From 1.")
    last_line: int


class SimilarSide(Answer):
    student: str
    name: str
    submission: SubmissionId
    share: Number = Field(description="shared_tokens / own_tokens: the part of this submission's own code that "
                                      "the other has too.")
    own_tokens: int = Field(description="Its tokenized characters beyond the starter code.")
    shared_tokens: int
    regions: list[SharedRegion] = Field(description="Where the shared code is in this source.")


class SimilarPair(Answer):
    similarity: float = Field(ge=0, le=1)
    a: SimilarSide
    b: SimilarSide


class Similarity(Answer):
    """Every pair of students' final submissions (the one whose score counts, else the latest graded) that shares
    code beyond the exercise's starter file, most similar first, as copydetect finds it (tokenized, names and
    comments ignored; never run). For a reader's judgement: it never changes a score. `similarity` =
    (a.shared_tokens + b.shared_tokens) / (a.own_tokens + b.own_tokens); ties: more shared tokens first."""

    assignment: int
    students: int = Field(description="Students with a graded submission, compared.")
    pairs_sharing_code: int = Field(description="All of them; `pairs` holds the first `limit`.")
    pairs: list[SimilarPair]


# ------------------------------------------------------------------ the gradebook

class GradebookCourse(Answer):
    id: int
    title: str
    code: str
    time_zone: str | None


class GradebookAssignment(Answer):
    id: int
    title: str
    exercise: str
    version: int
    due_at: Shown
    max_score: Number | None


class GradebookExtension(Answer):
    due_at: Shown = Field(description="Empty where it moves no due date.")
    extra_attempts: int
    reason: str


class GradebookOverride(Answer):
    score: Number
    reason: str
    set_by: str
    set_at: Shown


class GradebookScore(Answer):
    assignment: int
    score: Number | None = Field(description="The score that counts; null: nothing graded.")
    max_score: Number | None
    counted: Literal["best", "latest", "override", "none"] = Field(description="Where the score comes from.")
    attempts: int
    late: bool
    late_penalty_percent: Number
    extension: GradebookExtension | None
    override: GradebookOverride | None


class GradebookStudent(Answer):
    student: Student
    name: str
    total: Number
    max_total: Number
    scores: list[GradebookScore] = Field(description="One per assignment, in the order of `assignments`.")


class Gradebook(Answer):
    """Per student, each assignment's score that counts under its rules (best or latest, after late penalties; or
    the override), with its late mark, extension and override; each assignment's `max_score`, and each student's
    `total` out of `max_total` (the sum of the assignments' maxima). The CSV per student ends with `total` and
    `max_total`."""

    course: GradebookCourse
    assignments: list[GradebookAssignment]
    students: list[GradebookStudent]


# ------------------------------------------------------------------ where the class is stuck

class AnalyticsAssignment(Answer):
    id: int
    title: str
    exercise: str
    version: int
    due_at: Shown


class ScoreBin(Answer):
    from_percent: int
    to_percent: int
    students: int


class AnalyticsScores(Answer):
    max_score: Number | None
    scored: int
    unscored: int
    mean_percent: Number | None
    median_percent: Number | None
    bins: list[ScoreBin]


class PassRate(Answer):
    passed: int
    of: int
    percent: Number | None


class TestRate(Answer):
    id: str
    name: str
    i18n: dict[str, str] = Field(description="The test's name by language, where the report has one.")
    visible: bool
    counting: PassRate
    graded: PassRate


class TestName(Answer):
    id: str
    name: str
    i18n: dict[str, str]


class Misconception(Answer):
    hint: str
    i18n: dict[str, str] = Field(description="The hint by language, where a report has one.")
    tests: list[TestName]
    students: int
    got_past: int


class MedianMax(Answer):
    median: Number | None
    max: Number | None


class FullMarks(Answer):
    reached: int
    never: int
    attempts: MedianMax
    seconds_to_full_marks: MedianMax


class NotYetFullMarks(Answer):
    student: Student
    name: str
    due_at: Shown
    seconds_left: int
    extension: bool = Field(description="An extension moved their due date.")
    score: Number | None
    attempts: int


class Analytics(Answer):
    """Where the class is stuck on one assignment, computed on request from the course's students (their role in
    it: student) and their submissions. Each student's score is the gradebook's (under their extension; an
    override replaces it). Times in the course's time zone, with it."""

    assignment: AnalyticsAssignment
    at: Shown = Field(description="The time it was computed.")
    students: int
    scores: AnalyticsScores = Field(description=(
        "The scores that count, in percent of the maximum: `scored` students have one, `unscored` have none "
        "(nothing graded, no override); bins of 10 percent from `from_percent` (in) to `to_percent` (out, but 100 "
        "is in the last)."))
    tests: list[TestRate] = Field(description=(
        "Per test, the visible ones (`visible`: true) and the hidden: how many of the students' counting "
        "submissions (none for a score set by hand) and of all their graded submissions passed it; one whose "
        "report does not list it did not."))
    misconceptions: list[Misconception] = Field(description=(
        "Each distinct hint failed tests gave, once however many tests gave it, with those `tests` (`id`, "
        "`name`): `students` it was given to, most first; `got_past`: those of them with a graded submission "
        "after the last one that gave it, passing every test that had given it to them."))
    full_marks: FullMarks = Field(description=(
        "`reached`: students with a graded submission passing every test (before late penalties); the attempts up "
        "to the first such (failed gradings are no attempt) and the seconds from their first submission to it; "
        "`never`: the other students."))
    not_yet_full_marks: list[NotYetFullMarks] = Field(description=(
        "The students who have not reached full marks, with their own due date (an extension's) and the seconds "
        "left (negative once past), soonest first."))


# Each component of the document's responses, by the name its $refs use; the models they use beside them.
RESPONSES = (Error, Exercise, ExerciseList, ExerciseDetail, ExerciseRegrades, ExerciseCheckAccepted, ExerciseCheck,
             ExerciseVersions, SubmissionAccepted, PracticeRun, Submission, Comment, Webhook, Course, Roster,
             Assignment, AssignmentList, ListedAssignment, Extension, ListedExtension, ExtensionList,
             ListedOverride, OverrideList, Override, Regrade, Similarity, SimilarSide, Gradebook, Analytics)
