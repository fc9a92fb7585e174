"""The hidden tests: ordinary pytest tests that ask for the ``student`` fixture. They run in
a sandbox of the exercise's own; the submission runs in another, and only data crosses.

A test's docstring names it in the report (its first line, and a ``ko:`` line in Korean).
``@visible`` shows a failing test's full message; a hidden test shows only its name, points
and hint. ``@points(n)`` is what it is worth (1 by default)."""

import torch

from grader.testing import (Hint, Mistake, expect_close, expect_gradient, expect_leaf, hints_for_errors, points,
                            visible)

# Known wrong values, each with the misconception that produces it: expect_close picks the
# hint of the first one the student's value matches. Every hint needs a row in
# MISCONCEPTIONS.md and a mutant in mutants/ that shows it (grader check holds them to it).
def mistakes(x):
    x = x.detach()
    return [
        Mistake(6 * x ** 2, "The gradient is twice too large: backward() ran twice and the second call "
                            "added to x.grad (gradients accumulate). Call it once.",
                "기울기가 두 배입니다. backward()를 두 번 호출해 x.grad에 누적되었습니다. 한 번만 호출하세요."),
        Mistake(x ** 2, "A third of the expected gradient: the derivative of x³ is 3x², not x².",
                "기대값의 3분의 1입니다. x³의 도함수는 x²이 아니라 3x²입니다."),
    ]


# Errors the student's code raises, mapped to the misconception behind them.
NOT_SCALAR = Hint("backward() needs a scalar: sum the cubes into one number first, then call backward().",
                  "backward()에는 스칼라가 필요합니다. 세제곱을 먼저 하나의 수로 더한 뒤 backward()를 호출하세요.")
ERRORS = {"grad can be implicitly created only for scalar outputs": NOT_SCALAR}

# How to do it right, for the empty-gradient hints (which of the look-alike ways of leaving
# x.grad empty the student took is decided by grader.testing.evidence, from data).
FIX = ("Build y from x with torch operations and call y.backward(); autograd then fills x.grad.",
       "x로 y를 만들고 y.backward()를 호출하면 autograd가 x.grad를 채웁니다.")


def call(student, x):
    with hints_for_errors(ERRORS):
        return student.call("grad_of_cubes", x)


@visible
@points(2)
def test_returns_three_x_squared(student):
    """returns 3x² for x = [1, -2, 3]

    ko: x = [1, -2, 3]에 대해 3x²을 반환
    """
    x = torch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    expect_close(call(student, x).value, 3 * x.detach() ** 2, what="grad_of_cubes(x)", mistakes=mistakes(x))


@points(2)
def test_gradient_is_left_in_x_grad(student):
    """x.grad holds 3x² after the call, and x is still the leaf it was given

    ko: 호출 뒤 x.grad에 3x²이 있고, x는 받은 리프 그대로임
    """
    x = torch.randn(6, dtype=torch.float64).requires_grad_()
    done = call(student, x)
    after = done.args[0]  # x as the call left it (a TensorState: data, grad, is_leaf, ...)
    expect_gradient(after.grad, 3 * x.detach() ** 2, what="x.grad", mistakes=mistakes(x), x=x, value=done.value,
                    rerun=lambda other: call(student, other), fix=FIX)
    expect_leaf(after)


@points(1)
def test_a_leaf_made_inside_the_sandbox(student):
    """works on a leaf made inside the sandbox

    ko: 샌드박스 안에서 만든 리프에서도 동작
    """
    values = [0.5, -1.5, 2.0, 4.0]
    with hints_for_errors(ERRORS):
        grad = student.probe("grad_on_a_fresh_leaf", values, for_function="grad_of_cubes").value
    expected = 3 * torch.tensor(values, dtype=torch.float64) ** 2
    expect_close(grad, expected, what="x.grad", mistakes=mistakes(torch.tensor(values, dtype=torch.float64)))
