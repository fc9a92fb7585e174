"""Similar submissions: for one assignment, every pair of students' final submissions
ranked by how much code they share, with the shared regions in both. It informs the
staff who read it; it never changes a score.

A student's final submission is the graded one whose score counts under the assignment's
rules (an override replaces a score, not a source), else their latest graded one. Only
members with the role student are compared.

The comparison is copydetect's: each source is tokenized (pygments; never run), names
and strings are replaced by placeholders, comments and whitespace dropped, and every
``NOISE`` characters long run of what is left is a fingerprint. The exercise's starter
code is boilerplate: a fingerprint with any of it in counts neither as shared nor as a
student's own code, so students who kept the starter as given are not similar for that.

Each pair has two directions: ``a.share``, the part of A's own code (its fingerprinted
tokens beyond the starter) that B has too, and ``b.share`` the reverse. Pairs are ranked by

    similarity = (a.shared + b.shared) / (a.own + b.own)

the part of the two submissions' own code, taken together, that the other has too. It
lies between the two shares, weighted by size: a whole copy scores near 1 either way,
while one short line that happens to match a long program's scores low (the larger
share alone would say 100%). Ties: more shared tokens first.

The work grows with the square of the students compared and with the length of their
code, and the page waits for it: above ``MAX_STUDENTS`` students with a graded submission,
or ``MAX_CHARACTERS`` of final sources in all, it is refused (bench/similarity.py measures it).
"""

from __future__ import annotations

import bisect
import io
import logging
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session, load_only

from grader.accounts.models import User
from grader.bundle import CatalogError
from grader.catalog.uploads import UploadError, bundle_at
from grader.courses.fields import CourseError
from grader.courses.counting import counted
from grader.courses.assignments import course_of, rules_of
from grader.courses.roster import members
from grader.courses.models import Assignment, Extension, MemberRole
from grader.submissions.models import Submission, SubmissionStatus

log = logging.getLogger(__name__)

# Computed while the page waits, so bounded: 200 students of about 1,800 characters each
# (365,000 in all) take about 4 s of one core (bench/similarity.py --sizes 200 --scale 4).
MAX_STUDENTS = 200
MAX_CHARACTERS = 400_000  # all final sources together: fingerprinting costs about 4 µs a character
NOISE = 25   # copydetect's default: matches shorter than 25 tokenized characters are ignored
WINDOW = 1   # every fingerprint kept (copydetect's default guarantee threshold equals NOISE)


@dataclass(frozen=True)
class Final:
    """A student's final submission to the assignment, as it is compared."""

    user: User
    submission_id: str
    submitted_at: datetime
    source: str


@dataclass(frozen=True)
class Region:
    """A run of a source that the other submission of its pair has too: characters
    ``start`` to ``end`` (end excluded), on lines ``first_line`` to ``last_line`` (from 1)."""

    start: int
    end: int
    first_line: int
    last_line: int


@dataclass(frozen=True)
class Side:
    """One submission of a pair; ``key`` names it (a submission id)."""

    key: Hashable
    own: int       # its tokens beyond the starter code, as copydetect counts them
    shared: int    # of those, the ones the other submission has too
    regions: tuple[Region, ...]

    @property
    def share(self) -> float:
        return self.shared / self.own if self.own else 0.0


@dataclass(frozen=True)
class Pair:
    a: Side
    b: Side

    @property
    def similarity(self) -> float:
        own = self.a.own + self.b.own
        return (self.a.shared + self.b.shared) / own if own else 0.0


@dataclass(frozen=True)
class Similarity:
    """An assignment's final submissions (by submission id, in the students' order) and
    their pairs that share code, most similar first."""

    assignment: Assignment
    finals: dict[str, Final]
    pairs: list[Pair]


# ------------------------------------------------------------------ comparing sources

