import torch

from grader.testing import (Mistake, expect_close, expect_gradient, expect_leaf, expect_no_hand_made_grad,
                            mean_for_sum, points, visible)


def mistakes(x):
    x = x.detach()
    return [
        Mistake(8 * x, "The gradient is twice too large: backward() ran twice on the same graph and "
                       "the second call added to x.grad (gradients accumulate). Call it once.",
                "기울기가 두 배입니다. 같은 그래프에서 backward()를 두 번 호출해 x.grad에 누적되었습니다. "
                "한 번만 호출하세요."),
        Mistake(2 * x, "Half the expected gradient: the factor 2 in y = 2·xᵀx is missing.",
                "기대값의 절반입니다. y = 2·xᵀx의 계수 2가 빠졌습니다."),
        Mistake(lambda t: t.dim() == 0, "You returned the value of y, a scalar. Return x.grad, the gradient.",
                "y의 값(스칼라)을 반환했습니다. 기울기인 x.grad를 반환하세요."),
        mean_for_sum(4 * x, x.numel()),  # xᵀx as (x * x).mean(): 4x/n
    ]


FIX = ("Build y from x with torch operations and call y.backward(); autograd then fills x.grad.",
       "x로 y를 만들고 y.backward()를 호출하면 autograd가 x.grad를 채웁니다.")


def rerun(student):
    """The same call with another x: the evidence that tells the empty-gradient mistakes apart."""
    return lambda other: student.call("grad_2xtx", other)


@visible
@points(2)
def test_returns_gradient_of_2xtx(student):
    """returns 4x for x = [1, 2, 3]

    ko: x = [1, 2, 3]에 대해 4x를 반환
    """
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    call = student.call("grad_2xtx", x)
    expect_close(call.value, 4 * x.detach(), what="grad_2xtx(x)", mistakes=mistakes(x))


@points(2)
def test_gradient_is_left_in_x_grad(student):
    """x.grad holds 4x after the call

    ko: 호출이 끝난 뒤 x.grad에 4x가 들어 있음
    """
    x = torch.randn(7).requires_grad_()
    call = student.call("grad_2xtx", x)
    after = call.args[0]
    expect_gradient(after.grad, 4 * x.detach(), what="x.grad", mistakes=mistakes(x), rerun=rerun(student), x=x,
                    value=call.value, fix=FIX)
    expect_no_hand_made_grad(student, "grad_2xtx")
    expect_leaf(after)


@points(1)
def test_keeps_dtype_float64(student):
    """float64 in, float64 gradient out

    ko: float64 입력에는 float64 기울기
    """
    x = torch.randn(5, dtype=torch.float64).requires_grad_()
    call = student.call("grad_2xtx", x)
    expect_close(call.value, 4 * x.detach(), what="grad_2xtx(x)", check_dtype=True, mistakes=mistakes(x))
    expect_gradient(call.args[0].grad, 4 * x.detach(), what="x.grad", check_dtype=True, rerun=rerun(student),
                    x=x, value=call.value, fix=FIX)


@points(1)
def test_works_for_other_lengths(student):
    """works for a single element and for a long vector

    ko: 원소 하나와 긴 벡터에서도 동작
    """
    for n in (1, 300):
        x = (torch.rand(n) * 10 - 5).requires_grad_()
        call = student.call("grad_2xtx", x)
        expect_close(call.value, 4 * x.detach(), what=f"grad_2xtx(x) for {n} elements",
                     mistakes=mistakes(x))
