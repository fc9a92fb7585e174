import torch

from grader.testing import (Feedback, Hint, Mistake, expect_close, expect_gradient, expect_leaf,
                            expect_no_hand_made_grad, mean_for_sum, points, visible)

NOT_RESET = ("g2 came out as 4x + 1: the first gradient (4x) was still in x.grad when backward() added "
             "the second one (ones). Gradients accumulate; reset the buffer between the two backward() "
             "calls with x.grad.zero_() (or x.grad = None).",
             "g2가 4x + 1입니다. 첫 번째 기울기(4x)가 x.grad에 남아 있는 상태에서 backward()가 두 번째 "
             "기울기(1)를 더했습니다. 기울기는 누적되므로 두 backward() 호출 사이에 x.grad.zero_()"
             "(또는 x.grad = None)로 버퍼를 초기화하세요.")

ALIASED = ("g1 changed after you computed it: g1 is x.grad itself, and x.grad.zero_() and the second "
           "backward() modify that tensor in place. Keep a copy: g1 = x.grad.clone().",
           "g1을 구한 뒤에 값이 바뀌었습니다. g1이 x.grad 그 자체라서 x.grad.zero_()와 두 번째 backward()가 "
           "같은 텐서를 제자리에서 바꿉니다. 복사본을 저장하세요: g1 = x.grad.clone().")

BY_HAND = Hint("x.grad does not hold the gradient of x.sum() (a tensor of ones) after the call: the last "
               "backward() was not x.sum().backward() on the x you were given. Reset x.grad, then call "
               "x.sum().backward() and return x.grad as g2.",
               "호출이 끝난 뒤 x.grad에 x.sum()의 기울기(모두 1인 텐서)가 없습니다. 마지막 backward()가 받은 x에 "
               "대한 x.sum().backward()가 아니었습니다. x.grad를 초기화한 뒤 x.sum().backward()를 호출하고 "
               "x.grad를 g2로 반환하세요.")

FIX = ("Build each function from the x you were given with torch operations and call backward() on it.",
       "받은 x로 torch 연산을 해서 각 함수를 만들고 backward()를 호출하세요.")

PAIR = Hint("Return a pair: return g1, g2.", "두 값을 쌍으로 반환하세요: return g1, g2.")


def pair(call):
    value = call.value
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise Feedback("two_gradients(x) should return a pair (g1, g2)", PAIR,
                       "two_gradients(x)는 (g1, g2) 쌍을 반환해야 합니다")
    return value


def g1_mistakes(x):
    x = x.detach()
    return [Mistake(torch.ones_like(x), *ALIASED),
            Mistake(4 * x + 1, *ALIASED),
            Mistake(torch.zeros_like(x), *ALIASED)]


def g2_mistakes(x):
    x = x.detach()
    return [Mistake(4 * x + 1, *NOT_RESET),
            mean_for_sum(torch.ones_like(x), x.numel())]  # x.mean().backward() for x.sum(): ones / n


@visible
@points(2)
def test_second_gradient_is_ones(student):
    """g2 is all ones for x = [1.5, -0.5, 2.5]

    ko: x = [1.5, -0.5, 2.5]에 대해 g2는 모두 1
    """
    x = torch.tensor([1.5, -0.5, 2.5], requires_grad=True)
    g1, g2 = pair(student.call("two_gradients", x))
    expect_close(g2, torch.ones(3), what="g2", mistakes=g2_mistakes(x))


@points(2)
def test_first_gradient_is_4x(student):
    """g1 is still 4x when two_gradients returns

    ko: two_gradients가 반환할 때 g1은 여전히 4x
    """
    x = torch.randn(6).requires_grad_()
    g1, g2 = pair(student.call("two_gradients", x))
    expect_close(g1, 4 * x.detach(), what="g1", mistakes=g1_mistakes(x))


@points(1)
def test_x_grad_holds_second_gradient(student):
    """x.grad holds the second gradient afterwards (float64 keeps its dtype)

    ko: 호출 뒤 x.grad에 두 번째 기울기가 들어 있음 (float64는 dtype 유지)
    """
    x = torch.randn(5, dtype=torch.float64).requires_grad_()
    call = student.call("two_gradients", x)
    after = call.args[0]
    expect_gradient(after.grad, torch.ones(5, dtype=torch.float64), what="x.grad", check_dtype=True,
                    mistakes=g2_mistakes(x), hint=BY_HAND, value=call.value, x=x, fix=FIX,
                    rerun=lambda other: student.call("two_gradients", other))
    expect_no_hand_made_grad(student, "two_gradients")
    expect_leaf(after)
