"""Courses: where roles live. A course is, for now, an LMS context (one per platform
registration and context id); its members hold a role in it (student, ta, instructor)
and its placements (LMS links) say which exercises it uses. Rights over submissions
come from these, course by course; only a local administrator has site-wide powers."""
