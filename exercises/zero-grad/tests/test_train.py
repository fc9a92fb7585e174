import torch

from grader.testing import Feedback, Hint, Mistake, TensorState, expect_close, points, visible

NO_ZERO = Hint("Gradients accumulated across batches: without optimizer.zero_grad() every backward() adds "
               "to the gradients of all earlier batches, and step() follows that growing sum. Call "
               "optimizer.zero_grad() at the start of every batch.",
               "기울기가 배치를 거치며 누적되었습니다. optimizer.zero_grad()가 없으면 backward()마다 이전 "
               "배치들의 기울기에 더해지고, step()은 그 커져 가는 합을 따라갑니다. 배치마다 처음에 "
               "optimizer.zero_grad()를 호출하세요.")

ONCE_PER_EPOCH = Hint("Gradients accumulated across the batches of each epoch: optimizer.zero_grad() ran once "
                      "per epoch. Call it for every batch, inside the inner loop.",
                      "한 에포크 안에서 배치마다 기울기가 누적되었습니다. optimizer.zero_grad()를 에포크마다 한 "
                      "번만 호출했습니다. 안쪽 루프에서 배치마다 호출하세요.")

ERASED = Hint("The parameters never moved: the gradients were cleared between backward() and step() "
              "(optimizer.zero_grad() there, say), so step() found none to use. The order is zero_grad(), "
              "forward, loss, backward(), step().",
              "파라미터가 전혀 바뀌지 않았습니다. backward()와 step() 사이에서 기울기를 지워서(예를 들어 그 자리의 "
              "optimizer.zero_grad()) step()이 쓸 기울기가 없었습니다. 순서는 zero_grad(), 순전파, 손실, "
              "backward(), step()입니다.")

STEP_FIRST = Hint("The parameters never moved: optimizer.step() ran before loss.backward(), while the gradients "
                  "were cleared, so it never had a gradient to follow. Call step() after "
                  "loss.backward(): zero_grad(), forward, loss, backward(), step().",
                  "파라미터가 전혀 바뀌지 않았습니다. optimizer.step()이 loss.backward()보다 먼저, 기울기가 지워진 "
                  "상태에서 실행되어 따를 기울기가 한 번도 없었습니다. step()을 loss.backward() 다음에 호출하세요: "
                  "zero_grad(), 순전파, 손실, backward(), step().")

NO_STEP = Hint("The parameters never moved although gradients were computed: optimizer.step() never ran. "
               "Call it after loss.backward() for every batch.",
               "기울기는 계산되었지만 파라미터가 전혀 바뀌지 않았습니다. optimizer.step()이 실행되지 "
               "않았습니다. 배치마다 loss.backward() 다음에 호출하세요.")

SUMMED = Hint("Each epoch's value is the sum of its batch losses. Return the mean: divide the sum of "
              "loss.item() by the number of batches.",
              "에포크마다 반환한 값이 배치 손실의 합입니다. 평균을 반환하세요: loss.item()의 합을 배치 "
              "개수로 나누세요.")

LAST_BATCH = Hint("Each epoch's value is the loss of its last batch only. Return the mean of all the epoch's "
                  "batch losses: add up loss.item() over the batches and divide by the number of batches.",
                  "에포크마다 반환한 값이 마지막 배치의 손실뿐입니다. 그 에포크의 모든 배치 손실의 평균을 "
                  "반환하세요: 배치마다 loss.item()을 더하고 배치 개수로 나누세요.")

PER_BATCH = Hint("train() returned one loss per batch. Return one number per epoch: the mean of that "
                 "epoch's batch losses.",
                 "train()이 배치마다 손실을 하나씩 반환했습니다. 에포크마다 숫자 하나, 즉 그 에포크 배치 "
                 "손실들의 평균을 반환하세요.")

AFTER_STEP = Hint("The first step used gradients the model already had: optimizer.zero_grad() ran after "
                  "step() (or at the end of each batch), so gradients left by an earlier backward() were "
                  "added to the first batch's. Call optimizer.zero_grad() first, before the forward pass.",
                  "첫 step()이 모델에 이미 있던 기울기를 썼습니다. optimizer.zero_grad()를 step() 다음(또는 "
                  "배치의 끝)에 호출해서, 이전 backward()가 남긴 기울기가 첫 배치의 기울기에 더해졌습니다. "
                  "순전파 전에 optimizer.zero_grad()를 먼저 호출하세요.")

