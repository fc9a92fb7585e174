import torch

from grader.testing import (Feedback, Hint, Mistake, StudentError, expect_close, expect_gradient, expect_leaf,
                            hints_for_errors, points, visible)


def _matrix(rows, cols, seed, like):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=generator, dtype=torch.float64).to(like)


# The same definitions as the probes' own copy, evaluated here, in the trusted process.
FUNCTIONS = {
    "sin_times_x": lambda x: torch.sin(x) * x,
    "matvec": lambda x: _matrix(x.shape[0], x.shape[0], 7, x) @ x,
    "cumsum_squared": lambda x: x.cumsum(0) ** 2,
    "softmax": lambda x: torch.softmax(x, dim=0),
    "moments": lambda x: torch.stack([x.sum(), (x * x).sum(), (x ** 3).sum()]),
    "matrix_square": lambda x: x @ x,
}

IGNORED_V = ("You got 1ᵀJ, the gradient of y.sum(): v was left out. y.sum().backward() and "
             "y.backward(torch.ones_like(y)) weight every output by 1; a vector-Jacobian product weights "
             "them by v. Call y.backward(v).",
             "y.sum()의 기울기인 1ᵀJ가 나왔습니다. v를 쓰지 않았습니다. y.sum().backward()와 "
             "y.backward(torch.ones_like(y))는 모든 출력에 가중치 1을 곱하지만, 벡터-야코비안 곱은 v를 "
             "가중치로 씁니다. y.backward(v)를 호출하세요.")

WRONG_SIDE = ("You got J·v: v multiplied the Jacobian from the other side. The vector-Jacobian product is "
              "vᵀJ: v weights the outputs, the rows of J, and the result has x's shape. y.backward(v) "
              "computes exactly that, without building J.",
              "J·v가 나왔습니다. v를 야코비안의 반대쪽에 곱했습니다. 벡터-야코비안 곱은 vᵀJ입니다. v는 "
              "출력, 즉 J의 행에 곱하는 가중치이고 결과는 x와 모양이 같습니다. y.backward(v)가 J를 만들지 "
              "않고 바로 그 값을 계산합니다.")

WHOLE_J = ("You returned the whole Jacobian J. vjp must return vᵀJ, a tensor of x's shape: call "
           "y.backward(v) and return x.grad.",
           "야코비안 J 전체를 반환했습니다. vjp는 x와 모양이 같은 vᵀJ를 반환해야 합니다. y.backward(v)를 "
           "호출하고 x.grad를 반환하세요.")

TOO_MANY_DIMS = ("The result has more dimensions than x, so it still contains a Jacobian. vᵀJ has exactly "
                 "x's shape; y.backward(v) leaves it in x.grad.",
                 "결과의 차원이 x보다 많습니다. 아직 야코비안이 들어 있습니다. vᵀJ는 x와 모양이 똑같고, "
                 "y.backward(v)가 그 값을 x.grad에 남깁니다.")

ACCUMULATED = ("Each product also contains the ones before it: x.grad was not cleared, so every "
               "backward() added to what the previous call left there (gradients accumulate). Set "
               "x.grad = None before y.backward(v).",
               "각 결과에 앞선 호출의 결과가 더해져 있습니다. x.grad를 비우지 않아 backward()가 이전 "
               "호출이 남긴 값에 더했습니다(기울기는 누적됩니다). y.backward(v) 전에 x.grad = None으로 "
               "비우세요.")

IMPLICIT = Hint("backward() was called on y = f(x), which is not a scalar, without an argument. PyTorch makes "
                "the starting gradient by itself only for a scalar output. Pass v: y.backward(v) weights "
                "each output by v and leaves vᵀJ in x.grad.",
                "스칼라가 아닌 y = f(x)에 인자 없이 backward()를 호출했습니다. PyTorch가 시작 기울기를 알아서 "
                "만들어 주는 것은 출력이 스칼라일 때뿐입니다. v를 넘기세요: y.backward(v)는 출력마다 v를 "
                "가중치로 곱해 vᵀJ를 x.grad에 남깁니다.")

NONE_ZERO = Hint("x.grad is None until a first backward() has run, so x.grad.zero_() fails on a fresh x. "
                 "Write x.grad = None instead (or zero it only when it is not None).",
                 "첫 backward()가 실행되기 전에는 x.grad가 None이라서, 새 x에 x.grad.zero_()를 호출하면 "
                 "실패합니다. 대신 x.grad = None이라고 쓰세요(또는 None이 아닐 때만 0으로 만드세요).")

MATMUL = Hint("A matrix product failed. For f with m outputs and n inputs, J is m×n and v has m entries: "
              "v @ J (that is vᵀJ) fits, J @ v does not. y.backward(v) gives vᵀJ without building J.",
              "행렬 곱이 실패했습니다. 출력이 m개, 입력이 n개인 f에서 J는 m×n이고 v는 원소가 m개입니다. "
              "v @ J(즉 vᵀJ)는 맞지만 J @ v는 맞지 않습니다. y.backward(v)는 J를 만들지 않고 vᵀJ를 줍니다.")

V_SHAPE = Hint("The gradient passed to backward() does not have y's shape. Pass v itself: it has the shape "
               "of y = f(x).",
               "backward()에 넘긴 gradient의 모양이 y와 다릅니다. v를 그대로 넘기세요. v는 y = f(x)와 "
               "모양이 같습니다.")

FIX = ("Call y.backward(v) with y = f(x) on the x you were given; autograd puts vᵀJ in x.grad.",
       "받은 x로 y = f(x)를 만들고 y.backward(v)를 호출하면 autograd가 vᵀJ를 x.grad에 넣습니다.")

