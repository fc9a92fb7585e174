"""A report in words: what `grader grade` prints, and the text beside each attempt in an
assignment's zip. It reads a report as ``Report.to_dict()`` gives it (and the database
stores it), and imports nothing, so that the web process, which never loads torch (nor
``grader.protocol``, which does), renders a stored report as the grader's own command does."""

from __future__ import annotations


def render(report: dict, lang: str = "en") -> str:
    """The human-readable report, its tests' names, messages and hints in ``lang`` where
    the report has them."""
    lines = [f"{report['exercise']} v{report['version']}: {_fmt(report['score'])}/{_fmt(report['max_score'])} points"
             f"  [{report['status']}, {report['duration_ms']:.0f} ms, {report.get('device', 'cpu')}]"]
    for warning in report.get("warnings") or []:
        lines.append(f"WARNING: {warning}")
    if report.get("message"):
        lines.append(report["message"])
    for test in report.get("tests") or []:
        mark = "PASS" if test["passed"] else "FAIL"
        kind = "" if test["visible"] else " (hidden)"
        local = (test.get("i18n") or {}).get(lang, {})
        lines.append(f"  {mark} {local.get('name') or test['name']}{kind}  "
                     f"{_fmt(test['points'])}/{_fmt(test['max_points'])}")
        message = local.get("message") or test.get("message")
        hint = local.get("hint") or test.get("hint")
        if message and not test["passed"]:
            lines.extend("       " + line for line in message.splitlines())
        if hint and not test["passed"]:
            lines.append(f"       hint: {hint}")
    if report.get("output"):
        lines.append("Your code printed:" + (" (truncated)" if report.get("output_truncated") else ""))
        lines.extend("  | " + line for line in report["output"].splitlines()[:40])
    return "\n".join(lines)


def _fmt(x: float) -> str:
    return f"{x:g}"