GRAPH = Hint("The losses you returned are tensors that still carry their graph: adding up `loss` instead "
             "of `loss.item()` keeps every batch's whole graph alive in memory for as long as the list "
             "lives. Add up loss.item(), a plain float.",
             "반환한 손실이 아직 그래프를 달고 있는 텐서입니다. loss.item() 대신 loss를 더하면 리스트가 "
             "살아 있는 동안 모든 배치의 그래프 전체가 메모리에 남습니다. 일반 float인 loss.item()을 "
             "더하세요.")

A_LIST = Hint("Return a Python list with one float per epoch (loss.item() gives a float).",
              "에포크마다 float 하나씩 담은 파이썬 리스트를 반환하세요(loss.item()이 float을 줍니다).")


def make_setup(samples, features, outputs, batch_size, lr, momentum, epochs, seed, stale=False):
    inputs = torch.randn(samples, features)
    targets = inputs @ torch.randn(features, outputs) + 0.1 * torch.randn(samples, outputs)
    setup = dict(seed=seed, inputs=inputs, targets=targets, batch_size=batch_size, lr=lr,
                 momentum=momentum, epochs=epochs)
    if stale:  # the model arrives with the gradients of an earlier backward()
        setup["stale"] = [5 * torch.randn(outputs, features), 5 * torch.randn(outputs)]
    return setup


def trusted_run(setup, *, zero_grad="batch", step=True, report="mean"):
    """The training loop, run here; zero_grad is "batch", "epoch", "after_backward",
    "after_step" or None; report "mean" (each epoch's mean batch loss) or "last" (its
    last batch's loss)."""
    torch.manual_seed(setup["seed"])
    inputs, targets = setup["inputs"], setup["targets"]
    model = torch.nn.Linear(inputs.shape[1], targets.shape[1])
    if setup.get("stale") is not None:
        model.weight.grad, model.bias.grad = (g.clone() for g in setup["stale"])
    optimizer = torch.optim.SGD(model.parameters(), lr=setup["lr"], momentum=setup["momentum"])
    loss_fn = torch.nn.MSELoss()
    size = setup["batch_size"]
    batches = [(inputs[i:i + size], targets[i:i + size]) for i in range(0, inputs.shape[0], size)]
    means = []
    for _ in range(setup["epochs"]):
        if zero_grad == "epoch":
            optimizer.zero_grad()
        losses = []
        for batch_inputs, batch_targets in batches:
            if zero_grad == "batch":
                optimizer.zero_grad()
            loss = loss_fn(model(batch_inputs), batch_targets)
            loss.backward()
            if zero_grad == "after_backward":
                optimizer.zero_grad()
            if step:
                optimizer.step()
            if zero_grad == "after_step":
                optimizer.zero_grad()
            losses.append(loss.item())
        means.append(losses[-1] if report == "last" else sum(losses) / len(losses))
    return torch.tensor(means, dtype=torch.float64), model.weight.detach(), model.bias.detach()


def epoch_losses(value, epochs, batches):
    """train()'s return value as a float64 tensor; floats and 0-d tensors without a graph are both fine."""
    if isinstance(value, dict) or value is None or isinstance(value, (TensorState, str, int, float)):
        kind = value["unsupported"] if isinstance(value, dict) else (
            "tensor" if isinstance(value, TensorState) else type(value).__name__)
        raise Feedback(f"train() should return a list of floats, one per epoch; it returned a {kind}",
                       A_LIST, f"train()은 에포크마다 float 하나씩 담은 리스트를 반환해야 합니다 ({kind} 반환)")
    numbers = []
    for item in value:
        if isinstance(item, TensorState) and (item.requires_grad or item.grad_fn):
            raise Feedback("train() returned losses that are tensors still attached to their graph "
                           f"(grad_fn {item.grad_fn}); expected plain numbers", GRAPH,
                           "train()이 그래프에 연결된 텐서를 손실로 반환했습니다. 일반 숫자여야 합니다")
        if isinstance(item, TensorState) and item.data.numel() == 1 and item.data.is_floating_point():
            numbers.append(float(item.data.reshape(())))
        elif isinstance(item, float) or (isinstance(item, int) and not isinstance(item, bool)):
            numbers.append(float(item))
        else:
            kind = item["unsupported"] if isinstance(item, dict) else (
                f"tensor of shape {tuple(item.shape)}" if isinstance(item, TensorState) else type(item).__name__)
            raise Feedback(f"train() should return a list of floats; one element is a {kind}", A_LIST,
                           f"train()이 반환한 리스트의 원소가 float이 아닙니다 ({kind})")
    if len(numbers) != epochs:
        raise Feedback(f"train() returned {len(numbers)} values for {epochs} epochs; expected one per epoch",
                       PER_BATCH if len(numbers) == epochs * batches else A_LIST,
                       f"train()이 에포크 {epochs}번에 대해 값 {len(numbers)}개를 반환했습니다. "
                       "에포크마다 하나여야 합니다")
    return torch.tensor(numbers, dtype=torch.float64)


