import torch

from grader.testing import (Hint, Mistake, StudentError, expect_close, expect_gradient, expect_leaf, expect_true,
                            hints_for_errors, mean_for_sum, points, visible)


def reference_f(a):
    """f computed here, on a copy of a without history."""
    b = a.detach() * 2
    while b.norm() < 1000:
        b = b * 2
    return b if b.sum() > 0 else 100 * b


NO_ELSE = ("f(a) is 100 times too small: the 100 * b branch is missing. When b.sum() is not positive "
           "(negative, or exactly 0), f must return 100 * b.",
           "f(a)가 100배 작습니다. 100 * b 분기가 빠졌습니다. b.sum()이 양수가 아니면(음수이거나 정확히 0이면) "
           "f는 100 * b를 반환해야 합니다.")

SWAPPED = ("f(a) is 100 times too large: the branches are swapped. Return b when b.sum() > 0 and "
           "100 * b otherwise.",
           "f(a)가 100배 큽니다. 두 분기가 뒤바뀌었습니다. b.sum() > 0이면 b를, 아니면 100 * b를 반환하세요.")

NO_FIRST_DOUBLE = ("f(a) is half the expected value: the first step b = a * 2 is missing, which shows when "
                   "a is already large and the loop does not run. Start from b = a * 2.",
                   "f(a)가 기대값의 절반입니다. 첫 단계 b = a * 2가 빠졌고, a가 이미 커서 루프가 돌지 않을 때 "
                   "드러납니다. b = a * 2에서 시작하세요.")

EXTRA_ROUND = ("f(a) is twice the expected value: b was doubled although b = a * 2 already had a norm of "
               "1000 or more. A while loop checks its condition first, so it may run zero times; do not "
               "double before checking.",
               "f(a)가 기대값의 두 배입니다. b = a * 2의 노름이 이미 1000 이상인데도 b를 두 배로 했습니다. "
               "while 루프는 조건을 먼저 확인하므로 한 번도 돌지 않을 수 있습니다. 확인하기 전에 두 배로 하지 "
               "마세요.")

TOO_FAR = ("f(a) is twice the expected value: b was doubled once more after its norm had reached 1000. The "
           "loop must stop at the first b whose norm is 1000 or more: keep doubling only while b.norm() < 1000.",
           "f(a)가 기대값의 두 배입니다. b의 노름이 이미 1000에 이른 뒤에 b를 한 번 더 두 배로 했습니다. 루프는 "
           "노름이 1000 이상인 첫 b에서 멈춰야 합니다: b.norm() < 1000인 동안만 두 배로 하세요.")

TOO_SOON = ("f(a) is half the expected value: the doubling stopped one round before its norm reached 1000. "
            "Keep doubling while b.norm() < 1000, starting from b = a * 2.",
            "f(a)가 기대값의 절반입니다. 노름이 1000에 이르기 한 번 전에 두 배 하기를 멈췄습니다. b = a * 2에서 "
            "시작해 b.norm() < 1000인 동안 두 배로 하세요.")

LE_BOUNDARY = ("f(a) is twice the expected value: the loop ran once more when the norm was exactly 1000. "
               "Keep doubling only while b.norm() < 1000, not <= 1000.",
               "f(a)가 기대값의 두 배입니다. 노름이 정확히 1000일 때 루프가 한 번 더 돌았습니다. "
               "b.norm() <= 1000이 아니라 b.norm() < 1000인 동안만 두 배로 하세요.")

GE_BOUNDARY = ("With b.sum() exactly 0, f(a) returned b instead of 100 * b: the condition is b.sum() > 0 "
               "(not >= 0), and every other case, a sum of 0 included, takes the 100 * b branch.",
               "b.sum()이 정확히 0일 때 f(a)가 100 * b 대신 b를 반환했습니다. 조건은 b.sum() >= 0이 아니라 "
               "b.sum() > 0이고, 합이 0인 경우를 포함한 나머지는 모두 100 * b 분기로 가야 합니다.")

CUT = Hint("f(a) is no longer connected to a: a step made a new tensor from the values of b, for example "
           "b.detach(), torch.tensor(b.tolist()) or a Python float, so autograd lost the path back to a. "
           "Keep every step a torch operation on b (b = b * 2); calling .item() inside a condition is fine.",
           "f(a)가 더 이상 a와 이어져 있지 않습니다. b.detach(), torch.tensor(b.tolist()), 파이썬 float처럼 "
           "b의 값으로 새 텐서를 만든 단계가 있어 autograd가 a로 돌아가는 경로를 잃었습니다. 모든 단계를 b에 "
           "대한 torch 연산(b = b * 2)으로 두세요. 조건문 안에서 .item()을 쓰는 것은 괜찮습니다.")

FIX = ("Call f(a).sum().backward() on the a you were given; autograd then fills a.grad.",
       "받은 a로 f(a).sum().backward()를 호출하면 autograd가 a.grad를 채웁니다.")