class _Source:
    """A source fingerprinted once, with where its lines start."""

    def __init__(self, key: Hashable, text: str, starter: frozenset):
        from copydetect import CodeFingerprint  # its package loads matplotlib: only when asked for
        from copydetect.utils import get_token_coverage

        self.key, self.text = key, text
        self.print = CodeFingerprint("submission.py", NOISE, WINDOW, language="python", fp=io.StringIO(text))
        if starter:
            kept = _beyond(self.print.hash_idx, starter, len(self.print.filtered_code))
            self.print.hash_idx, self.print.hashes = kept, set(kept)
            self.print.token_coverage = get_token_coverage(kept, NOISE, len(self.print.filtered_code))
        self._lines = [i for i, c in enumerate(text) if c == "\n"]

    @property
    def own(self) -> int:
        return int(self.print.token_coverage)

    def regions(self, slices) -> tuple[Region, ...]:
        found = []
        for start, end in zip(slices[0].tolist(), slices[1].tolist()):
            start, end = max(0, min(int(start), len(self.text))), max(0, min(int(end), len(self.text)))
            if end > start:
                found.append(Region(start, end, bisect.bisect_left(self._lines, start) + 1,
                                    bisect.bisect_left(self._lines, end - 1) + 1))
        return tuple(found)


def _beyond(prints: dict, starter: frozenset, length: int) -> dict:
    """A source's fingerprints (hash -> positions in its tokenized text) without those
    that cover any character of starter code (a place where one of the starter's is found).

    copydetect's own boilerplate filter drops only the starter's fingerprints, so one that
    runs from the end of the kept starter into a student's first token (``...:SV``) would
    match every other student who kept the starter and begins the same way; and it
    (np.intersect1d with assume_unique) also drops repeats of a source's own fingerprints."""
    starts = [at for h, positions in prints.items() if h in starter for at in positions]
    edges = np.zeros(length + 1, dtype=np.int64)
    np.add.at(edges, np.asarray(starts, dtype=np.int64), 1)
    np.add.at(edges, np.asarray(starts, dtype=np.int64) + NOISE, -1)
    inside = np.concatenate(([0], np.cumsum(np.cumsum(edges)[:length] > 0))).tolist()  # starter characters before
    kept = {}
    for h, positions in prints.items():
        clean = [at for at in positions if inside[at + NOISE] == inside[at]]
        if clean:
            kept[h] = clean
    return kept


def starter_prints(starter: str) -> frozenset:
    """Every fingerprint of the starter code (as copydetect takes boilerplate: all of them)."""
    from copydetect import CodeFingerprint

    if not starter.strip():
        return frozenset()
    return frozenset(CodeFingerprint("starter.py", NOISE, 1, language="python", fp=io.StringIO(starter)).hashes)


def _pair(one: _Source, other: _Source) -> Pair | None:
    from copydetect import compare_files

    _overlap, (share_a, share_b), (slices_a, slices_b) = compare_files(one.print, other.print)
    if not share_a and not share_b:
        return None
    # compare_files gives each direction's share of the source's own tokens; back to counts.
    return Pair(Side(one.key, one.own, min(one.own, round(share_a * one.own)), one.regions(slices_a)),
                Side(other.key, other.own, min(other.own, round(share_b * other.own)), other.regions(slices_b)))


def rank(starter: str, sources: Sequence[tuple[Hashable, str]]) -> list[Pair]:
    """Every pair of ``sources`` (key, text) that shares code beyond ``starter``, most
    similar first; in each pair, ``a`` is the one listed first."""
    boilerplate = starter_prints(starter)
    prints = [_Source(key, text, boilerplate) for key, text in sources]
    pairs = [pair for i, one in enumerate(prints) for other in prints[i + 1:]
             if (pair := _pair(one, other)) is not None]
    pairs.sort(key=lambda p: (-p.similarity, -(p.a.shared + p.b.shared)))
    return pairs


