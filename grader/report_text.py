"""A report in words: what `grader grade` prints, and the text beside each attempt in an
assignment's zip. It reads a report as ``Report.to_dict()`` gives it (and the database
stores it), and imports nothing, so that the web process, which never loads torch (nor
``grader.protocol``, which does), renders a stored report as the grader's own command does."""

from __future__ import annotations


# The report's own words in each language (this module imports nothing, the catalogue included).
_WORDS = {
    "en": {"points": "{score}/{max} points", "warning": "WARNING", "pass": "PASS", "fail": "FAIL",
           "hidden": " (hidden)", "hint": "hint", "printed": "Your code printed:", "truncated": " (truncated)",
           "graded": "graded", "syntax_error": "syntax_error", "submission_error": "submission_error",
           "internal_error": "internal_error", "sandbox_error": "sandbox_error", "time_limit": "time_limit",
           "memory_limit": "memory_limit"},
    "ko": {"points": "{score}/{max}점", "warning": "경고", "pass": "통과", "fail": "실패", "hidden": " (숨김)",
           "hint": "힌트", "printed": "코드가 출력한 내용:", "truncated": " (잘림)", "graded": "채점됨",
           "syntax_error": "문법 오류", "submission_error": "제출물 오류", "internal_error": "내부 오류",
           "sandbox_error": "샌드박스 오류", "time_limit": "시간 초과", "memory_limit": "메모리 초과"},
}


def render(report: dict, lang: str = "en") -> str:
    """The human-readable report, its message, warnings and tests' names, messages and
    hints in ``lang`` where the report has them."""
    words = _WORDS.get(lang, _WORDS["en"])
    own = (report.get("i18n") or {}).get(lang, {})  # the report's own message and warnings in lang
    points = words["points"].format(score=_fmt(report["score"]), max=_fmt(report["max_score"]))
    lines = [f"{report['exercise']} v{report['version']}: {points}"
             f"  [{words.get(report['status'], report['status'])}, {report['duration_ms']:.0f} ms, "
             f"{report.get('device', 'cpu')}]"]
    warnings = report.get("warnings") or []
    for warning in (own.get("warnings") or warnings) if warnings else []:
        lines.append(f"{words['warning']}: {warning}")
    if report.get("message"):
        lines.append(own.get("message") or report["message"])
    for test in report.get("tests") or []:
        mark = words["pass"] if test["passed"] else words["fail"]
        kind = "" if test["visible"] else words["hidden"]
        local = (test.get("i18n") or {}).get(lang, {})
        lines.append(f"  {mark} {local.get('name') or test['name']}{kind}  "
                     f"{_fmt(test['points'])}/{_fmt(test['max_points'])}")
        message = local.get("message") or test.get("message")
        hint = local.get("hint") or test.get("hint")
        if message and not test["passed"]:
            lines.extend("       " + line for line in message.splitlines())
        if hint and not test["passed"]:
            lines.append(f"       {words['hint']}: {hint}")
    if report.get("output"):
        lines.append(words["printed"] + (words["truncated"] if report.get("output_truncated") else ""))
        lines.extend("  | " + line for line in report["output"].splitlines()[:40])
    return "\n".join(lines)


def _fmt(x: float) -> str:
    return f"{x:g}"
