# Writes forward and backward as ordinary methods taking self, without @staticmethod.
import torch


class Softplus(torch.autograd.Function):
    def forward(self, ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

    def backward(self, ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)
