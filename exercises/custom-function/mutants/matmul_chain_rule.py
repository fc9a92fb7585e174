# Writes the chain rule as a vector-Jacobian product, grad_output @ sigmoid(x): a scalar, not a gradient per element.
import torch


class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        # log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): e^-|x| never exceeds 1, so nothing overflows.
        return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output @ torch.sigmoid(x)
