import torch

from grader.testing import Feedback, Hint, Mistake, TensorState, expect_close, expect_true, hints_for_errors, \
    points, visible

NOT_SCALED = Hint("backward() ran on the plain loss, not on the scaled one. scaler.step() expects gradients "
                  "scaled by the scaler (torch refuses when scale() was never called, and otherwise divides "
                  "unscaled gradients, so the parameters barely move). Backpropagate the scaled loss: "
                  "scaler.scale(loss).backward().",
                  "스케일한 손실이 아니라 원래 손실로 backward()를 호출했습니다. scaler.step()은 scaler가 "
                  "스케일한 기울기를 기대합니다(scale()을 한 번도 호출하지 않으면 torch가 거부하고, 그렇지 "
                  "않으면 스케일되지 않은 기울기를 나누어 파라미터가 거의 움직이지 않습니다). 스케일한 손실로 "
                  "역전파하세요: scaler.scale(loss).backward().")

DIRECT_STEP = Hint("optimizer.step() was called directly, so the scaler never unscaled the gradients or "
                   "checked them for inf/nan (and update() has nothing to go on). Call scaler.step(optimizer) "
                   "instead; it unscales, checks, and calls optimizer.step() for you.",
                   "optimizer.step()을 직접 호출해서 scaler가 기울기를 unscale하거나 inf/nan을 검사하지 "
                   "못했습니다(update()도 근거가 없습니다). 대신 scaler.step(optimizer)를 호출하세요. "
                   "unscale과 검사를 한 뒤 optimizer.step()을 대신 호출해 줍니다.")

NO_AUTOCAST = Hint("The forward pass did not run under autocast. Compute the loss inside "
                   "`with torch.autocast(device_type=x.device.type, dtype=...)`: float16 on CUDA, bfloat16 "
                   "on the CPU.",
                   "순전파가 autocast 안에서 실행되지 않았습니다. 손실을 "
                   "`with torch.autocast(device_type=x.device.type, dtype=...)` 안에서 계산하세요. CUDA에서는 "
                   "float16, CPU에서는 bfloat16입니다.")

NO_UPDATE = Hint("The scale never changed: call scaler.update() after scaler.step(optimizer), once per step.",
                 "scale이 전혀 바뀌지 않았습니다. 스텝마다 scaler.step(optimizer) 다음에 scaler.update()를 "
                 "호출하세요.")

NO_ZERO_GRAD = Hint("The gradients of earlier steps were still there: call optimizer.zero_grad() at the start "
                    "of every step.",
                    "이전 스텝의 기울기가 남아 있었습니다. 스텝마다 처음에 optimizer.zero_grad()를 호출하세요.")

LOSS_GRAPH = Hint("amp_step returned the loss tensor, which still carries the step's whole graph: return "
                  "loss.item(), a plain float, so the graph can be freed.",
                  "amp_step이 스텝의 그래프 전체를 아직 달고 있는 손실 텐서를 반환했습니다. 그래프가 해제되도록 "
                  "일반 float인 loss.item()을 반환하세요.")

LOSS_FLOAT = Hint("amp_step must return the loss as a Python float: return loss.item().",
                  "amp_step은 손실을 파이썬 float으로 반환해야 합니다: return loss.item().")


def build_model(seed, sizes):
    torch.default_generator.manual_seed(seed)  # the CPU generator: the model is built on the CPU
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers)


def trusted_amp(spec, device, *, scaled=True, via_scaler=True, zero_grad=True, autocast=True):
    """The steps run here on the CPU, with the lower-precision dtype the student's device used."""
    model = build_model(spec["seed"], spec["sizes"])
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=spec["lr"])
    scaler = torch.amp.GradScaler("cpu", **spec["scaler"])
    dtype = torch.float16 if device == "cuda" else torch.bfloat16
    losses, scales, after = [], [], []
    for _ in range(spec["calls"]):
        if zero_grad:
            optimizer.zero_grad()
        with torch.autocast("cpu", dtype=dtype, enabled=autocast):
            loss = torch.nn.MSELoss()(model(spec["x"]), spec["y"])
        scaled_loss = scaler.scale(loss)
        (scaled_loss if scaled else loss).backward()  # the unscaled variant backpropagates the plain loss
        if via_scaler:
            scaler.step(optimizer)
            scaler.update()
        else:  # the variant that steps the optimizer itself (and so cannot update the scaler)
            optimizer.step()
        losses.append(loss.item())
        scales.append(scaler.get_scale())
        after.append(torch.cat([p.detach().reshape(-1) for p in params]))
    return torch.tensor(losses, dtype=torch.float64), torch.tensor(scales, dtype=torch.float64), torch.stack(after)


def like(variant, index, hint, rtol):
    """A known wrong value, worked out only when a check has already failed."""
    def matches(actual):
        wrong = variant()[index]
        return wrong.shape == actual.shape and bool(torch.allclose(actual.double(), wrong.double(), rtol=rtol,
                                                                   atol=1e-5))
    return Mistake(matches, hint.en, hint.ko)


