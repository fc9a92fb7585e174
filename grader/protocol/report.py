"""The report a grade produces: JSON for machines, text for people."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum

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

    def escaped(self) -> "Report":
        """Every string of the report with control and bidi characters escaped (see
        grader.escapes): messages and output carry what the submission chose to print."""
        for test in self.tests:
            test.name, test.message, test.hint = shown(test.name), shown(test.message), shown(test.hint)
            test.i18n = {lang: {k: shown(v) for k, v in texts.items()} for lang, texts in test.i18n.items()}
        self.output, self.message = shown(self.output), shown(self.message)
        self.warnings = [shown(w) for w in self.warnings]
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
        """The human-readable report."""
        lines = [f"{self.exercise} v{self.version}: {_fmt(self.score)}/{_fmt(self.max_score)} points"
                 f"  [{self.status}, {self.duration_ms:.0f} ms, {self.device}]"]
        for warning in self.warnings:
            lines.append(f"WARNING: {warning}")
        if self.message:
            lines.append(self.message)
        for test in self.tests:
            mark = "PASS" if test.passed else "FAIL"
            kind = "" if test.visible else " (hidden)"
            local = test.i18n.get(lang, {})
            lines.append(f"  {mark} {local.get('name') or test.name}{kind}  "
                         f"{_fmt(test.points)}/{_fmt(test.max_points)}")
            message = local.get("message") or test.message
            hint = local.get("hint") or test.hint
            if message and not test.passed:
                lines.extend("       " + line for line in message.splitlines())
            if hint and not test.passed:
                lines.append(f"       hint: {hint}")
        if self.output:
            lines.append("Your code printed:" + (" (truncated)" if self.output_truncated else ""))
            lines.extend("  | " + line for line in self.output.splitlines()[:40])
        return "\n".join(lines)


def _fmt(x: float) -> str:
    return f"{x:g}"
