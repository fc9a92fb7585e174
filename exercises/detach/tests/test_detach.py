import torch

from grader.testing import (Hint, Mistake, StudentError, calls_method, expect_close, expect_gradient, expect_leaf,
                            mean_for_sum, points, visible)


def partial_mistakes(x):
    x = x.detach()
    return [
        Mistake(3 * x * x,
                "You got 3x², the gradient of x·x·x: the gradient also flowed back through u into y. "
                "Build u with y.detach(); autograd then treats u as a constant and the gradient of "
                "z = u·x is u.",
                "3x²이 나왔습니다. x·x·x의 기울기로, 기울기가 u를 거쳐 y까지 흘러갔습니다. "
                "u를 y.detach()로 만들면 autograd가 u를 상수로 보므로 z = u·x의 기울기는 u가 됩니다."),
        Mistake(2 * x * x,
                "You got 2x²: the wrong factor was detached. z = y * x.detach() stops the gradient at "
                "the lone x and lets it through y = x·x. Detach y, not x: "
                "u = y.detach(), z = u * x.",
                "2x²이 나왔습니다. 엉뚱한 텐서를 분리했습니다. z = y * x.detach()는 따로 곱한 x에서 "
                "기울기를 끊고 y = x·x 쪽으로는 흘려보냅니다. x가 아니라 y를 분리하세요: "
                "u = y.detach(), z = u * x."),
        mean_for_sum(x * x, x.numel()),  # z.mean() for z.sum(): x²/n
    ]


def source_mistakes(x):
    x = x.detach()
    return [
        Mistake(x * x + 2 * x,
                "You got x² + 2x: x.grad still held the gradient of z.sum() (x²) when "
                "y.sum().backward() added 2x to it. Gradients accumulate in x.grad; clear it between "
                "the two backward() calls (x.grad = None, or x.grad.zero_()).",
                "x² + 2x가 나왔습니다. z.sum()의 기울기(x²)가 x.grad에 남아 있는 상태에서 "
                "y.sum().backward()가 2x를 더했습니다. 기울기는 x.grad에 누적되므로 두 backward() 호출 "
                "사이에 x.grad를 비우세요(x.grad = None 또는 x.grad.zero_())."),
        Mistake(3 * x * x + 2 * x,
                "You got 3x² + 2x: the gradient flowed through u into y (u was not made with "
                "y.detach()), and x.grad was not cleared before y.sum().backward(), so both "
                "gradients accumulated.",
                "3x² + 2x가 나왔습니다. u를 y.detach()로 만들지 않아 기울기가 u를 거쳐 y로 흘렀고, "
                "y.sum().backward() 전에 x.grad를 비우지 않아 두 기울기가 누적되었습니다."),
        Mistake(x * x,
                "You got x², the gradient of z.sum(). After clearing x.grad, call y.sum().backward() "
                "and return the gradient it leaves in x.grad.",
                "z.sum()의 기울기인 x²이 나왔습니다. x.grad를 비운 뒤 y.sum().backward()를 호출하고, "
                "그 결과로 x.grad에 남은 기울기를 반환하세요."),
        Mistake(torch.zeros_like(x),
                "x.grad is all zeros: it was cleared, but y.sum().backward() never added to it. "
                "detach() made a new tensor u and left y and its graph alone, so y can still be "
                "backpropagated.",
                "x.grad가 모두 0입니다. 비우기는 했지만 y.sum().backward()가 기울기를 더하지 않았습니다. "
                "detach()는 새 텐서 u를 만들 뿐 y와 그 그래프는 그대로 두므로 y로 역전파할 수 있습니다."),
        mean_for_sum(2 * x, x.numel()),  # y.mean() for y.sum(): 2x/n
    ]


FIX = ("Build the graph from the x you were given with torch operations and call backward(); autograd then "
       "fills x.grad.",
       "받은 x로 torch 연산을 해서 그래프를 만들고 backward()를 호출하면 autograd가 x.grad를 채웁니다.")


def rerun(student, function):
    """The same call with another x: the evidence that tells the empty-gradient mistakes apart."""
    return lambda other: run(student, function, other)

IN_PLACE = Hint("backward() found nothing that requires grad: a tensor was detached in place. "
                "y.detach_() (with the underscore) cuts y itself out of the graph, so y.sum() can no "
                "longer be backpropagated. y.detach() returns a new tensor and leaves y alone.",
                "backward()가 기울기를 요구하는 텐서를 찾지 못했습니다. 텐서를 제자리에서 분리했습니다. "
                "밑줄이 붙은 y.detach_()는 y 자체를 그래프에서 잘라내므로 y.sum()으로 더는 역전파할 수 "
                "없습니다. y.detach()는 새 텐서를 반환하고 y는 그대로 둡니다.")

