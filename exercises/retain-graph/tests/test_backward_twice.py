import torch

from grader.testing import (Feedback, Hint, Mistake, expect_close, expect_gradient, expect_leaf,
                            expect_no_hand_made_grad, hints_for_errors, mean_for_sum, points, rebuilds_graph,
                            visible)

RETAIN_GRAPH = Hint("The second backward() ran through a graph that the first one had already freed: as it "
                    "goes, backward() releases the values the graph saved for it (here x, kept by x ** 3). "
                    "Keep them with the first call: y.backward(retain_graph=True), then y.backward(). "
                    "retain_graph=True on the second call comes too late; it would only keep the graph for "
                    "a third.",
                    "두 번째 backward()가 첫 번째 backward()에서 이미 해제된 그래프를 지나갔습니다. backward()는 "
                    "진행하면서 그래프가 저장해 둔 값(여기서는 x ** 3이 보관한 x)을 해제합니다. 첫 번째 호출에서 "
                    "보존하세요: y.backward(retain_graph=True) 다음에 y.backward(). 두 번째 호출에 "
                    "retain_graph=True를 주면 너무 늦습니다. 세 번째 호출을 위해 그래프를 남길 뿐입니다.")

FIX = ("Call y.backward() twice on the x you were given and return x.grad.",
       "받은 x로 만든 y에 y.backward()를 두 번 호출하고 x.grad를 반환하세요.")

RECOMPUTED = Hint("The second backward() started from a y computed again, not from the y of the first: a new y "
                  "has a new graph, so nothing was backpropagated twice and retain_graph was never needed. "
                  "Compute y once, then call y.backward(retain_graph=True) and y.backward() on that same y.",
                  "두 번째 backward()가 첫 번째의 y가 아니라 다시 계산한 y에서 시작했습니다. 새 y에는 새 그래프가 "
                  "있으므로 같은 그래프를 두 번 역전파한 것이 아니고, retain_graph도 필요 없었습니다. y를 한 번만 "
                  "계산하고 그 y에 y.backward(retain_graph=True)와 y.backward()를 호출하세요.")

ONE_PASS = Hint("x.grad holds 6x², but from a single backward() pass (of 2 * y, say): nothing was backpropagated "
                "twice. The exercise is the same y backpropagated twice: y.backward(retain_graph=True), then "
                "y.backward().",
                "x.grad가 6x²이지만 backward() 한 번(예를 들어 2 * y의 역전파)으로 얻은 값입니다. 두 번 역전파한 "
                "것이 없습니다. 이 문제는 같은 y를 두 번 역전파하는 것입니다: y.backward(retain_graph=True) 다음에 "
                "y.backward().")

IMPLICIT = Hint("backward() was called on a y that is not a scalar. Sum it first: y = (x ** 3).sum().",
                "스칼라가 아닌 y에 backward()를 호출했습니다. 먼저 합을 구하세요: y = (x ** 3).sum().")

ERRORS = {"backward through the graph a second time": RETAIN_GRAPH, "only for scalar outputs": IMPLICIT}


def mistakes(x):
    x = x.detach()
    return [
        Mistake(3 * x ** 2,
                "x.grad holds 3x², the gradient of a single backward pass. The point of this exercise is "
                "that two backward() calls on one graph add up in x.grad: do not clear x.grad between them "
                "(no x.grad.zero_(), no x.grad = None), and make sure backward() really runs twice.",
                "x.grad가 3x², 즉 역전파 한 번의 기울기입니다. 이 문제의 요점은 한 그래프에서 backward()를 두 번 "
                "호출하면 x.grad에 더해진다는 것입니다. 두 호출 사이에 x.grad를 비우지 말고(x.grad.zero_()도, "
                "x.grad = None도 안 됩니다) backward()가 실제로 두 번 실행되게 하세요."),
        Mistake(9 * x ** 2,
                "x.grad holds 9x²: backward() ran three times, and each run added 3x². Call it exactly twice.",
                "x.grad가 9x²입니다. backward()가 세 번 실행되어 매번 3x²이 더해졌습니다. 정확히 두 번 "
                "호출하세요."),
        Mistake(lambda t: t.dim() == 0,
                "You returned a scalar, the value of y. Return x.grad, the accumulated gradient.",
                "스칼라인 y의 값을 반환했습니다. 누적된 기울기인 x.grad를 반환하세요."),
        mean_for_sum(6 * x ** 2, x.numel()),  # y = (x ** 3).mean(): each pass adds 3x²/n
    ]


