"""Submit autograd exercises to the grader from Jupyter, Colab or a terminal.

    import grader_client as grader
    grader.connect("https://grader.example.edu", token="gk_...")  # or GRADER_URL / GRADER_TOKEN
    grader.check("detach", "work.ipynb")    # the visible tests only; counts for nothing
    grader.submit("detach", "work.ipynb")   # graded against every test; counts

A token is made on the grader's "Your tokens" page; it submits as you and reads your own
work, nothing else. Standard library only, so it installs anywhere Python does.
"""

from __future__ import annotations

import getpass
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

__version__ = "0.1.0"
__all__ = ["connect", "submit", "check", "assignments", "Result", "GraderError"]

_DONE = ("graded", "failed")
_TEXTS = {  # what the web page says, in the languages it speaks
    "en": {"score": "Score", "visible": "Visible tests", "practice": "a practice run: it counts for nothing",
           "version": "graded against version {v}", "passed": "{p} of {t} tests passed", "first": "failures first",
           "hidden": "hidden", "hint": "Hint", "again": "The hint above explains this one too.",
           "printed": "What your code printed", "held": "Your score and the hidden tests' results are shown "
           "after the due date, {when}.", "failed": "We could not grade this submission. This is a "
           "problem on our side, not in your code, and it costs you nothing: please submit again later.",
           "syntax_error": "Your code has a syntax error, so no test could run.",
           "time_limit": "Your code ran out of time.", "memory_limit": "Your code used more memory than allowed.",
           "submission_error": "Your code failed before the tests could call it.",
           "queued": "Waiting for a grader…", "running": "Running the tests…", "see": "On the site: {url}",
           "late": "LATE: this submission loses {p}% of its score ({s} / {m} after the penalty).",
           "counts": "Score that counts now on the assignment: {s} / {m}"},
    "ko": {"score": "점수", "visible": "공개 테스트", "practice": "연습 실행: 점수에 반영되지 않습니다",
           "version": "버전 {v} 기준 채점", "passed": "테스트 {t}개 중 {p}개 통과", "first": "실패한 테스트 먼저",
           "hidden": "비공개", "hint": "힌트", "again": "위의 힌트가 이 테스트도 설명합니다.",
           "printed": "코드가 출력한 내용", "held": "점수와 비공개 테스트 결과는 마감 후({when})에 공개됩니다.", "failed": "이 제출물을 채점하지 못했습니다. 코드가 아니라 저희 쪽 문제이며 불이익은 "
           "없습니다. 나중에 다시 제출해 주세요.",
           "syntax_error": "코드에 문법 오류가 있어 어떤 테스트도 실행할 수 없었습니다.",
           "time_limit": "코드가 시간 제한을 넘었습니다.", "memory_limit": "코드가 허용된 메모리보다 많이 사용했습니다.",
           "submission_error": "테스트가 호출하기 전에 코드가 실패했습니다.",
           "queued": "채점기를 기다리는 중…", "running": "테스트 실행 중…", "see": "사이트에서 보기: {url}",
           "late": "지각 제출: 이 제출물은 점수의 {p}%를 잃습니다 (감점 후 {s} / {m}).",
           "counts": "과제에 반영되는 현재 점수: {s} / {m}"},
}


class GraderError(Exception):
    """The grader refused the request; ``code`` is its machine-readable reason and
    ``retry_after`` the seconds to wait, where it said."""

    def __init__(self, message: str, code: str = "", status: int = 0, retry_after: int | None = None):
        super().__init__(message)
        self.code, self.status, self.retry_after = code, status, retry_after


@dataclass
class _Connection:
    url: str = ""
    token: str = ""
    lang: str = "en"


_connection = _Connection()


