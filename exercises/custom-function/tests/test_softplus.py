import torch
import torch.nn.functional as F

from grader.testing import Feedback, Hint, Mistake, expect_close, gradcheck_from_values, hints_for_errors, \
    points, visible

OVERFLOW = Hint("Softplus gave inf (or nan) for a large input: log(1 + exp(x)) overflows, because exp(x) is "
                "inf in float32 from x ≈ 89 on. Use the stable form max(x, 0) + log1p(exp(-|x|)), e.g. "
                "x.clamp(min=0) + torch.log1p(torch.exp(-x.abs())).",
                "큰 입력에서 Softplus가 inf(또는 nan)를 냈습니다. float32에서 exp(x)는 x ≈ 89부터 inf이므로 "
                "log(1 + exp(x))가 오버플로합니다. 안정한 형태 max(x, 0) + log1p(exp(-|x|))를 쓰세요. 예: "
                "x.clamp(min=0) + torch.log1p(torch.exp(-x.abs())).")

BACKWARD_OVERFLOW = Hint("The gradient is inf or nan for a large input: exp(x) / (1 + exp(x)) is inf / inf there. "
                         "The derivative of softplus is the sigmoid; torch.sigmoid(x) computes it without "
                         "overflowing: return grad_output * torch.sigmoid(x).",
                         "큰 입력에서 기울기가 inf 또는 nan입니다. 그곳에서 exp(x) / (1 + exp(x))는 inf / inf가 "
                         "됩니다. softplus의 도함수는 시그모이드이고, torch.sigmoid(x)는 오버플로 없이 계산합니다: "
                         "grad_output * torch.sigmoid(x)를 반환하세요.")

NO_GRAD_OUTPUT = Hint("backward returned sigmoid(x) without multiplying by grad_output. That is only right when "
                      "y.sum() is backpropagated; by the chain rule the gradient for x is "
                      "grad_output * sigmoid(x).",
                      "backward가 grad_output을 곱하지 않고 sigmoid(x)를 반환했습니다. y.sum()을 역전파할 때만 "
                      "맞습니다. 연쇄 법칙에 따라 x의 기울기는 grad_output * sigmoid(x)입니다.")

EXP = Hint("backward used exp(x) as the derivative: that is the derivative of exp, not of "
           "log(1 + exp(x)). The derivative of softplus is sigmoid(x) = exp(x) / (1 + exp(x)); return "
           "grad_output * torch.sigmoid(x).",
           "backward가 도함수로 exp(x)를 썼습니다. 이는 log(1 + exp(x))가 아니라 exp의 도함수입니다. "
           "softplus의 도함수는 sigmoid(x) = exp(x) / (1 + exp(x))입니다. grad_output * torch.sigmoid(x)를 "
           "반환하세요.")

ONE_MINUS = Hint("backward used 1 - sigmoid(x), which is sigmoid(-x): the sign is flipped. The derivative of "
                 "softplus is sigmoid(x); return grad_output * torch.sigmoid(x).",
                 "backward가 1 - sigmoid(x), 즉 sigmoid(-x)를 썼습니다. 부호가 뒤집혔습니다. softplus의 도함수는 "
                 "sigmoid(x)입니다. grad_output * torch.sigmoid(x)를 반환하세요.")

OUTPUT = Hint("backward multiplied grad_output by the output y = softplus(x). The derivative of softplus is "
              "sigmoid(x); return grad_output * torch.sigmoid(x).",
              "backward가 grad_output에 출력 y = softplus(x)를 곱했습니다. softplus의 도함수는 sigmoid(x)입니다. "
              "grad_output * torch.sigmoid(x)를 반환하세요.")

NOT_SAVED = Hint("backward found nothing in ctx.saved_tensors: forward must store its input with "
                 "ctx.save_for_backward(x), and backward reads it back with x, = ctx.saved_tensors.",
                 "backward가 ctx.saved_tensors에서 아무것도 찾지 못했습니다. forward에서 입력을 "
                 "ctx.save_for_backward(x)로 저장해야 backward에서 x, = ctx.saved_tensors로 꺼낼 수 있습니다.")

SIGNATURE = Hint("forward and backward were called with the wrong arguments: they are not methods of an "
                 "instance. Mark both with @staticmethod and give them the signatures forward(ctx, x) and "
                 "backward(ctx, grad_output), without self.",
                 "forward와 backward가 잘못된 인자로 호출되었습니다. 두 메서드는 인스턴스 메서드가 아닙니다. 둘 다 "
                 "@staticmethod로 표시하고 self 없이 forward(ctx, x), backward(ctx, grad_output) 시그니처를 "
                 "쓰세요.")

SHAPE = Hint("backward must return one gradient for x, with the shape of x: grad_output * sigmoid(x) "
             "(element-wise, no sum).",
             "backward는 x에 대한 기울기 하나를 x와 같은 모양으로 반환해야 합니다: grad_output * sigmoid(x) "
             "(원소별, 합하지 않음).")

BLOCKED = Hint("torch.nn.functional.softplus is not available here: write forward yourself with the stable "
               "form x.clamp(min=0) + torch.log1p(torch.exp(-x.abs())).",
               "여기서는 torch.nn.functional.softplus를 쓸 수 없습니다. 안정한 형태 "
               "x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))로 forward를 직접 작성하세요.")