NO_GRAPH = Hint("backward() was called on a tensor that does not require grad: nothing autograd recorded "
                "connects it to x, so there is no graph to backpropagate through. Detach only y (u = y.detach()), "
                "keep z = u * x and y = x * x as they are, and backpropagate z.sum() and y.sum().",
                "기울기를 요구하지 않는 텐서에 backward()를 호출했습니다. autograd가 기록한 어떤 연산도 그 텐서를 "
                "x와 잇지 않으므로 역전파할 그래프가 없습니다. y만 분리하고(u = y.detach()) z = u * x와 "
                "y = x * x는 그대로 두어 z.sum()과 y.sum()으로 역전파하세요.")

FREED = Hint("The second backward() ran through a part of the graph that the first one had already "
             "freed. That happens when z is built from y itself: z.sum().backward() then also runs "
             "through x·x. Build z from u = y.detach() and the graph of y stays untouched.",
             "두 번째 backward()가 첫 번째 backward()에서 이미 해제된 그래프를 지나갔습니다. z를 y 자체로 "
             "만들면 z.sum().backward()가 x·x 부분까지 지나가기 때문입니다. z를 u = y.detach()로 "
             "만들면 y의 그래프는 건드리지 않습니다.")


def run(student, function, x):
    """Call the student, naming the misconception behind the usual autograd errors."""
    try:
        return student.call(function, x)
    except StudentError as err:
        text = err.exception.message if err.exception is not None else ""
        if "does not require grad" in text:
            # Only detach_() cuts y itself out of the graph; a tensor made without a graph in any
            # other way (x.detach() in z, y under no_grad) raises the same error.
            err.hint = IN_PLACE if calls_method(student.source, None, "detach_") else NO_GRAPH
        elif "backward through the graph a second time" in text:
            err.hint = FREED
        raise


@visible
@points(2)
def test_partial_grad_is_u(student):
    """partial_grad returns u = x² for x = [0.5, -1.5, 2.5, 4]

    ko: x = [0.5, -1.5, 2.5, 4]에 대해 partial_grad가 u = x²를 반환
    """
    x = torch.tensor([0.5, -1.5, 2.5, 4.0], requires_grad=True)
    call = run(student, "partial_grad", x)
    expect_close(call.value, x.detach() ** 2, what="partial_grad(x)", mistakes=partial_mistakes(x))


@points(2)
def test_partial_grad_left_in_x_grad(student):
    """after partial_grad, x.grad holds u = x²

    ko: partial_grad 뒤 x.grad에 u = x²가 들어 있음
    """
    x = torch.randn(6).requires_grad_()
    call = run(student, "partial_grad", x)
    after = call.args[0]
    expect_gradient(after.grad, x.detach() ** 2, what="x.grad", mistakes=partial_mistakes(x),
                    rerun=rerun(student, "partial_grad"), x=x, value=call.value, fix=FIX)
    expect_leaf(after)


@visible
@points(2)
def test_source_grad_is_2x(student):
    """source_grad returns 2x for x = [-2, 0.5, 1.5, 3]

    ko: x = [-2, 0.5, 1.5, 3]에 대해 source_grad가 2x를 반환
    """
    x = torch.tensor([-2.0, 0.5, 1.5, 3.0], requires_grad=True)
    call = run(student, "source_grad", x)
    expect_close(call.value, 2 * x.detach(), what="source_grad(x)", mistakes=source_mistakes(x))


@points(2)
def test_source_grad_left_in_x_grad(student):
    """after source_grad, x.grad holds 2x and nothing else

    ko: source_grad 뒤 x.grad에 2x만 들어 있음
    """
    x = torch.randn(5).requires_grad_()
    call = run(student, "source_grad", x)
    after = call.args[0]
    expect_gradient(after.grad, 2 * x.detach(), what="x.grad", mistakes=source_mistakes(x),
                    rerun=rerun(student, "source_grad"), x=x, value=call.value, fix=FIX)
    expect_leaf(after)


@points(1)
def test_float64_matrix(student):
    """both functions work on a float64 matrix and keep its dtype

    ko: 두 함수 모두 float64 행렬에서 동작하고 dtype을 유지
    """
    x = torch.randn(3, 4, dtype=torch.float64).requires_grad_()
    call = run(student, "partial_grad", x)
    expect_close(call.value, x.detach() ** 2, what="partial_grad(x)", check_dtype=True,
                 mistakes=partial_mistakes(x))
    expect_gradient(call.args[0].grad, x.detach() ** 2,
                    what=("x.grad after partial_grad", "partial_grad 뒤의 x.grad"),
                    check_dtype=True, mistakes=partial_mistakes(x), rerun=rerun(student, "partial_grad"), x=x,
                    value=call.value, fix=FIX)
    call = run(student, "source_grad", x)
    expect_close(call.value, 2 * x.detach(), what="source_grad(x)", check_dtype=True,
                 mistakes=source_mistakes(x))
    expect_gradient(call.args[0].grad, 2 * x.detach(),
                    what=("x.grad after source_grad", "source_grad 뒤의 x.grad"),
                    check_dtype=True, mistakes=source_mistakes(x), rerun=rerun(student, "source_grad"), x=x,
                    value=call.value, fix=FIX)
