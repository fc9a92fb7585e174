# unscale_() returns at the first gradient that is not finite, leaving the finite ones after it undivided.
import torch


class GradScaler:
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self._scale = float(init_scale)
        self._growth_factor = growth_factor
        self._backoff_factor = backoff_factor
        self._growth_interval = growth_interval
        self._growth_tracker = 0
        self._unscaled = False    # unscale_() already ran in this step
        self._found_inf = False   # a gradient of this step was inf or nan

    def scale(self, loss):
        return loss * self._scale

    def unscale_(self, optimizer):
        if self._unscaled:
            return
        inv_scale = 1.0 / self._scale
        found_inf = False
        with torch.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not bool(torch.isfinite(param.grad).all()):
                        self._found_inf = True
                        self._unscaled = True
                        return
                    param.grad.mul_(inv_scale)
        self._found_inf = found_inf
        self._unscaled = True

    def step(self, optimizer):
        if not self._unscaled:
            self.unscale_(optimizer)
        if self._found_inf:
            return False
        optimizer.step()
        return True

    def update(self):
        if self._found_inf:
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._unscaled = False
        self._found_inf = False

    def get_scale(self):
        return self._scale


def amp_step(model, x, y, loss_fn, optimizer, scaler):
    optimizer.zero_grad()
    dtype = torch.float16 if x.device.type == "cuda" else torch.bfloat16
    with torch.autocast(device_type=x.device.type, dtype=dtype):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    return loss.item()