def connect(url: str | None = None, token: str | None = None, lang: str | None = None) -> None:
    """Where the grader is and your token (asked for without echo when not given or set in
    GRADER_TOKEN); ``lang`` ("en" or "ko") is the report's language."""
    url = url or os.environ.get("GRADER_URL", "")
    if not url:
        raise GraderError("where is the grader? connect(\"https://...\", token=...) or set GRADER_URL")
    if not url.startswith(("http://", "https://")):
        raise GraderError(f"the grader's address must start with http:// or https://, not {url!r}")
    token = token or os.environ.get("GRADER_TOKEN") or getpass.getpass("Your grader token (from its Tokens page): ")
    token = token.strip()
    if not token.startswith("gk_"):
        raise GraderError("that is not a grader token: tokens start with gk_ (make one on the Tokens page)")
    _connection.url, _connection.token = url.rstrip("/"), token
    _connection.lang = lang if lang in _TEXTS else _connection.lang


@dataclass
class Result:
    """A graded submission or practice run: the API's JSON in ``data``; printing it shows the report."""

    data: dict
    practice: bool
    lang: str = "en"
    site_url: str | None = field(default=None, repr=False)

    @property
    def status(self) -> str:
        return self.data["status"]

    @property
    def score(self) -> float | None:
        return self.data.get("score")

    @property
    def max_score(self) -> float | None:
        return self.data.get("max_score")

    @property
    def tests(self) -> list[dict]:
        return [_localized(t, self.lang) for t in ((self.data.get("report") or {}).get("tests") or [])]

    @property
    def passed(self) -> bool:
        return self.status == "graded" and self.score is not None and self.score == self.max_score

    def __str__(self) -> str:
        return report_text(self.data, practice=self.practice, lang=self.lang)


def submit(assignment: str | int, path: str | None = None, *, source: str | None = None, wait: bool = True,
           show: bool = True, timeout: float = 900) -> Result | dict:
    """Submit a .py or .ipynb file (or ``source``) to an assignment: its course's code and
    its title, ``"DL101/Your first gradient"``, or its number. It counts: it is an attempt,
    and the score that counts is the course's. An exercise's slug alone submits to the
    free catalogue, which counts for no course. Waits for the grade and prints the report
    unless told not to."""
    return _run(assignment, path, source, practice=False, wait=wait, show=show, timeout=timeout)


def check(assignment: str | int, path: str | None = None, *, source: str | None = None, wait: bool = True,
          show: bool = True, timeout: float = 900) -> Result | dict:
    """Run the visible tests against the file, as ``submit`` names the assignment: a
    practice run, counted for nothing (no score, no attempt)."""
    return _run(assignment, path, source, practice=True, wait=wait, show=show, timeout=timeout)


def assignments(show: bool = True) -> list[dict]:
    """The assignments of your courses, with your due date, attempts and the score that
    counts; printed as a table unless told not to."""
    if not _connection.url:
        connect()
    listed = _request("GET", "/api/v1/assignments")["assignments"]
    if show:
        for a in listed:
            left = "" if a.get("attempts_left") is None else f" · {a['attempts_left']} attempts left"
            if a.get("ends_at"):  # a timed assignment started: the student's own deadline
                left += f" · your time ends {a['ends_at']}"
            elif a.get("time_limit_minutes"):
                left += f" · timed: {a['time_limit_minutes']} minutes from your start (your first submission)"
            print(f"{a['course']['code']}/{a['title']} (#{a['id']}) · due {a['due_at_shown']}{left}")
    return listed


def _target(name: str | int) -> dict:
    """The body's target: an assignment by number, or by "COURSE/Title" (found among the
    caller's own), else an exercise of the free catalogue."""
    if isinstance(name, int):
        return {"assignment": name}
    if "/" not in name:
        return {"exercise": name}
    code, _, title = name.partition("/")
    found = [a for a in _request("GET", "/api/v1/assignments")["assignments"]
             if a["course"]["code"].casefold() == code.strip().casefold()
             and a["title"].casefold() == title.strip().casefold()]
    if len(found) != 1:
        mine = sorted(f"{a['course']['code']}/{a['title']}" for a in
                      _request("GET", "/api/v1/assignments")["assignments"])
        why = "several assignments are" if found else "no assignment of your courses is"
        raise GraderError(f"{why} called {name!r}; yours: {', '.join(mine) or 'none'}"
                          + (" (give its number instead)" if found else ""), code="assignment_not_found")
    return {"assignment": found[0]["id"]}


