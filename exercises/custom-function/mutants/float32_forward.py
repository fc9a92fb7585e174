# Computes forward in float32 (the precision the overflow warning is about) and casts the result back.
import torch


class Softplus(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        # log(1 + e^x) = max(x, 0) + log(1 + e^-|x|): e^-|x| never exceeds 1, so nothing overflows.
        x32 = x.float()
        return (x32.clamp(min=0) + torch.log1p(torch.exp(-x32.abs()))).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        x, = ctx.saved_tensors
        return grad_output * torch.sigmoid(x)
