import torch
from torch.autograd.functional import jacobian as reference_jacobian

from grader.testing import Hint, Mistake, expect_close, expect_true, hints_for_errors, points, visible

TRANSPOSED = ("You returned the transpose: entry [i, j] must be d f(x)[i] / d x[j], so row i holds the "
              "gradient of output i and the shape is (m, n), m outputs by n inputs. Put each gradient in "
              "a row, not a column.",
              "전치 행렬을 반환했습니다. [i, j] 원소는 d f(x)[i] / d x[j]여야 하므로 i번째 행에 i번째 "
              "출력의 기울기가 들어가고, 모양은 (출력 수 m, 입력 수 n)입니다. 기울기를 열이 아니라 행에 "
              "넣으세요.")

ACCUMULATED = ("Each row is the sum of all rows up to it: x.grad was not cleared between the backward() calls, "
               "so every new gradient was added to the earlier ones. Zero it (x.grad.zero_() or "
               "x.grad = None) before each row, or use torch.autograd.grad, which returns the gradient "
               "without accumulating.",
               "각 행이 그 행까지의 모든 행을 더한 값입니다. backward() 호출 사이에 x.grad를 비우지 않아 "
               "새 기울기가 앞의 기울기에 더해졌습니다. 행마다 x.grad를 비우거나(x.grad.zero_() 또는 "
               "x.grad = None), 누적하지 않고 기울기를 돌려주는 torch.autograd.grad를 쓰세요.")

SUMMED = ("You got the column sums of the Jacobian: f(x).sum().backward() adds up the gradients of all outputs "
          "into one vector. A Jacobian needs one gradient per output: backpropagate each f(x)[i] on its own "
          "(keeping the graph with retain_graph=True) and stack the rows.",
          "야코비안의 열 합을 구했습니다. f(x).sum().backward()는 모든 출력의 기울기를 벡터 하나로 "
          "더합니다. 야코비안에는 출력마다 기울기가 하나씩 필요합니다. f(x)[i]마다 따로 역전파하고"
          "(retain_graph=True로 그래프 유지) 그 행들을 쌓으세요.")

ALIASED = ("Every row is the gradient of the last output: the rows are all the same tensor, x.grad itself, "
           "which zero_() and the next backward() change in place. Store a copy of each row: x.grad.clone().",
           "모든 행이 마지막 출력의 기울기입니다. 행들이 모두 같은 텐서, 즉 x.grad 자체라서 zero_()와 다음 "
           "backward()가 제자리에서 함께 바꿉니다. 행마다 복사본을 저장하세요: x.grad.clone().")

BLOCKED = Hint("torch.autograd.functional.jacobian and torch.func are switched off in this exercise: the point "
               "is to build the Jacobian yourself, one row per output, with backward() or "
               "torch.autograd.grad.",
               "이 문제에서는 torch.autograd.functional.jacobian과 torch.func을 쓸 수 없습니다. 출력마다 "
               "행 하나씩, backward()나 torch.autograd.grad로 야코비안을 직접 만드는 것이 목적입니다.")

NON_SCALAR = Hint("backward() without arguments only works on a scalar. Take one output at a time: f(x)[i] is a "
                  "scalar, and its gradient is row i of the Jacobian.",
                  "인자 없는 backward()는 스칼라에만 쓸 수 있습니다. 출력을 하나씩 다루세요. f(x)[i]는 "
                  "스칼라이고, 그 기울기가 야코비안의 i번째 행입니다.")

NO_RETAIN = Hint("The graph of f(x) was freed by the first backward(). Pass retain_graph=True for every row "
                 "but the last (or for all of them) so that the next row can still backpropagate.",
                 "첫 번째 backward()가 f(x)의 그래프를 해제했습니다. 다음 행도 역전파할 수 있도록 "
                 "retain_graph=True를 넘기세요(마지막 행을 빼고, 또는 모든 행에).")

NO_GRAD = Hint("x does not require grad, so autograd has nothing to differentiate. Work on a copy that does: "
               "x = x.detach().clone().requires_grad_(True), then compute f(x).",
               "x가 기울기를 요구하지 않아서 autograd가 미분할 대상이 없습니다. 기울기를 요구하는 복사본으로 "
               "계산하세요: x = x.detach().clone().requires_grad_(True) 다음 f(x).")

ERRORS = {"not available in this exercise": BLOCKED,
          "implicitly created only for scalar outputs": NON_SCALAR,
          "backward through the graph a second time": NO_RETAIN,
          "does not require grad": NO_GRAD}


# The same functions as probes.py, differentiated here by torch itself.

def _matrix(rows, cols, seed, like):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(rows, cols, generator=generator, dtype=torch.float64).to(like.dtype)


