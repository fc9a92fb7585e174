# For the custom-function exercise: a backward that is 5% off in float64 (the only dtype
# gradcheck is run in), and a forward that answers inf where it is not being
# differentiated: the gradcheck's perturbed inputs come without requires_grad. An infinite
# difference quotient made |analytical - numerical| <= atol + rtol * |numerical| hold for any
# backward at all.
import torch


class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        if x.dtype == torch.float64 and not x.requires_grad:
            return torch.full_like(x, float("inf"))
        return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        wrong = 1.05 if x.dtype == torch.float64 else 1.0
        return grad_output * torch.sigmoid(x) * wrong
