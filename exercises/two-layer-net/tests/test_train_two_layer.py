import torch

from grader.testing import (Feedback, Hint, Mistake, TensorState, expect_close, expect_leaf, hints_for_errors,
                            points, visible)

REBOUND = Hint("The caller's w1 and w2 did not change: the update rebinds the names (w1 = w1 - ...) and "
               "builds new tensors, so the weights you were given are never touched. Update them in place "
               "inside torch.no_grad(): w1 -= learning_rate * w1.grad.",
               "호출한 쪽의 w1과 w2가 바뀌지 않았습니다. 갱신이 이름만 다시 묶어서(w1 = w1 - ...) 새 텐서를 "
               "만들기 때문에 받은 가중치는 전혀 건드리지 않습니다. torch.no_grad() 안에서 제자리 갱신하세요: "
               "w1 -= learning_rate * w1.grad.")

NO_GRAD = Hint("The in-place update ran while autograd was recording: a leaf that requires grad cannot be "
               "changed in place there. Put the update inside a `with torch.no_grad():` block.",
               "autograd가 기록하는 중에 제자리 갱신을 했습니다. 기울기를 요구하는 리프는 그 상태에서 제자리로 "
               "바꿀 수 없습니다. 갱신을 `with torch.no_grad():` 블록 안에 넣으세요.")

NO_ZERO = Hint("The gradients accumulate from step to step: backward() adds to w1.grad and w2.grad, so "
               "without clearing them every update also repeats all earlier gradients. Zero both after "
               "the update (w1.grad.zero_(), w2.grad.zero_()).",
               "기울기가 단계마다 누적되었습니다. backward()는 w1.grad와 w2.grad에 더하므로, 비우지 않으면 "
               "갱신할 때마다 이전 기울기가 모두 반복됩니다. 갱신한 뒤 둘 다 0으로 만드세요"
               "(w1.grad.zero_(), w2.grad.zero_()).")

AFTER_UPDATE = Hint("Each loss is the one of the next step: it was measured after the update. Record "
                    "loss.item() of the step's own forward pass, before the weights change; losses[0] is "
                    "the loss of the weights you were given.",
                    "각 손실이 다음 단계의 손실입니다. 갱신한 뒤에 측정했습니다. 그 단계 순전파의 loss.item()을 "
                    "가중치가 바뀌기 전에 기록하세요. losses[0]은 처음 받은 가중치의 손실입니다.")

FROZEN = Hint("The weights never moved, so the loss never changes: they were not updated, or the gradients "
              "were zeroed before they were used. Order each step as forward, loss, backward(), update, then zero the "
              "gradients.",
              "가중치가 전혀 움직이지 않아 손실도 바뀌지 않습니다. 가중치를 갱신하지 않았거나, 기울기를 쓰기 전에 "
              "0으로 만들었습니다. "
              "각 단계를 순전파, 손실, backward(), 갱신, 그다음 기울기 초기화 순서로 하세요.")

GRAD_NONE = Hint("w1.grad (or w2.grad) was None where it was used. Either the weights were replaced by new "
                 "tensors (w1 = w1 - ...; autograd fills .grad only for the leaves you were given), or the "
                 "gradients were cleared before the first backward(). Update in place inside "
                 "torch.no_grad() and clear the gradients after the update.",
                 "w1.grad(또는 w2.grad)를 쓰는 곳에서 None이었습니다. 가중치를 새 텐서로 바꿨거나"
                 "(w1 = w1 - ...; autograd는 받은 리프의 .grad만 채웁니다), 첫 backward() 전에 기울기를 "
                 "비웠습니다. torch.no_grad() 안에서 제자리 갱신하고, 갱신한 뒤에 기울기를 비우세요.")

GRAPH = Hint("The losses you returned are tensors that still carry their graph: appending `loss` instead of "
             "`loss.item()` keeps every step's whole graph alive in memory for as long as the list lives. "
             "Append loss.item(), a plain float.",
             "반환한 손실이 아직 그래프를 달고 있는 텐서입니다. loss.item() 대신 loss를 넣으면 리스트가 살아 "
             "있는 동안 모든 단계의 그래프 전체가 메모리에 남습니다. 일반 float인 loss.item()을 넣으세요.")

