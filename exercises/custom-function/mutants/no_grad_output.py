# Returns sigmoid(x) from backward, forgetting to multiply by grad_output (chain rule).
import torch


class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return torch.sigmoid(x)