GRADCHECK = Hint("torch.autograd.gradcheck compared your backward with finite differences of your forward in "
                 "float64 and they disagree. Keep the dtype of x in both directions (no float32 constants or "
                 "casts) and return grad_output * torch.sigmoid(x).",
                 "torch.autograd.gradcheck가 float64에서 backward를 forward의 유한 차분과 비교했는데 일치하지 "
                 "않습니다. 양방향 모두 x의 dtype을 유지하고(float32 상수나 변환 금지) "
                 "grad_output * torch.sigmoid(x)를 반환하세요.")

ERRORS = {
    "not enough values to unpack": NOT_SAVED,
    "tuple index out of range": NOT_SAVED,
    "positional argument": SIGNATURE,
    "invalid gradient": SHAPE,
    "incorrect number of gradients": SHAPE,
    "is not available in this exercise": BLOCKED,
}


def reference(x, upstream=None):
    """softplus and the gradient backward should leave in x.grad, computed here with torch itself."""
    x = x.detach().clone().requires_grad_(True)
    y = F.softplus(x)
    (y.sum() if upstream is None else (y * upstream).sum()).backward()
    return y.detach(), x.grad


def grad_mistakes(x, upstream=None):
    x = x.detach()
    w = torch.ones_like(x) if upstream is None else upstream
    return [Mistake(torch.sigmoid(x), NO_GRAD_OUTPUT.en, NO_GRAD_OUTPUT.ko),
            Mistake(w * torch.exp(x), EXP.en, EXP.ko),
            Mistake(w * torch.sigmoid(-x), ONE_MINUS.en, ONE_MINUS.ko),
            Mistake(w * F.softplus(x), OUTPUT.en, OUTPUT.ko),
            Mistake(lambda t: not bool(torch.isfinite(t).all()), BACKWARD_OVERFLOW.en, BACKWARD_OVERFLOW.ko)]


def value_mistakes():
    return [Mistake(lambda t: not bool(torch.isfinite(t).all()), OVERFLOW.en, OVERFLOW.ko)]


def run(student, probe, *args, **kwargs):
    with hints_for_errors(ERRORS):
        return student.probe(probe, *args, for_function="Softplus", **kwargs).value


def check_result(result, x, upstream=None, *, rtol=1e-5, atol=1e-6):
    expected_y, expected_grad = reference(x, upstream)
    expect_close(result["y"], expected_y, what="Softplus.apply(x)", rtol=rtol, atol=atol,
                 mistakes=value_mistakes(), check_dtype=True)
    expect_close(result["grad"], expected_grad, what="x.grad", rtol=rtol, atol=atol,
                 mistakes=grad_mistakes(x, upstream), check_dtype=True)


@visible
@points(2)
def test_forward_and_backward(student):
    """y and x.grad after y.sum().backward() for x = [-4, -1, 0, 0.5, 3]

    ko: x = [-4, -1, 0, 0.5, 3]에서 y.sum().backward() 뒤의 y와 x.grad
    """
    x = torch.tensor([-4.0, -1.0, 0.0, 0.5, 3.0])
    check_result(run(student, "apply", x), x)


@points(1)
def test_values_match_softplus(student):
    """forward values on a matrix match torch.nn.functional.softplus

    ko: 행렬에서 순전파 값이 torch.nn.functional.softplus와 같음
    """
    x = torch.randn(3, 4) * 5
    result = run(student, "apply", x, backward=False)
    expect_close(result["y"], F.softplus(x), what="Softplus.apply(x)", mistakes=value_mistakes(),
                 check_dtype=True)


@points(2)
def test_backward_scales_grad_output(student):
    """backward multiplies grad_output (a weighted sum of y is backpropagated)

    ko: backward가 grad_output을 곱함 (y의 가중합을 역전파)
    """
    x = torch.randn(7) * 3
    upstream = torch.randn(7) * 2 + 0.5
    check_result(run(student, "apply", x, upstream=upstream), x, upstream)


@points(2)
def test_gradcheck_float64(student):
    """torch.autograd.gradcheck passes in float64

    ko: float64에서 torch.autograd.gradcheck 통과
    """
    x = torch.randn(6, dtype=torch.float64) * 2
    # gradcheck's comparison is made here, from the values and gradients the sandbox returns.
    data = run(student, "jacobian_data", x, 1e-6)
    reason = gradcheck_from_values(data["plus"], data["minus"], data["rows"], eps=1e-6)
    if reason is None:
        return
    # Name the mistake when the gradient is a known wrong one; otherwise say what gradcheck found.
    upstream = torch.randn(6, dtype=torch.float64)
    check_result(run(student, "apply", x, upstream=upstream), x, upstream, rtol=1e-7, atol=1e-9)
    raise Feedback(f"torch.autograd.gradcheck failed: {reason}", GRADCHECK, "torch.autograd.gradcheck가 실패했습니다")


@points(2)
def test_no_overflow_at_large_inputs(student):
    """finite, correct values and gradients at |x| of 100 and more

    ko: |x|가 100 이상일 때도 유한하고 올바른 값과 기울기
    """
    values = [-250.0, -100.0, -60.0, 45.0, 100.0, 250.0]
    check_result(run(student, "extreme", values), torch.tensor(values))