RETURN = Hint("grad_of_f should return a.grad, the gradient that f(a).sum().backward() left there.",
              "grad_of_f는 f(a).sum().backward()가 남긴 기울기인 a.grad를 반환해야 합니다.")

NOT_SCALAR = Hint("backward() was called on f(a), which is not a scalar. Reduce it first: "
                  "f(a).sum().backward().",
                  "스칼라가 아닌 f(a)에 backward()를 호출했습니다. 먼저 줄이세요: f(a).sum().backward().")

ERRORS = {
    "does not require grad": CUT,
    "implicitly created only for scalar": NOT_SCALAR,
}


def doubling_mistakes(a, expected, student):
    """f(a) doubled once too often or once too few, and the hint whose story fits: doubling
    before the first check (a do-while) shows only when 2a already has a norm of 1000 or
    more, and f is right elsewhere; a missing first doubling only when a itself has. Any
    other extra or missing doubling is a loop that stops at another norm, and the hint says
    no more than what the value shows."""
    a = a.detach()

    def do_while():
        return bool((a * 2).norm() >= 1000) and right_at(student, a / a.norm() * 0.75)

    twice, half = Mistake(expected * 2, *EXTRA_ROUND), Mistake(expected / 2, *NO_FIRST_DOUBLE)
    return [Mistake(lambda t: twice.matches(t, 1e-5, 1e-6) and do_while(), *EXTRA_ROUND),
            Mistake(expected * 2, *TOO_FAR),
            Mistake(lambda t: half.matches(t, 1e-5, 1e-6) and bool(a.norm() >= 1000), *NO_FIRST_DOUBLE),
            Mistake(expected / 2, *TOO_SOON)]


def right_at(student, a):
    """Whether the student's f is right at ``a``: one more call, made only once a check failed."""
    a = a.detach().clone().requires_grad_()
    try:
        value = student.call("f", a).value
    except StudentError:
        return False
    expected = reference_f(a)
    return hasattr(value, "data") and value.data.shape == expected.shape and bool(
        torch.allclose(value.data.double(), expected.double(), rtol=1e-5, atol=1e-6))


def only_at_the_boundary(student, a):
    """Whether f is right where the doubling ends at a norm of 1500 rather than exactly 1000:
    then an extra doubling at exactly 1000 is the boundary's alone (<= for <), not a bound
    other than 1000 (which doubles there too)."""
    return right_at(student, a.detach() * 1.5)


def f_mistakes(a, expected, *, boundary=None, student=None):
    mistakes = [Mistake(expected / 100, *NO_ELSE), Mistake(expected * 100, *SWAPPED)]
    if boundary == "norm":
        twice = Mistake(expected * 2, *LE_BOUNDARY)
        mistakes.append(Mistake(lambda t: twice.matches(t, 1e-5, 1e-6) and only_at_the_boundary(student, a),
                                *LE_BOUNDARY))
    if boundary == "sum":
        mistakes.insert(0, Mistake(expected / 100, *GE_BOUNDARY))
    return mistakes + doubling_mistakes(a, expected, student)


def check_f(student, a, *, boundary=None):
    a = a.requires_grad_()
    with hints_for_errors(ERRORS):
        call = student.call("f", a)
    expected = reference_f(a)
    expect_close(call.value, expected, what="f(a)", mistakes=f_mistakes(a, expected, boundary=boundary,
                                                                         student=student))


def check_grad(student, a):
    a = a.requires_grad_()
    with hints_for_errors(ERRORS):
        call = student.call("grad_of_f", a)
    expected = reference_f(a) / a.detach()
    grad_mistakes = [Mistake(expected / 100, *NO_ELSE), Mistake(expected * 100, *SWAPPED),
                     *doubling_mistakes(a, expected, student),
                     Mistake(lambda t: not bool(t.abs().sum()), CUT.en, CUT.ko),
                     mean_for_sum(expected, a.numel(), name="a")]  # f(a).mean().backward(): 1/n of it
    after = call.args[0]
    # RETURN says the value is not a.grad: not where it is a.grad, wrong because f(a) was.
    returned, held = (getattr(t, "data", None) for t in (call.value, after.grad))
    is_a_grad = isinstance(returned, torch.Tensor) and isinstance(held, torch.Tensor) and \
        returned.shape == held.shape and bool(torch.equal(returned, held))
    expect_close(call.value, expected, what="grad_of_f(a)", mistakes=grad_mistakes,
                 hint=None if is_a_grad else RETURN)
    with hints_for_errors(ERRORS):
        expect_gradient(after.grad, expected, what="a.grad", mistakes=grad_mistakes, value=call.value, x=a,
                        name="a", fix=FIX, rerun=lambda other: student.call("grad_of_f", other))
    expect_leaf(after, "a")