def segments(source: str, regions: Sequence[Region]) -> list[tuple[str, bool]]:
    """``source`` cut into (text, shared) runs, in order, for a page to mark."""
    out, at = [], 0
    for region in sorted(regions, key=lambda r: r.start):
        start = max(region.start, at)
        if start >= region.end:
            continue
        if start > at:
            out.append((source[at:start], False))
        out.append((source[start:region.end], True))
        at = region.end
    if at < len(source):
        out.append((source[at:], False))
    return out


# ------------------------------------------------------------------ an assignment's submissions

def _starter(session: Session, assignment: Assignment) -> str:
    try:
        return bundle_at(session, assignment.exercise_slug, assignment.exercise_version).read("starter.py")
    except (CatalogError, UploadError):
        # Compared without it, code every student was given would read as copied.
        log.warning("the starter code of %s version %s cannot be read", assignment.exercise_slug,
                    assignment.exercise_version, exc_info=True)
        raise CourseError("starter_unavailable", f"the starter code of version {assignment.exercise_version} of "
                                                 f"{assignment.exercise_slug} is no longer kept, so code that came "
                                                 "with the exercise cannot be told apart from code students "
                                                 "share") from None


def finals(session: Session, assignment: Assignment) -> list[Final]:
    """Each student's final submission, by the students' names; those with nothing graded
    are left out. Refused (CourseError) above MAX_STUDENTS or MAX_CHARACTERS, before any
    source is read."""
    students = [user for user, role in members(session, course_of(session, assignment)) if role == MemberRole.STUDENT]
    graded = defaultdict(list)
    for row in session.scalars(select(Submission).options(load_only(
            Submission.id, Submission.user_id, Submission.created_at, Submission.score, Submission.max_score))
            .where(Submission.assignment_id == assignment.id, Submission.status == SubmissionStatus.GRADED)
            .order_by(Submission.created_at)):
        graded[row.user_id].append(row)
    extensions = {e.user_id: e for e in session.scalars(select(Extension).where(
        Extension.assignment_id == assignment.id))}
    chosen = []
    for user in students:
        rows = graded.get(user.id)
        if not rows:
            continue
        counts = counted(rules_of(assignment, extensions.get(user.id)), rows, None).submission_id
        chosen.append((user, next((r for r in rows if r.id == counts), rows[-1])))
    if len(chosen) > MAX_STUDENTS:
        raise CourseError("too_many_students", f"{len(chosen)} students have a graded submission to this assignment; "
                                               f"similar submissions are compared for at most {MAX_STUDENTS}",
                          n=MAX_STUDENTS)
    ids = [row.id for _, row in chosen]
    size = session.scalar(select(func.sum(func.length(Submission.source))).where(Submission.id.in_(ids))) or 0
    if size > MAX_CHARACTERS:
        raise CourseError("sources_too_large", f"the final submissions to this assignment hold {size} characters in "
                                               f"all; similar submissions are compared for at most {MAX_CHARACTERS}",
                          n=f"{MAX_CHARACTERS:,}")
    sources = {key: text for key, text in session.execute(select(Submission.id, Submission.source)
                                                             .where(Submission.id.in_(ids)))}
    return [Final(user, row.id, row.created_at, sources[row.id]) for user, row in chosen]


def similar(session: Session, assignment: Assignment) -> Similarity:
    """The assignment's final submissions, every pair that shares code beyond the starter
    ranked most similar first (``a`` the one whose student's name comes first)."""
    chosen = finals(session, assignment)
    starter = _starter(session, assignment)
    return Similarity(assignment, {f.submission_id: f for f in chosen},
                      rank(starter, [(f.submission_id, f.source) for f in chosen]))


def compare(session: Session, assignment: Assignment, a: Submission, b: Submission) -> Pair:
    """Two submissions to the assignment (any two, not only final ones), side by side."""
    boilerplate = starter_prints(_starter(session, assignment))
    one, other = _Source(a.id, a.source, boilerplate), _Source(b.id, b.source, boilerplate)
    return _pair(one, other) or Pair(Side(a.id, one.own, 0, ()), Side(b.id, other.own, 0, ()))
