import torch

from grader.testing import (Feedback, Hint, Mistake, expect_close, expect_gradient, expect_leaf, hints_for_errors,
                            mean_for_sum, points, visible)

NOT_RETAINED = Hint("a.grad and b.grad are None. a and b are not leaves (they were computed from x), and "
                    "backward() keeps the gradient only of leaves unless told otherwise. Call a.retain_grad() "
                    "and b.retain_grad() before c.sum().backward(); calling it afterwards is too late, the "
                    "gradient has already gone by.",
                    "a.grad와 b.grad가 None입니다. a와 b는 x로부터 계산된 텐서라서 리프가 아니고, backward()는 "
                    "따로 요청하지 않으면 리프의 기울기만 남깁니다. c.sum().backward() 전에 a.retain_grad()와 "
                    "b.retain_grad()를 호출하세요. backward() 뒤에 호출하면 기울기가 이미 지나간 뒤라서 "
                    "늦습니다.")

ONE_RETAINED = ("{name}.grad is None while the other intermediate gradient is there: retain_grad() works on "
                "one tensor only. Call {name}.retain_grad() as well, before backward().",
                "{name}.grad가 None이지만 다른 중간 텐서의 기울기는 있습니다. retain_grad()는 호출한 텐서 "
                "하나에만 적용됩니다. backward() 전에 {name}.retain_grad()도 호출하세요.")

CUT = Hint("x.grad is None: the gradient never reached x. If a was turned into a leaf of its own "
           "(with detach().requires_grad_() or torch.tensor(...)) so that it gets a .grad, the graph from x to "
           "a was cut. Keep a = 2 * x + 10 and call a.retain_grad() instead.",
           "x.grad가 None입니다. 기울기가 x까지 오지 못했습니다. a의 .grad를 얻으려고 detach().requires_grad_()나 "
           "torch.tensor(...)로 a를 새 리프로 만들었다면 x에서 a로 가는 그래프가 끊어진 것입니다. "
           "a = 2 * x + 10을 그대로 두고 대신 a.retain_grad()를 호출하세요.")

FIX = ("Build a, b and c from the x you were given with torch operations and call c.sum().backward(); "
       "autograd then fills x.grad (and, with retain_grad(), a.grad and b.grad).",
       "받은 x로 torch 연산을 해서 a, b, c를 만들고 c.sum().backward()를 호출하면 autograd가 x.grad를 "
       "채웁니다(retain_grad()를 쓰면 a.grad와 b.grad도).")


def rerun(student):
    """The same call with another x: the evidence that tells the empty-gradient mistakes apart."""
    return lambda other: run(student, other)

IMPLICIT = Hint("backward() was called on c, which is not a scalar, without an argument. Backpropagate the "
                "scalar c.sum() instead.",
                "스칼라가 아닌 c에 인자 없이 backward()를 호출했습니다. 대신 스칼라인 c.sum()으로 "
                "역전파하세요.")

A_DICT = Hint('Return a dict with the keys "x", "a" and "b": {"x": x.grad, "a": a.grad, "b": b.grad}.',
              '"x", "a", "b" 키를 가진 dict를 반환하세요: {"x": x.grad, "a": a.grad, "b": b.grad}.')

STILL_LEAF = Hint("Do not replace or detach x; differentiate with respect to the x you were given.",
                  "x를 바꾸거나 detach하지 말고, 받은 x에 대해 미분하세요.")

ERRORS = {"only for scalar outputs": IMPLICIT}

# dc/dx = 2·3·2, dc/da = 2·3, dc/db = 2, for every element.
EXPECTED = {"x": 12.0, "a": 6.0, "b": 2.0}


