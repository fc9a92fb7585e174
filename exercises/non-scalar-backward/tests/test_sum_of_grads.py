import torch

from grader.testing import (Hint, Mistake, expect_close, expect_gradient, expect_leaf, hints_for_errors,
                            mean_for_sum, points, visible)

IMPLICIT = Hint("backward() was called on a y that is not a scalar, without an argument. PyTorch makes the "
                "starting gradient by itself only for a scalar output; for a tensor y, pass one of y's "
                "shape: y.backward(torch.ones_like(y)).",
                "스칼라가 아닌 y에 인자 없이 backward()를 호출했습니다. PyTorch가 시작 기울기를 알아서 "
                "만들어 주는 것은 출력이 스칼라일 때뿐입니다. 텐서 y에는 y와 같은 모양의 텐서를 넘기세요: "
                "y.backward(torch.ones_like(y)).")

SHAPE = Hint("The gradient passed to backward() does not have y's shape. torch.ones(len(y)) fits only a "
             "1-D y: len() of a matrix counts its rows. torch.ones_like(y) always has y's shape.",
             "backward()에 넘긴 gradient의 모양이 y와 다릅니다. torch.ones(len(y))는 1차원 y에만 맞습니다. "
             "행렬에 len()을 쓰면 행의 개수만 나옵니다. torch.ones_like(y)는 언제나 y와 모양이 같습니다.")

FIX = ("Call backward on y = x * x, built from the x you were given, with a gradient of ones; autograd then "
       "fills x.grad.",
       "받은 x로 만든 y = x * x에 모두 1인 gradient를 주어 backward를 호출하면 autograd가 x.grad를 채웁니다.")

STILL_LEAF = Hint("Do not replace or detach x; differentiate with respect to the x you were given.",
                  "x를 바꾸거나 detach하지 말고, 받은 x에 대해 미분하세요.")

ERRORS = {"only for scalar outputs": IMPLICIT, "Mismatch in shape": SHAPE}


def mistakes(x):
    x = x.detach()
    return [
        Mistake(x * x, "You returned y = x·x itself. Return x.grad, which backward() fills.",
                "y = x·x 자체를 반환했습니다. backward()가 채우는 x.grad를 반환하세요."),
        Mistake(2 * x * x, "You got 2x², that is 2x multiplied by x: x was passed as the gradient argument. "
                           "That argument weights each element of y; to add up all their gradients, every "
                           "weight is 1: torch.ones_like(y).",
                "2x², 즉 2x에 x를 곱한 값이 나왔습니다. gradient 인자로 x를 넘겼습니다. 이 인자는 y의 각 "
                "원소에 곱할 가중치이고, 모든 원소의 기울기를 더하려면 가중치가 모두 1이어야 합니다: "
                "torch.ones_like(y)."),
        Mistake(2 * x ** 3, "You got 2x³, that is 2x multiplied by y: y was passed as the gradient "
                            "argument (y.backward(y)). The argument is a weight per element of y, and "
                            "for the sum of the gradients every weight is 1: torch.ones_like(y).",
                "2x³, 즉 2x에 y를 곱한 값이 나왔습니다. gradient 인자로 y를 넘겼습니다(y.backward(y)). "
                "이 인자는 y의 원소마다 곱할 가중치이고, 기울기의 합을 구하려면 모두 1이어야 합니다: "
                "torch.ones_like(y)."),
        mean_for_sum(2 * x, x.numel(), name="y"),  # y.mean().backward(), the sum being what ones give: 2x/n
    ]


def run(student, x):
    with hints_for_errors(ERRORS):
        return student.call("sum_of_grads", x)


def rerun(student):
    """The same call with another x: the evidence that tells the empty-gradient mistakes apart."""
    return lambda other: run(student, other)


@visible
@points(2)
def test_sum_of_grads_is_2x(student):
    """sum_of_grads returns 2x for x = [1.5, -1, 0.25]

    ko: x = [1.5, -1, 0.25]에 대해 sum_of_grads가 2x를 반환
    """
    x = torch.tensor([1.5, -1.0, 0.25], requires_grad=True)
    call = run(student, x)
    expect_close(call.value, 2 * x.detach(), what="sum_of_grads(x)", mistakes=mistakes(x))


@points(2)
def test_sum_of_grads_left_in_x_grad(student):
    """after sum_of_grads, x.grad holds 2x

    ko: sum_of_grads 뒤 x.grad에 2x가 들어 있음
    """
    x = torch.randn(6).requires_grad_()
    call = run(student, x)
    after = call.args[0]
    expect_gradient(after.grad, 2 * x.detach(), what="x.grad", mistakes=mistakes(x), rerun=rerun(student), x=x,
                    value=call.value, fix=FIX)
    expect_leaf(after, hint=STILL_LEAF)


@points(1)
def test_sum_of_grads_float64_matrix(student):
    """sum_of_grads works on a float64 matrix and keeps its dtype

    ko: sum_of_grads가 float64 행렬에서 동작하고 dtype을 유지
    """
    x = torch.randn(3, 4, dtype=torch.float64).requires_grad_()
    call = run(student, x)
    expect_close(call.value, 2 * x.detach(), what="sum_of_grads(x)", check_dtype=True, mistakes=mistakes(x))
    expect_gradient(call.args[0].grad, 2 * x.detach(), what="x.grad", check_dtype=True, mistakes=mistakes(x),
                    rerun=rerun(student), x=x, value=call.value, fix=FIX)