ASCENT = Hint("The weights moved up the gradient, exactly opposite to gradient descent: the update adds "
              "learning_rate * grad (w1 += ...) where it must subtract it, so every step makes the loss larger. "
              "Update with w1 -= learning_rate * w1.grad, and the same for w2.",
              "가중치가 기울기를 거슬러 올라갔습니다. 경사 하강과 정확히 반대 방향입니다. 갱신에서 "
              "learning_rate * grad를 빼야 하는데 더해서(w1 += ...) 단계마다 손실이 커집니다. "
              "w1 -= learning_rate * w1.grad로 갱신하고 w2도 같게 하세요.")

A_LIST = Hint("Return a Python list with one float per step (loss.item() gives a float).",
              "단계마다 float 하나씩 담은 파이썬 리스트를 반환하세요(loss.item()이 float을 줍니다).")

STILL_LEAF = Hint("Keep the weights leaves that require grad: update their values in place inside "
                  "torch.no_grad(), and do not detach them or switch requires_grad off.",
                  "가중치가 기울기를 요구하는 리프로 남게 하세요. torch.no_grad() 안에서 값만 제자리로 "
                  "갱신하고, detach하거나 requires_grad를 끄지 마세요.")

ERRORS = {
    "leaf Variable that requires grad": NO_GRAD,
    "NoneType": GRAD_NONE,
    "does not require grad": REBOUND,
}


def make_setup(n, d_in, hidden, d_out, learning_rate, steps, dtype=torch.float32):
    return dict(x=torch.randn(n, d_in, dtype=dtype), y=torch.randn(n, d_out, dtype=dtype),
                w1=torch.randn(d_in, hidden, dtype=dtype), w2=torch.randn(hidden, d_out, dtype=dtype),
                learning_rate=learning_rate, steps=steps)


def trusted_run(setup, *, zero=True, steps=None, ascent=False):
    """The reference loop, run here on copies: losses (float64), trained w1, trained w2.
    ``ascent``: each update adds learning_rate * grad (+=), the exact negation of the step."""
    x, y = setup["x"], setup["y"]
    w1 = setup["w1"].clone().requires_grad_()
    w2 = setup["w2"].clone().requires_grad_()
    lr = -setup["learning_rate"] if ascent else setup["learning_rate"]
    losses = []
    for _ in range(setup["steps"] if steps is None else steps):
        loss = (x.mm(w1).clamp(min=0).mm(w2) - y).pow(2).sum()
        losses.append(loss.item())
        loss.backward()
        with torch.no_grad():
            w1 -= lr * w1.grad
            w2 -= lr * w2.grad
            if zero:
                w1.grad.zero_()
                w2.grad.zero_()
    return torch.tensor(losses, dtype=torch.float64), w1.detach(), w2.detach()


def as_losses(value, steps):
    """What train_two_layer returned, as a float64 tensor; floats and 0-d tensors without a graph
    are both fine."""
    if not isinstance(value, (list, tuple)):
        kind = "tensor" if isinstance(value, TensorState) else type(value).__name__
        raise Feedback(f"train_two_layer should return a list of floats, one per step; it returned a {kind}",
                       A_LIST, f"train_two_layer는 단계마다 float 하나씩 담은 리스트를 반환해야 합니다 ({kind} 반환)")
    numbers = []
    for item in value:
        if isinstance(item, TensorState) and (item.requires_grad or item.grad_fn):
            raise Feedback("train_two_layer returned losses that are tensors still attached to their graph "
                           f"(grad_fn {item.grad_fn}); expected plain numbers", GRAPH,
                           "train_two_layer가 그래프에 연결된 텐서를 손실로 반환했습니다. 일반 숫자여야 합니다")
        if isinstance(item, TensorState) and item.data.numel() == 1 and item.data.is_floating_point():
            numbers.append(float(item.data.reshape(())))
        elif isinstance(item, float) or (isinstance(item, int) and not isinstance(item, bool)):
            numbers.append(float(item))
        else:
            kind = (f"tensor of shape {tuple(item.shape)}" if isinstance(item, TensorState)
                    else type(item).__name__)
            raise Feedback(f"train_two_layer should return a list of floats; one element is a {kind}", A_LIST,
                           f"train_two_layer가 반환한 리스트의 원소가 float이 아닙니다 ({kind})")
    if len(numbers) != steps:
        raise Feedback(f"train_two_layer returned {len(numbers)} losses for {steps} steps; expected one per step",
                       A_LIST, f"train_two_layer가 {steps}단계에 대해 손실 {len(numbers)}개를 반환했습니다. "
                               "단계마다 하나여야 합니다")
    return torch.tensor(numbers, dtype=torch.float64)


