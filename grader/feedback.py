"""What a failed hidden test says: a message (shown in full for visible tests), a hint,
and the student's own failures (their code raised, ran out of time, crashed). Hidden tests
import these from grader.testing; grader.evidence builds hints with them too."""

from __future__ import annotations

import builtins
from dataclasses import dataclass

from grader.engine.inside.wire import StudentException


@dataclass(frozen=True)
class Hint:
    en: str
    ko: str | None = None

    def as_dict(self) -> dict[str, str]:
        return {"en": self.en, **({"ko": self.ko} if self.ko else {})}


class Feedback(AssertionError):
    """A failed check with a message (shown for visible tests) and an optional hint."""

    def __init__(self, message: str, hint: Hint | None = None, message_ko: str | None = None):
        super().__init__(message)
        self.message = message
        self.message_ko = message_ko
        self.hint = hint


_KNOWN_EXCEPTIONS = frozenset(
    name for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
) | {"OutOfMemoryError", "GradcheckError"}


class StudentError(Feedback):
    """The student's code did not return: it raised, ran out of time or memory, or exited."""

    KINDS = {
        "exception": ("Your code raised an exception", "코드에서 예외가 발생했습니다"),
        "timeout": ("Your code ran out of time", "시간 제한을 넘었습니다"),
        "memory": ("Your code ran out of memory", "메모리 제한을 넘었습니다"),
        "exit": ("Your code ended its process instead of returning",
                 "코드가 값을 반환하지 않고 프로세스를 종료했습니다"),
        "crash": ("The process running your code crashed", "코드를 실행하던 프로세스가 비정상 종료했습니다"),
        "too_large": ("Your code returned too much data", "반환한 데이터가 너무 큽니다"),
        "unencodable": ("Your code returned a value that cannot be graded",
                        "채점할 수 없는 값을 반환했습니다"),
        "malformed": ("Your code sent back data the grader cannot read",
                      "코드가 채점기가 읽을 수 없는 데이터를 돌려보냈습니다"),
        "sandbox": ("The grader could not run your code", "채점기가 코드를 실행하지 못했습니다"),
        "refused": ("Your submission could not be run", "제출한 코드를 실행할 수 없습니다"),
    }

    def __init__(self, kind: str, function: str, detail: str = "",
                 exception: StudentException | None = None):
        en, ko = self.KINDS.get(kind, self.KINDS["crash"])
        self.kind, self.function, self.exception, self.detail = kind, function, exception, detail
        where = f" in {function}()"
        full = f"{en}{where}" + (f": {detail}" if detail else "")
        full_ko = f"{function}(): {ko}" + (f" ({detail})" if detail else "")
        if exception is not None:
            full += "\n" + exception.format()
            full_ko += "\n" + exception.format()
        super().__init__(full, message_ko=full_ko)

    def short(self) -> str:
        """What a hidden test may show: no exception message (it could echo hidden inputs)."""
        en, _ = self.KINDS.get(self.kind, self.KINDS["crash"])
        line = ""
        if self.exception is not None:
            # The class name is the student's to choose, so only well-known ones are shown.
            name = self.exception.type if self.exception.type in _KNOWN_EXCEPTIONS else "an exception"
            # No line number: a submission can raise at a line chosen from the hidden input.
            line = f": {name}"
        elif self.kind in ("timeout", "memory", "too_large", "refused"):
            line = f": {self.detail}"
        return f"{en} in {self.function}(){line}"
