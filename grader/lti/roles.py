"""What an LTI roles claim means here: the launcher's role in the launch's own course.

Only context (membership) roles count, spelt in full as the LIS vocabulary spells them:
an institution or system role (``institution/person#Instructor``,
``system/person#Administrator``), a bare name, or a platform's custom URI never makes
anyone staff. Nothing here is site-wide: an administrator is a local account.
"""

from __future__ import annotations

MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"

# role URI -> the member role of grader.courses.models.MEMBER_ROLES
STAFF = {
    f"{MEMBERSHIP}#Instructor": "instructor",
    f"{MEMBERSHIP}#ContentDeveloper": "instructor",
    f"{MEMBERSHIP}/Instructor#TeachingAssistant": "ta",  # the vocabulary's sub-role
    f"{MEMBERSHIP}#TeachingAssistant": "ta",  # as some platforms send it
}
_RANK = {"student": 0, "ta": 1, "instructor": 2}


def course_role(roles: tuple[str, ...]) -> str:
    """The highest member role the claim's context roles give: instructor, ta or student."""
    best = "student"
    for role in roles:
        mapped = STAFF.get(role, "student")
        if _RANK[mapped] > _RANK[best]:
            best = mapped
    return best