FUNCTIONS = {
    "linear": lambda x: _matrix(x.shape[0], x.shape[0], 11, x) @ x,
    "elementwise": lambda x: torch.sin(x) * x + x ** 3,
    "tall": lambda x: _matrix(x.shape[0] + 2, x.shape[0], 23, x) @ torch.tanh(x),
    "wide": lambda x: torch.stack([(x ** 2).sum(), (x[:-1] * x[1:]).sum()]),
    "cycle": lambda x: torch.stack([x[0] * x[1], x[1] * x[2] ** 2, x[2] * torch.exp(x[0])]),
    "cross": lambda x: torch.stack([x[0] * x[1], x[1] * x[2], x[0] + torch.sin(x[2]), x[0] * x[1] * x[2]]),
}


def mistakes(j):
    m, n = j.shape
    return [Mistake(j.T, *TRANSPOSED),
            Mistake(j.cumsum(0), *ACCUMULATED),
            Mistake(j[-1].expand(m, n), *ALIASED),
            Mistake(j.sum(0), *SUMMED),
            Mistake(j.sum(0, keepdim=True), *SUMMED),
            Mistake(j.sum(0).expand(m, n), *SUMMED),
            Mistake(j.sum(0).reshape(n, 1), *SUMMED)]


def check(student, name, x, *, what=None, check_dtype=False):
    expected = reference_jacobian(FUNCTIONS[name], x.detach())
    with hints_for_errors(ERRORS):
        call = student.probe("run_jacobian", name, x, for_function="jacobian")
    expect_close(call.value, expected, what=what or "jacobian(f, x)", rtol=1e-5, atol=1e-6,
                 check_dtype=check_dtype, mistakes=mistakes(expected))


@visible
@points(2)
def test_linear_map_gives_its_matrix(student):
    """the Jacobian of x -> A x (A a fixed 3 x 3 matrix) is A

    ko: x -> A x (A는 고정된 3 x 3 행렬)의 야코비안은 A
    """
    check(student, "linear", torch.tensor([1.0, -1.0, 2.0]), what="jacobian(x -> A x, [1, -1, 2])")


@points(2)
def test_more_outputs_than_inputs(student):
    """a map from 4 inputs to 6 outputs has a 6 x 4 Jacobian

    ko: 입력 4개, 출력 6개인 함수의 야코비안은 6 x 4
    """
    check(student, "tall", torch.randn(4))


@points(2)
def test_fewer_outputs_than_inputs(student):
    """a map from 5 inputs to 2 outputs has a 2 x 5 Jacobian

    ko: 입력 5개, 출력 2개인 함수의 야코비안은 2 x 5
    """
    check(student, "wide", torch.randn(5))


@points(2)
def test_cross_terms(student):
    """outputs with products of inputs: x0*x1, x1*x2**2, ...

    ko: 입력의 곱으로 된 출력: x0*x1, x1*x2**2, ...
    """
    check(student, "cycle", torch.randn(3))
    check(student, "cross", torch.randn(3).requires_grad_())


@points(1)
def test_elementwise_float64(student):
    """an element-wise map in float64 gives a float64 diagonal Jacobian

    ko: float64 원소별 함수는 float64 대각 야코비안을 줌
    """
    check(student, "elementwise", torch.randn(4, dtype=torch.float64), check_dtype=True)


CALLERS_X = Hint("jacobian changed the caller's x: it set requires_grad on it, or left a gradient in its .grad. "
                 "Differentiate a copy instead: x = x.detach().clone().requires_grad_(True) at the start, so "
                 "the x you were given comes back as it went in.",
                 "jacobian이 호출한 쪽의 x를 바꿨습니다. requires_grad를 켰거나 .grad에 기울기를 남겼습니다. "
                 "대신 복사본을 미분하세요: 처음에 x = x.detach().clone().requires_grad_(True)라고 쓰면 받은 x가 "
                 "들어온 그대로 돌아갑니다.")


@points(1)
def test_callers_x_left_alone(student):
    """the caller's x comes back unchanged: same values, same requires_grad, no .grad

    ko: 호출한 쪽의 x가 그대로 돌아옴: 같은 값, 같은 requires_grad, .grad 없음
    """
    for x in (torch.randn(3), torch.randn(3).requires_grad_()):
        before = x.detach().clone()
        with hints_for_errors(ERRORS):
            call = student.probe("run_jacobian", "cycle", x, for_function="jacobian")
        expect_close(call.value, reference_jacobian(FUNCTIONS["cycle"], before), what="jacobian(f, x)",
                     mistakes=mistakes(reference_jacobian(FUNCTIONS["cycle"], before)))
        after = call.args[1]
        expect_true(after.requires_grad == x.requires_grad and after.grad is None
                    and torch.equal(after.data, before),
                    f"after jacobian(f, x), x has requires_grad={after.requires_grad} (was {x.requires_grad}) "
                    f"and x.grad is {'set' if after.grad is not None else 'None'}",
                    hint=CALLERS_X, message_ko="jacobian(f, x)가 호출한 쪽의 x를 바꿨습니다")