def check(student, setup, *, losses=True, weights=True, check_dtype=False):
    w1 = setup["w1"].clone().requires_grad_()
    w2 = setup["w2"].clone().requires_grad_()
    with hints_for_errors(ERRORS):
        call = student.call("train_two_layer", setup["x"], setup["y"], w1, w2, setup["learning_rate"],
                            setup["steps"])
    steps = setup["steps"]
    expected, ref_w1, ref_w2 = trusted_run(setup)
    no_zero = trusted_run(setup, zero=False)
    ascent = trusted_run(setup, ascent=True)
    longer = trusted_run(setup, steps=steps + 1)[0][1:]
    frozen = expected[:1].repeat(steps)
    if losses:
        got = as_losses(call.value, steps)
        mistakes = [Mistake(frozen, FROZEN.en, FROZEN.ko), Mistake(longer, AFTER_UPDATE.en, AFTER_UPDATE.ko),
                    Mistake(no_zero[0], NO_ZERO.en, NO_ZERO.ko), Mistake(ascent[0], ASCENT.en, ASCENT.ko)]
        expect_close(got, expected, what=("the losses", "손실"), rtol=1e-4, atol=1e-5, mistakes=mistakes)
    if weights:
        for index, name, initial, reference in ((2, "w1", setup["w1"], ref_w1), (3, "w2", setup["w2"], ref_w2)):
            after = call.args[index]
            grad = after.grad.data if isinstance(after, TensorState) and after.grad is not None else None
            # Rebinding leaves the first step's gradient in the caller's weights; a missing update
            # (or gradients zeroed before it) leaves zeros there.
            stuck = FROZEN if grad is not None and not bool(grad.abs().sum()) else REBOUND
            mistakes = [Mistake(initial, stuck.en, stuck.ko),
                        Mistake(no_zero[index - 1], NO_ZERO.en, NO_ZERO.ko),
                        Mistake(ascent[index - 1], ASCENT.en, ASCENT.ko)]
            expect_close(after, reference, what=(f"{name} after the call", f"호출 뒤의 {name}"), rtol=1e-4, atol=1e-5,
                         mistakes=mistakes, check_dtype=check_dtype)
            expect_leaf(after, name, hint=STILL_LEAF)


@visible
@points(2)
def test_small_network_four_steps(student):
    """losses and trained weights for a 4-sample network, 4 steps

    ko: 샘플 4개 네트워크를 4단계 학습한 손실과 가중치
    """
    check(student, make_setup(n=4, d_in=3, hidden=2, d_out=2, learning_rate=0.01, steps=4))


@points(2)
def test_losses_follow_reference(student):
    """the losses of 12 steps on hidden data

    ko: 숨겨진 데이터에서 12단계의 손실
    """
    check(student, make_setup(n=8, d_in=5, hidden=4, d_out=3, learning_rate=1e-3, steps=12), weights=False)


@points(2)
def test_weights_updated_in_place(student):
    """the caller's w1 and w2 hold the trained weights

    ko: 호출한 쪽의 w1과 w2에 학습된 가중치가 들어 있음
    """
    check(student, make_setup(n=6, d_in=4, hidden=5, d_out=2, learning_rate=2e-3, steps=7))


@points(1)
def test_one_step_loss_before_update(student):
    """a single step reports the loss before its update

    ko: 한 단계는 갱신 전의 손실을 보고함
    """
    check(student, make_setup(n=5, d_in=3, hidden=3, d_out=1, learning_rate=5e-3, steps=1))


@points(1)
def test_float64(student):
    """float64 data and weights: same results, dtype kept

    ko: float64 데이터와 가중치: 같은 결과, dtype 유지
    """
    check(student, make_setup(n=7, d_in=4, hidden=3, d_out=2, learning_rate=1e-3, steps=5, dtype=torch.float64),
          check_dtype=True)