def rerun(student):
    """The same call with another x: the evidence that tells the empty-gradient mistakes apart."""
    return lambda other: student.call("backward_twice", other)


def run(student, x):
    with hints_for_errors(ERRORS):
        return student.call("backward_twice", x)


@visible
@points(2)
def test_gradient_is_6x2(student):
    """returns 6x² for x = [1, -2, 0.5]

    ko: x = [1, -2, 0.5]에 대해 6x²를 반환
    """
    x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    call = run(student, x)
    expect_close(call.value, 6 * x.detach() ** 2, what="backward_twice(x)", mistakes=mistakes(x))


@points(2)
def test_x_grad_holds_both_passes(student):
    """after the call, x.grad holds both passes added up, 6x²

    ko: 호출이 끝난 뒤 x.grad에 두 번의 역전파를 더한 6x²가 들어 있음
    """
    x = torch.randn(6).requires_grad_()
    call = run(student, x)
    after = call.args[0]
    expect_gradient(after.grad, 6 * x.detach() ** 2, what="x.grad", mistakes=mistakes(x), rerun=rerun(student),
                    x=x, value=call.value, fix=FIX)
    expect_no_hand_made_grad(student, "backward_twice")
    expect_leaf(after)


@points(1)
def test_float64_matrix(student):
    """works on a float64 matrix and keeps its dtype

    ko: float64 행렬에서 동작하고 dtype을 유지
    """
    x = torch.randn(3, 2, dtype=torch.float64).requires_grad_()
    call = run(student, x)
    expect_close(call.value, 6 * x.detach() ** 2, what="backward_twice(x)", check_dtype=True,
                 mistakes=mistakes(x))
    expect_gradient(call.args[0].grad, 6 * x.detach() ** 2, what="x.grad", check_dtype=True, mistakes=mistakes(x),
                    rerun=rerun(student), x=x, value=call.value, fix=FIX)


@points(1)
def test_other_lengths(student):
    """works for a single element and for a longer vector

    ko: 원소 하나와 더 긴 벡터에서도 동작
    """
    for n in (1, 40):
        x = (torch.rand(n) * 4 - 2).requires_grad_()
        call = run(student, x)
        expect_close(call.value, 6 * x.detach() ** 2, what=f"backward_twice(x) for {n} elements",
                     mistakes=mistakes(x))


@points(1)
def test_one_graph_backpropagated_twice(student):
    """6x² comes from one y backpropagated twice, not from a y computed again

    ko: 6x²는 다시 계산한 y가 아니라 y 하나를 두 번 역전파해서 나옴
    """
    x = torch.randn(4).requires_grad_()
    call = run(student, x)
    expect_gradient(call.args[0].grad, 6 * x.detach() ** 2, what="x.grad", mistakes=mistakes(x),
                    rerun=rerun(student), x=x, value=call.value, fix=FIX)
    # Which graph each backward pass in x.grad came through, as the student's process saw
    # autograd run them: only a y computed again makes two graphs; one pass is one pass,
    # however y was built and however backward() was called.
    passes = call.args[0].grad_passes
    if passes is None or -1 in passes:
        rebuilt, once = rebuilds_graph(student.source, "backward_twice"), False  # nothing seen: the source
    else:
        rebuilt, once = len(set(passes)) >= 2, len(passes) == 1
    if rebuilt:
        raise Feedback("backward_twice() computes y more than once; the statement asks for one y, "
                       "backpropagated twice", RECOMPUTED,
                       "backward_twice()가 y를 두 번 이상 계산합니다. y 하나를 두 번 역전파해야 합니다")
    if once:
        raise Feedback("x.grad is 6x² after a single backward() pass; the statement asks for one y, "
                       "backpropagated twice", ONE_PASS,
                       "x.grad가 backward() 한 번 만에 6x²가 되었습니다. y 하나를 두 번 역전파해야 합니다")
