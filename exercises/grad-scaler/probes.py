"""Drives the submission's GradScaler and amp_step() inside the sandbox.

Builds a small seeded model, an SGD optimizer and the scalers from the plain numbers a
test sends, runs the steps it describes, and hands back what happened at every step.
Holds no answers: the tests work out the expected results themselves.
"""

import numbers

import torch

import submission


def build_model(seed, sizes, device):
    """Linear layers of the given sizes with Tanh between them, seeded like the tests' copy."""
    torch.default_generator.manual_seed(seed)  # the CPU generator: the model is built on the CPU
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers).to(device)


def run_scaler(spec):
    """Run the submission's GradScaler through spec["steps"]; one record per step.

    Each step: optimizer.zero_grad(); loss = mse * mult (times inf or nan where the step
    injects one); scaler.scale(loss).backward(); unscale_() called `unscale` times;
    scaler.step(optimizer); scaler.update().
    """
    x, y = spec["x"], spec["y"]
    model = build_model(spec["seed"], spec["sizes"], x.device)
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=spec["lr"])
    scaler = submission.GradScaler(**spec["scaler"])
    initial = _plain(scaler.get_scale())
    records = []
    for step in spec["steps"]:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y) * step["mult"]
        if step.get("inject"):
            loss = loss * float(step["inject"])
        scaled = scaler.scale(loss)
        scaled.backward()
        if step.get("grad"):  # a gradient overflows although the scaled loss is finite
            with torch.no_grad():
                params[0].grad.view(-1)[0] = float(step["grad"])
        unscaled_grads = None
        for call in range(step.get("unscale", 0)):
            if call == 0:
                scaler.unscale_(optimizer)
            else:
                try:  # a second call may do nothing or refuse, as torch's does; it must not divide again
                    scaler.unscale_(optimizer)
                except RuntimeError:
                    pass
            unscaled_grads = _flat([p.grad for p in params])
        stepped = scaler.step(optimizer)
        scaler.update()
        records.append({
            "loss": loss.detach(),
            "scaled_loss": scaled.detach() if isinstance(scaled, torch.Tensor) else _plain(scaled),
            "unscaled_grads": unscaled_grads,
            "stepped": _plain(stepped),
            "scale": _plain(scaler.get_scale()),
            "params": _flat(params),
        })
    return {"initial_scale": initial, "records": records}


class _Watched(torch.nn.Module):
    """The model, plus a note of whether autocast was on during each forward pass."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.autocast = []

    def forward(self, x):
        self.autocast.append(torch.is_autocast_enabled(x.device.type))
        return self.inner(x)


def run_amp_step(spec):
    """Call submission.amp_step spec["calls"] times with a real torch.amp.GradScaler."""
    x, y = spec["x"], spec["y"]
    model = _Watched(build_model(spec["seed"], spec["sizes"], x.device))
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=spec["lr"])
    scaler = torch.amp.GradScaler(x.device.type, **spec["scaler"])
    loss_fn = torch.nn.MSELoss()
    records = []
    for _ in range(spec["calls"]):
        value = submission.amp_step(model, x, y, loss_fn, optimizer, scaler)
        # A tensor goes out as it is: whether it still carries a graph is part of the answer.
        records.append({"loss": value if isinstance(value, torch.Tensor) else _plain(value), "scale": scaler.get_scale(), "params": _flat(params)})
    return {"device": x.device.type, "autocast": list(model.autocast), "records": records}


def _flat(tensors):
    if any(t is None for t in tensors):
        return None
    return torch.cat([t.detach().reshape(-1) for t in tensors]).clone()


def _plain(value):
    """A returned value in a form that can leave the sandbox."""
    if isinstance(value, torch.Tensor):
        return value.detach()
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Real):
        return float(value)
    return {"unsupported": type(value).__name__}


def run_default_growth(steps, first=1999, **arguments):
    """The submission's GradScaler with its default arguments (or these `arguments`) over
    `steps` clean steps on one parameter; the scale after each step from the `first` on
    (the default growth_interval is 2000)."""
    w = torch.nn.Parameter(torch.tensor([0.5, -0.25]))
    optimizer = torch.optim.SGD([w], lr=1e-6)
    scaler = submission.GradScaler(**arguments)
    scales = []
    for i in range(steps):
        optimizer.zero_grad()
        scaler.scale((w * w).sum()).backward()
        scaler.step(optimizer)
        scaler.update()
        if i + 1 >= first:
            scales.append(_plain(scaler.get_scale()))
    return scales
