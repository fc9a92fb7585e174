import torch


class GradScaler:
    """Dynamic loss scaling: scale the loss, unscale the gradients, skip steps that overflowed."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        raise NotImplementedError

    def scale(self, loss):
        """Return loss multiplied by the current scale."""
        raise NotImplementedError

    def unscale_(self, optimizer):
        """Divide every gradient of the optimizer by the scale (once per step); note any inf/nan."""
        raise NotImplementedError

    def step(self, optimizer):
        """Unscale if not done yet; call optimizer.step() unless inf/nan was found. Return whether it ran."""
        raise NotImplementedError

    def update(self):
        """Back off after an overflow; grow after growth_interval clean steps in a row."""
        raise NotImplementedError

    def get_scale(self):
        """Return the current scale as a float."""
        raise NotImplementedError


def amp_step(model, x, y, loss_fn, optimizer, scaler):
    """One mixed-precision training step with torch.autocast and a torch.amp.GradScaler; return the loss."""
    raise NotImplementedError
