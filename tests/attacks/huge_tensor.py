# Returns enormous tensors: 1 GiB from the hidden call (over the 256 MiB memory limit),
# 65 MiB from the visible one (over the 64 MiB limit on returned data; encoding it also
# needs more memory than the call may use).
import torch


def grad_2xtx(x):
    if x.dtype == torch.float64:
        return torch.ones(1 << 28)
    return torch.ones(65 << 18)