def mistakes(name, x):
    ones = torch.ones_like(x.detach())
    # c.mean().backward() for c.sum(): every gradient 1/n of its value (c has x's n elements).
    mean = [mean_for_sum(EXPECTED[name] * ones, x.numel(), name="c")]
    local = {"a": (2.0, "a.grad came out as 2, the derivative of a with respect to x. a.grad holds the "
                        "gradient of the final c.sum() with respect to a: dc/da = 2·3 = 6.",
                   "a.grad가 2, 즉 a를 x로 미분한 값입니다. a.grad에는 마지막 c.sum()을 a로 미분한 기울기가 "
                   "들어갑니다: dc/da = 2·3 = 6."),
             "b": (3.0, "b.grad came out as 3, the derivative of b with respect to a. b.grad holds the "
                        "gradient of the final c.sum() with respect to b: dc/db = 2.",
                   "b.grad가 3, 즉 b를 a로 미분한 값입니다. b.grad에는 마지막 c.sum()을 b로 미분한 기울기가 "
                   "들어갑니다: dc/db = 2.")}
    if name not in local:
        return mean
    value, en, ko = local[name]
    return [Mistake(value * ones, en, ko)] + mean


def grads(call):
    value = call.value
    if not isinstance(value, dict) or not {"x", "a", "b"} <= set(value):
        raise Feedback('intermediate_grads(x) should return a dict with the keys "x", "a" and "b"', A_DICT,
                       'intermediate_grads(x)는 "x", "a", "b" 키를 가진 dict를 반환해야 합니다')
    return value


def missing_hint(value):
    """Which misconception leaves a gradient of the dict empty."""
    if value["x"] is None:
        return {"x": CUT}
    if value["a"] is None and value["b"] is None:
        return {"a": NOT_RETAINED, "b": NOT_RETAINED}
    return {name: Hint(ONE_RETAINED[0].format(name=name), ONE_RETAINED[1].format(name=name))
            for name in ("a", "b") if value[name] is None}


def check(value, x, names, check_dtype=False):
    hints = missing_hint(value)
    for name in names:
        expect_close(value[name], EXPECTED[name] * torch.ones_like(x.detach()),
                     what=f'intermediate_grads(x)["{name}"]', check_dtype=check_dtype,
                     mistakes=mistakes(name, x), hint=hints.get(name))


def run(student, x):
    with hints_for_errors(ERRORS):
        return student.call("intermediate_grads", x)


@visible
@points(2)
def test_leaf_grad_is_12(student):
    """the gradient of x is 12 everywhere, for x = [0.5, -2, 3]

    ko: x = [0.5, -2, 3]에서 x의 기울기는 어디서나 12
    """
    x = torch.tensor([0.5, -2.0, 3.0], requires_grad=True)
    check(grads(run(student, x)), x, ["x"])


@visible
@points(3)
def test_intermediate_grads_are_6_and_2(student):
    """a.grad is 6 and b.grad is 2 everywhere, for x = [0.5, -2, 3]

    ko: x = [0.5, -2, 3]에서 a.grad는 어디서나 6, b.grad는 2
    """
    x = torch.tensor([0.5, -2.0, 3.0], requires_grad=True)
    # b before a: test_float64_matrix meets a first, so each gradient's own hint can be shown.
    check(grads(run(student, x)), x, ["b", "a"])


@points(2)
def test_x_grad_left_in_x(student):
    """after the call, x.grad holds the gradient 12

    ko: 호출이 끝난 뒤 x.grad에 기울기 12가 들어 있음
    """
    x = torch.randn(5).requires_grad_()
    call = run(student, x)
    after = call.args[0]
    lost = isinstance(call.value, dict) and "x" in call.value and call.value["x"] is None
    if lost:
        expect_close(after.grad, 12 * torch.ones(5), what="x.grad", hint=CUT)
    expect_gradient(after.grad, 12 * torch.ones(5), what="x.grad", rerun=rerun(student), x=x, value=call.value,
                    fix=FIX, mistakes=mistakes("x", x))
    expect_leaf(after, hint=STILL_LEAF)


@points(2)
def test_float64_matrix(student):
    """all three gradients for a float64 matrix, with its shape and dtype

    ko: float64 행렬의 세 기울기 모두, 모양과 dtype까지
    """
    x = torch.randn(2, 3, dtype=torch.float64).requires_grad_()
    call = run(student, x)
    check(grads(call), x, ["x", "a", "b"], check_dtype=True)
    expect_gradient(call.args[0].grad, 12 * torch.ones(2, 3, dtype=torch.float64), what="x.grad",
                    check_dtype=True, rerun=rerun(student), x=x, value=call.value, fix=FIX, mistakes=mistakes("x", x))
