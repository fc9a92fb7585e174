# Never calls ctx.save_for_backward, so backward finds ctx.saved_tensors empty.
import torch


class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clamp(min=0) + torch.log1p(torch.exp(-x.abs()))

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)