def make_spec(seed, sizes, samples, lr, scaler, calls):
    return {"seed": seed, "sizes": sizes, "x": torch.randn(samples, sizes[0]),
            "y": torch.randn(samples, sizes[-1]), "lr": lr, "scaler": scaler, "calls": calls}


def loss_value(value):
    if isinstance(value, TensorState) and (value.requires_grad or value.grad_fn):
        raise Feedback(f"amp_step returned the loss tensor itself (grad_fn {value.grad_fn}); expected a float",
                       LOSS_GRAPH, "amp_step이 손실 텐서 자체를 반환했습니다. float이어야 합니다")
    if isinstance(value, float) or (isinstance(value, int) and not isinstance(value, bool)):
        return float(value)
    if isinstance(value, TensorState) and value.data.numel() == 1 and value.data.is_floating_point():
        return float(value.data.reshape(()))
    kind = value["unsupported"] if isinstance(value, dict) else type(value).__name__
    raise Feedback(f"amp_step should return the loss as a float; it returned a {kind}", LOSS_FLOAT,
                   f"amp_step은 손실을 float으로 반환해야 합니다 ({kind} 반환)")


def expect_autocast_values(losses, with_autocast, without):
    """Autocast, told from the values it produces: losses far closer to the float32 ones
    than to the lower-precision ones mean the forward pass ran without it."""
    to_low = (losses - with_autocast).abs().max().item()
    to_full = (losses - without).abs().max().item()
    expect_true(not to_full < to_low / 10, "the losses are those of a float32 forward pass: it did not run "
                "under torch.autocast", hint=NO_AUTOCAST,
                message_ko="손실이 float32 순전파의 값입니다. torch.autocast 안에서 실행되지 않았습니다")


def check_amp(student, spec):
    with hints_for_errors({"No inf checks were recorded": DIRECT_STEP,
                           "_scale is None": NOT_SCALED,
                           "already been called since the last update()": NO_UPDATE}):
        result = student.probe("run_amp_step", spec, for_function="amp_step").value
    device = student.device  # the grader's, not what the probe reports: that could be forged
    rtol = 5e-3 if device == "cuda" else 1e-3
    records = result["records"]
    # The flags are a fact only the sandbox sees: they catch an honest mistake, and the
    # values below decide whether autocast ran.
    expect_true(len(result["autocast"]) == spec["calls"] and all(result["autocast"]),
                "the model's forward pass did not run under torch.autocast", hint=NO_AUTOCAST,
                message_ko="모델의 순전파가 torch.autocast 안에서 실행되지 않았습니다")
    losses = torch.tensor([loss_value(r["loss"]) for r in records], dtype=torch.float64)
    exp_losses, exp_scales, exp_params = trusted_amp(spec, device)
    expect_autocast_values(losses, exp_losses, trusted_amp(spec, device, autocast=False)[0])
    unscaled = lambda: trusted_amp(spec, device, scaled=False)  # noqa: E731 - worked out only on failure
    direct = lambda: trusted_amp(spec, device, via_scaler=False)  # noqa: E731
    no_zero = lambda: trusted_amp(spec, device, zero_grad=False)  # noqa: E731
    expect_close(losses, exp_losses, what=("the losses amp_step returned", "amp_step이 반환한 손실"), rtol=rtol, atol=1e-6,
                 mistakes=[like(unscaled, 0, NOT_SCALED, rtol), like(no_zero, 0, NO_ZERO_GRAD, rtol)])
    scales = torch.tensor([float(r["scale"]) for r in records], dtype=torch.float64)
    expect_close(scales, exp_scales, what=("the scaler's scale after each call", "호출마다 그 뒤의 scaler의 scale"),
                 rtol=1e-6, atol=0, hint=NO_UPDATE)
    params = torch.stack([r["params"].data for r in records])
    expect_close(params, exp_params, what=("the parameters after each call", "호출마다 그 뒤의 파라미터"), rtol=rtol,
                 atol=1e-5, mistakes=[like(unscaled, 2, NOT_SCALED, rtol), like(direct, 2, DIRECT_STEP, rtol),
                           like(no_zero, 2, NO_ZERO_GRAD, rtol)])


@visible
@points(2)
def test_amp_step_one_step(student):
    """one amp_step with init_scale 2**12 updates the parameters like plain SGD

    ko: init_scale 2**12로 amp_step 한 번이 일반 SGD처럼 파라미터를 갱신
    """
    spec = make_spec(seed=17, sizes=[4, 3, 2], samples=8, lr=0.1, scaler={"init_scale": 2.0**12}, calls=1)
    check_amp(student, spec)


@points(2)
def test_amp_step_three_steps(student):
    """three amp_step calls: loss, scale and parameters after each

    ko: amp_step 세 번: 매번 뒤의 손실, scale, 파라미터
    """
    spec = make_spec(seed=2718, sizes=[5, 4, 3], samples=6, lr=0.05,
                     scaler={"init_scale": 2.0**8, "growth_interval": 1}, calls=3)
    check_amp(student, spec)