def _run(exercise, path, source, *, practice: bool, wait: bool, show: bool, timeout: float):
    if not _connection.url:
        connect()
    body = {**_target(exercise), **_code(path, source)}
    if practice:
        body["practice"] = True
    accepted = _request("POST", "/api/v1/submissions", body)
    if not wait:
        return accepted
    # Followed at the grader connected to, whatever address it names itself by (a proxy's).
    kind = "practice-runs" if practice else "submissions"
    data = _follow(f"/api/v1/{kind}/{urllib.parse.quote(str(accepted['id']), safe='')}", timeout, show)
    result = Result(data, practice=practice, lang=_connection.lang)
    if show:
        print(result)
    return result


def _code(path: str | None, source: str | None) -> dict:
    if (path is None) == (source is None):
        raise GraderError("give a file's path or a source, one of them")
    if source is not None:
        return {"source": source}
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise GraderError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise GraderError(f"{path} is not UTF-8 text: save it as UTF-8") from None
    if path.endswith(".ipynb"):
        try:
            return {"notebook": json.loads(text)}
        except ValueError as exc:
            raise GraderError(f"{path} is not a notebook (not JSON: {exc})") from None
    return {"source": text}


def _follow(url: str, timeout: float, show: bool) -> dict:
    deadline, pause, said = time.monotonic() + timeout, 0.3, None
    while True:
        data = _request("GET", url)
        if data["status"] in _DONE:
            if said and show:
                print(file=sys.stderr)
            return data
        words = _TEXTS[_connection.lang][data["status"]] if data["status"] in ("queued", "running") else data["status"]
        progress = data.get("progress") or {}
        line = f"{words} {progress['done']} / {progress['total']}" if progress.get("total") else words
        if show and line != said:
            print("\r" + line, end="", file=sys.stderr, flush=True)
            said = line
        if time.monotonic() > deadline:
            raise GraderError(f"not graded after {timeout:g} s; it is still queued: follow {url}")
        time.sleep(pause)
        pause = min(pause * 1.5, 2.0)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """The API never redirects; following one would carry the token wherever it points."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.netloc.lower()


def _request(method: str, path_or_url: str, body: dict | None = None) -> dict:
    url = path_or_url if path_or_url.startswith(("http://", "https://")) else _connection.url + path_or_url
    if _origin(url) != _origin(_connection.url):  # the token goes to the grader connected to, only
        raise GraderError(f"the grader pointed at {url}, which is not {_connection.url}: not followed")
    data = json.dumps(body).encode("utf-8") if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Authorization": f"Bearer {_connection.token}", "Accept": "application/json",
        "User-Agent": f"grader-client/{__version__}",
        **({"Content-Type": "application/json"} if data is not None else {})})
    try:
        with _opener.open(request, timeout=60) as response:
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        raise _refusal(exc) from None
    except urllib.error.URLError as exc:
        raise GraderError(f"cannot reach the grader at {_connection.url}: {exc.reason}") from None


# Refusals that waiting does not change: no "try again in" for them, whatever a header says.
_FINAL = ("no_attempts_left", "closed", "time_up", "not_a_member", "assignment_not_found", "syntax_error")


def _refusal(exc: urllib.error.HTTPError) -> GraderError:
    try:
        error = json.loads(exc.read().decode("utf-8"))["error"]
        code, message = error["code"], error["message"]
    except (ValueError, KeyError, TypeError):
        code, message = "http_error", f"the grader answered {exc.code} {exc.reason}"
    retry = exc.headers.get("Retry-After", "")
    retry_after = int(retry) if retry.isdigit() else None
    if code in ("missing_api_key", "invalid_api_key", "api_key_revoked"):
        message += ": make a new token on the grader's Tokens page and connect() with it"
    if retry_after and code not in _FINAL:
        message += f" (try again in {retry_after} s)"
    return GraderError(message, code=code, status=exc.code, retry_after=retry_after)


# ------------------------------------------------------------------ the report, as the page shows it

def _localized(test: dict, lang: str) -> dict:
    local = (test.get("i18n") or {}).get(lang) or {}
    return {**test, **{k: local[k] for k in ("name", "message", "hint") if local.get(k)}}


def _points(value) -> str:
    return "?" if value is None else f"{value:g}"


def _counting_lines(data: dict, say: dict) -> list[str]:
    """For an assignment's submission: its late penalty, and the score that counts now
    (which a late or a weaker attempt's own score is not)."""
    lines = []
    if data.get("late") and data.get("score") is not None:
        kept = data["score"] * (1 - (data.get("late_penalty_percent") or 0) / 100)
        lines.append(say["late"].format(p=_points(data.get("late_penalty_percent") or 0), s=_points(round(kept, 6)),
                                        m=_points(data.get("max_score"))))
    if data.get("counted_score") is not None:
        lines.append(say["counts"].format(s=_points(data["counted_score"]), m=_points(data.get("counted_max_score"))))
    return lines


def report_text(data: dict, *, practice: bool = False, lang: str = "en") -> str:
    """The report of a submission or practice run (the API's JSON) as text."""
    say = _TEXTS.get(lang, _TEXTS["en"])
    if data["status"] == "failed":
        return say["failed"]
    report = data.get("report") or {}
    tests = [_localized(t, lang) for t in report.get("tests") or []]
    lines = [f"{data['exercise']} · " + say["version"].format(v=data.get("exercise_version"))]
    if practice:
        lines.append(f"{say['visible']}: {_points(data.get('score'))} / {_points(data.get('max_score'))}"
                     f" · {say['practice']}")
    elif data.get("feedback_held_until"):
        lines.append(f"{say['visible']}: {_points(sum(t['points'] for t in tests))} / "
                     f"{_points(sum(t['max_points'] for t in tests))}")
        lines.append(say["held"].format(when=data["feedback_held_until"]))
    else:
        lines.append(f"{say['score']}: {_points(data.get('score'))} / {_points(data.get('max_score'))}")
    lines += _counting_lines(data, say)
    if report.get("status") not in (None, "graded"):
        lines.append(say.get(report["status"], report["status"]))
        if report.get("message"):
            lines.append(_indent(report["message"], 2))
    lines += [f"! {w}" for w in report.get("warnings") or []]
    if tests:
        failed = [t for t in tests if not t.get("passed")]
        lines.append(say["passed"].format(p=len(tests) - len(failed), t=len(tests))
                     + (f" · {say['first']}" if failed else ""))
        seen: set[str] = set()
        for t in failed + [t for t in tests if t.get("passed")]:
            mark = "✓" if t.get("passed") else "✗"
            hidden = "" if t.get("visible") else f" ({say['hidden']})"
            lines.append(f"{mark} {t['name']}{hidden}  {_points(t.get('points'))} / {_points(t.get('max_points'))}")
            if t.get("passed"):
                continue
            if t.get("message"):
                lines.append(_indent(t["message"], 4))
            if t.get("hint") and t["hint"] in seen:
                lines.append("    " + say["again"])
            elif t.get("hint"):
                lines.append(f"    {say['hint']}: {t['hint']}")
                seen.add(t["hint"])
    if report.get("output"):
        lines += [say["printed"] + ":", _indent(report["output"], 2)]
    return "\n".join(lines)


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in str(text).splitlines())


def main(argv: list[str] | None = None) -> int:
    """python -m grader_client {submit,check} ASSIGNMENT FILE (GRADER_URL and GRADER_TOKEN set); the
    assignment as "COURSE/Title" or its number, or an exercise of the free catalogue."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 3 or args[0] not in ("submit", "check"):
        print("usage: python -m grader_client {submit,check} ASSIGNMENT FILE   (GRADER_URL, GRADER_TOKEN set)",
              file=sys.stderr)
        return 2
    target = int(args[1]) if args[1].isdigit() else args[1]
    try:
        result = (submit if args[0] == "submit" else check)(target, args[2])
    except GraderError as exc:
        print(f"grader: {exc}", file=sys.stderr)
        return 1
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