def why_unmoved(trace):
    """Which way of leaving the parameters unmoved train() took, from the order in which the
    probe saw backward() and optimizer.step() run; None where that was not seen."""
    if not isinstance(trace, dict) or not all(type(trace.get(k)) in (int, bool) for k in (
            "steps", "steps_with_grads", "step_before_backward")):
        return None
    if trace["steps"] == 0:
        return NO_STEP
    if trace["steps_with_grads"]:
        return None  # a step had gradients to follow: none of these
    return STEP_FIRST if trace["step_before_backward"] else ERASED


def check_training(student, setup):
    call = student.probe("run_train", for_function="train", **setup)
    result = call.value
    batches = -(-setup["inputs"].shape[0] // setup["batch_size"])
    losses = epoch_losses(result["losses"], setup["epochs"], batches)
    weight, bias = result["weight"], result["bias"]
    expected, ref_weight, ref_bias = trusted_run(setup)
    no_zero = trusted_run(setup, zero_grad=None)
    per_epoch = trusted_run(setup, zero_grad="epoch")
    frozen = trusted_run(setup, step=False)
    last = trusted_run(setup, report="last")[0]
    late = [Mistake(v, AFTER_STEP.en, AFTER_STEP.ko) for v in trusted_run(setup, zero_grad="after_step")] \
        if setup.get("stale") is not None else [None] * 3
    stuck = why_unmoved(result.get("trace"))
    unmoved = (lambda i: [Mistake(frozen[i], stuck.en, stuck.ko)]) if stuck else (lambda i: [])
    loss_mistakes = [Mistake(expected * batches, SUMMED.en, SUMMED.ko),
                     Mistake(no_zero[0], NO_ZERO.en, NO_ZERO.ko),
                     Mistake(per_epoch[0], ONCE_PER_EPOCH.en, ONCE_PER_EPOCH.ko),
                     ] + unmoved(0) + [m for m in late[:1] if m]
    if batches > 1:  # with one batch the last batch's loss is the mean
        loss_mistakes.append(Mistake(last, LAST_BATCH.en, LAST_BATCH.ko))
    expect_close(losses, expected, what=("the losses train() returned", "train()이 반환한 손실"), rtol=1e-4, atol=1e-6,
                 mistakes=loss_mistakes)
    for name, actual, ref, index in (("weight", weight, ref_weight, 1), ("bias", bias, ref_bias, 2)):
        expect_close(actual, ref, what=(f"model.{name} after training", f"학습 뒤의 model.{name}"), rtol=1e-4, atol=1e-5,
                     mistakes=[Mistake(no_zero[index], NO_ZERO.en, NO_ZERO.ko),
                               Mistake(per_epoch[index], ONCE_PER_EPOCH.en, ONCE_PER_EPOCH.ko),
                               ] + unmoved(index) + [m for m in late[index:index + 1] if m])


@visible
@points(2)
def test_train_plain_sgd(student):
    """trains a Linear(3, 1) with plain SGD: 2 batches, 3 epochs

    ko: 일반 SGD로 Linear(3, 1) 학습: 배치 2개, 에포크 3번
    """
    setup = make_setup(samples=8, features=3, outputs=1, batch_size=4, lr=0.1, momentum=0.0, epochs=3,
                       seed=11)
    check_training(student, setup)


@points(3)
def test_train_with_momentum(student):
    """trains a Linear model with SGD and momentum

    ko: 모멘텀이 있는 SGD로 Linear 모델 학습
    """
    setup = make_setup(samples=12, features=4, outputs=2, batch_size=4, lr=0.05, momentum=0.9, epochs=4,
                       seed=2024)
    check_training(student, setup)


@points(1)
def test_losses_are_epoch_means(student):
    """returns the mean batch loss of every epoch

    ko: 에포크마다 배치 손실의 평균을 반환
    """
    setup = make_setup(samples=9, features=2, outputs=3, batch_size=3, lr=0.0, momentum=0.0, epochs=2,
                       seed=7)
    check_training(student, setup)


@points(1)
def test_train_model_with_stale_gradients(student):
    """trains a model that arrives with gradients left by an earlier backward()

    ko: 이전 backward()가 남긴 기울기를 가진 채 들어온 모델을 학습
    """
    setup = make_setup(samples=8, features=3, outputs=2, batch_size=4, lr=0.1, momentum=0.0, epochs=2,
                       seed=5, stale=True)
    check_training(student, setup)
