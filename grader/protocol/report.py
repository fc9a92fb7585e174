"""The report a grade produces: JSON for machines, text for people."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from grader import report_text
from grader.escapes import shown

LANGUAGES = ("en", "ko")  # what a report speaks: English always, the others where written


class ReportStatus(StrEnum):
    """Why a submission was not simply graded. "graded" means every test ran."""

    GRADED = "graded"
    SYNTAX_ERROR = "syntax_error"
    TIME_LIMIT = "time_limit"
    MEMORY_LIMIT = "memory_limit"
    SANDBOX_ERROR = "sandbox_error"
    SUBMISSION_ERROR = "submission_error"
    INTERNAL_ERROR = "internal_error"


# The grader's own failures: retried, never a score. Every other status is the student's.
INFRASTRUCTURE = (ReportStatus.SANDBOX_ERROR, ReportStatus.INTERNAL_ERROR)
COUNTED = tuple(status for status in ReportStatus if status not in INFRASTRUCTURE)


def coarse_ms(seconds: float) -> float:
    """A duration to a tenth of a second: finer, a hidden test's time is a channel for
    its inputs (a submission can sleep for as long as a hidden value says)."""
    return round(seconds * 10) * 100.0


@dataclass
class TestResult:
    id: str
    name: str
    visible: bool
    passed: bool
    points: float
    max_points: float
    message: str | None = None
    hint: str | None = None
    duration_ms: float = 0.0
    i18n: dict[str, dict[str, str]] = field(default_factory=dict)  # {"ko": {"name", "message", "hint"}}


@dataclass
class Report:
    exercise: str
    version: int
    status: str
    score: float
    max_score: float
    duration_ms: float
    tests: list[TestResult] = field(default_factory=list)
    output: str = ""                 # what the student's code printed (visible tests only)
    output_truncated: bool = False
    message: str | None = None       # why the status is not "graded"
    sandbox: str = "bubblewrap"      # "none" in the unsafe development mode
    device: str = "cpu"
    warnings: list[str] = field(default_factory=list)
    # The message and warnings in other languages, where written: {"ko": {"message": str, "warnings": [str]}}
    i18n: dict[str, dict] = field(default_factory=dict)

    def explain(self, status: str, why) -> None:
        """Set the status and why, ``why`` a grader.protocol.text.Text: the message in
        English, and in each other language the Text is written in."""
        self.status, self.message = status, why.en
        for lang in LANGUAGES[1:]:
            local = self.i18n.setdefault(lang, {})
            local.pop("message", None)
            if getattr(why, lang, None):
                local["message"] = getattr(why, lang)
            if not local:
                del self.i18n[lang]

    def warn(self, text) -> None:
        """Add a warning (a grader.protocol.text.Text), in each language it is written in;
        where it is not, that language shows the English."""
        for lang in LANGUAGES[1:]:
            local = self.i18n.get(lang, {}).get("warnings")
            if local is None and getattr(text, lang, None):
                local = self.i18n.setdefault(lang, {})["warnings"] = list(self.warnings)
            if local is not None:
                local.append(text.get(lang))
        self.warnings.append(text.en)

    def escaped(self) -> "Report":
        """Every string of the report with control and bidi characters escaped (see
        grader.escapes): messages and output carry what the submission chose to print."""
        for test in self.tests:
            test.name, test.message, test.hint = shown(test.name), shown(test.message), shown(test.hint)
            test.i18n = {lang: {k: shown(v) for k, v in texts.items()} for lang, texts in test.i18n.items()}
        self.output, self.message = shown(self.output), shown(self.message)
        self.warnings = [shown(w) for w in self.warnings]
        self.i18n = {lang: {key: [shown(w) for w in value] if isinstance(value, list) else shown(value)
                            for key, value in texts.items()} for lang, texts in self.i18n.items()}
        return self

    def to_dict(self) -> dict:
        return asdict(self)

    def without_timings(self) -> dict:
        """The report as a dict, less what varies from run to run (durations)."""
        data = self.to_dict()
        data.pop("duration_ms")
        for test in data["tests"]:
            test.pop("duration_ms")
        return data

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, **kw)

    def render(self, lang: str = "en") -> str:
        """The human-readable report (grader.report_text, which a stored one is rendered by too)."""
        return report_text.render(self.to_dict(), lang)