STILL_LEAF = Hint("Do not replace or detach x; differentiate with respect to the x you were given.",
                  "x를 바꾸거나 detach하지 말고, 받은 x에 대해 미분하세요.")

ERRORS = {"only for scalar outputs": IMPLICIT, "has no attribute 'zero_'": NONE_ZERO,
          "size mismatch": MATMUL, "cannot be multiplied": MATMUL, "Mismatch in shape": V_SHAPE}


def expected(name, x, v):
    return torch.autograd.functional.vjp(FUNCTIONS[name], x.detach(), v)[1]


def mistakes(name, x, v):
    f, x = FUNCTIONS[name], x.detach()
    y = f(x)
    found = [Mistake(torch.autograd.functional.vjp(f, x, torch.ones_like(y))[1], *IGNORED_V)]
    if x.dim() == 1 and y.dim() == 1:
        jacobian = torch.autograd.functional.jacobian(f, x)
        if jacobian.shape[0] == jacobian.shape[1]:
            found.append(Mistake(jacobian @ v, *WRONG_SIDE))
        found.append(Mistake(jacobian, *WHOLE_J))
    found.append(Mistake(lambda t: t.dim() > x.dim(), *TOO_MANY_DIMS))
    return found


def run(student, probe, *args):
    """Run a probe that calls vjp; an error is reported as vjp's, with the misconception named."""
    try:
        with hints_for_errors(ERRORS):
            return student.probe(probe, *args, for_function="vjp")
    except StudentError as err:
        renamed = StudentError(err.kind, "vjp", err.detail, err.exception)
        renamed.hint = err.hint
        raise renamed from None


def check(student, name, x, v):
    x.requires_grad_()
    call = run(student, "run_vjp", name, x, v)
    expect_close(call.value, expected(name, x, v), what="vjp(f, x, v)", mistakes=mistakes(name, x, v))
    return call


@visible
@points(2)
def test_vjp_cumsum_squared(student):
    """vjp for f(x) = x.cumsum(0) ** 2, x = [1, -1, 2], v = [1, 0.5, -2]

    ko: f(x) = x.cumsum(0) ** 2, x = [1, -1, 2], v = [1, 0.5, -2]의 vjp
    """
    check(student, "cumsum_squared", torch.tensor([1.0, -1.0, 2.0]), torch.tensor([1.0, 0.5, -2.0]))


@points(1)
def test_vjp_elementwise(student):
    """vjp of an element-wise function

    ko: 원소별 함수의 vjp
    """
    check(student, "sin_times_x", torch.randn(6, dtype=torch.float64), torch.randn(6, dtype=torch.float64))


@points(2)
def test_vjp_matrix_vector_product(student):
    """vjp of a product with a fixed square matrix

    ko: 고정된 정사각 행렬과의 곱의 vjp
    """
    check(student, "matvec", torch.randn(4, dtype=torch.float64), torch.randn(4, dtype=torch.float64))


@points(1)
def test_vjp_fewer_outputs_than_inputs(student):
    """vjp of a function with 3 outputs and 5 inputs

    ko: 출력 3개, 입력 5개인 함수의 vjp
    """
    check(student, "moments", torch.randn(5, dtype=torch.float64), torch.randn(3, dtype=torch.float64))


@points(1)
def test_vjp_softmax(student):
    """vjp of softmax

    ko: softmax의 vjp
    """
    check(student, "softmax", torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64))


@points(1)
def test_vjp_matrices(student):
    """vjp when x, y and v are matrices

    ko: x, y, v가 행렬일 때의 vjp
    """
    check(student, "matrix_square", torch.randn(3, 3, dtype=torch.float64),
          torch.randn(3, 3, dtype=torch.float64))


@points(2)
def test_vjp_called_again_on_same_x(student):
    """three calls on the same x give three separate products

    ko: 같은 x로 세 번 호출하면 서로 독립인 곱 세 개
    """
    x = torch.randn(4, dtype=torch.float64).requires_grad_()
    vs = [torch.randn(4, dtype=torch.float64) for _ in range(3)]
    results = run(student, "run_vjp_many", "matvec", x, vs).value
    # The probe returns one result per v whatever vjp returns (no hint: no submission gets here).
    if not isinstance(results, list) or len(results) != len(vs):
        raise Feedback("vjp(f, x, v) should return one tensor per call", None,
                       "vjp(f, x, v)는 호출마다 텐서 하나를 반환해야 합니다")
    products = [expected("matvec", x, v) for v in vs]
    for k, (result, product) in enumerate(zip(results, products)):
        known = mistakes("matvec", x, vs[k])
        if k:
            known.insert(0, Mistake(sum(products[:k + 1]), *ACCUMULATED))
        expect_close(result, product, what=f"call {k + 1} of vjp(f, x, v)", mistakes=known)


@points(2)
def test_vjp_left_in_x_grad(student):
    """after vjp, x.grad holds vᵀJ

    ko: vjp 뒤 x.grad에 vᵀJ가 들어 있음
    """
    x = torch.randn(5, dtype=torch.float64).requires_grad_()
    v = torch.randn(5, dtype=torch.float64)
    call = run(student, "run_vjp", "cumsum_squared", x, v)
    after = call.args[1]
    expect_gradient(after.grad, expected("cumsum_squared", x, v), what="x.grad",
                    mistakes=mistakes("cumsum_squared", x, v), value=call.value, x=x, fix=FIX,
                    rerun=lambda other: run(student, "run_vjp", "cumsum_squared", other, v))
    expect_leaf(after, hint=STILL_LEAF)