def with_sum_sign(a, positive):
    return a if (a.sum() > 0) == positive else -a


@visible
@points(2)
def test_f_positive_sum(student):
    """f(a) for a = [0.3, -0.2, 1.1, 0.4] (positive sum)

    ko: a = [0.3, -0.2, 1.1, 0.4]일 때의 f(a) (합이 양수)
    """
    check_f(student, torch.tensor([0.3, -0.2, 1.1, 0.4]))


@points(2)
def test_f_negative_sum(student):
    """f(a) for a vector with a negative sum

    ko: 합이 음수인 벡터의 f(a)
    """
    check_f(student, with_sum_sign(torch.randn(7), positive=False))


@points(1)
def test_f_matrix(student):
    """f(a) for a matrix

    ko: 행렬의 f(a)
    """
    check_f(student, with_sum_sign(torch.randn(3, 4), positive=False) * 0.01)


@points(1)
def test_f_large_input_no_doubling(student):
    """f(a) when 2a already has a norm of 1000 or more: the loop runs zero times

    ko: 2a의 노름이 이미 1000 이상일 때의 f(a): 루프가 한 번도 돌지 않음
    """
    a = with_sum_sign(torch.randn(5), positive=True)
    check_f(student, a / a.norm() * 1700)


@points(1)
def test_f_stops_when_norm_reaches_1000(student):
    """the loop stops when the norm is exactly 1000

    ko: 노름이 정확히 1000이면 루프가 멈춤
    """
    check_f(student, torch.tensor([[-5.625, 7.5], [7.5, 10.0]]), boundary="norm")


@points(1)
def test_f_zero_sum_takes_else_branch(student):
    """a sum of exactly 0 takes the 100 * b branch

    ko: 합이 정확히 0이면 100 * b 분기로 감
    """
    check_f(student, torch.tensor([0.75, -1.25, -0.75, 1.25, 0.5, -0.5]), boundary="sum")


@points(1)
def test_f_stays_in_graph(student):
    """f(a) is still connected to a (it has a grad_fn)

    ko: f(a)가 아직 a와 이어져 있음 (grad_fn이 있음)
    """
    a = with_sum_sign(torch.randn(6), positive=True).requires_grad_()
    with hints_for_errors(ERRORS):
        call = student.call("f", a)
    value = call.value
    expect_true(hasattr(value, "grad_fn") and value.requires_grad and value.grad_fn is not None,
                "f(a) does not require grad and has no grad_fn", hint=CUT,
                message_ko="f(a)가 기울기를 요구하지 않고 grad_fn도 없습니다")


@visible
@points(2)
def test_grad_of_f_vector(student):
    """grad_of_f(a) for a = [0.25, -1.5, 0.75] (negative sum)

    ko: a = [0.25, -1.5, 0.75]일 때의 grad_of_f(a) (합이 음수)
    """
    check_grad(student, torch.tensor([0.25, -1.5, 0.75]))


@points(2)
def test_grad_left_in_a_grad(student):
    """a.grad holds f(a) / a after grad_of_f (positive sum)

    ko: grad_of_f 뒤 a.grad에 f(a) / a가 들어 있음 (합이 양수)
    """
    check_grad(student, with_sum_sign(torch.randn(8), positive=True))


@points(1)
def test_grad_of_f_large_matrix(student):
    """gradient for a large matrix with a negative sum (no doubling at all)

    ko: 합이 음수인 큰 행렬의 기울기 (두 배 하기가 전혀 없음)
    """
    a = with_sum_sign(torch.randn(2, 3), positive=False)
    check_grad(student, a / a.norm() * 900)


SMALL_SUM = ("f(a) took the 100 * b branch although b.sum() is positive (0.4 here). This fits two mistakes: "
             "the branches are swapped, or the condition compares with a threshold other than 0. Return b "
             "exactly when b.sum() > 0, and 100 * b otherwise.",
             "b.sum()이 양수(여기서는 0.4)인데 f(a)가 100 * b 분기로 갔습니다. 두 가지 실수가 가능합니다: 분기가 "
             "뒤바뀌었거나, 조건이 0이 아닌 다른 기준과 비교합니다. b.sum() > 0일 때 정확히 b를, 아니면 "
             "100 * b를 반환하세요.")


@points(1)
def test_f_small_positive_sum(student):
    """a small positive sum (0.4 after the doublings) still takes the b branch

    ko: 작은 양수 합(두 배 하기 뒤 0.4)도 b 분기로 감
    """
    a = torch.tensor([250.0, -249.9], dtype=torch.float64).requires_grad_()
    with hints_for_errors(ERRORS):
        call = student.call("f", a)
    expected = reference_f(a)
    expect_close(call.value, expected, what="f(a)",
                 mistakes=[Mistake(expected * 100, *SMALL_SUM)] + f_mistakes(a, expected, student=student))
