# Knows the answers, skips autograd: x.grad stays empty.
def partial_grad(x):
    return x.detach() ** 2


def source_grad(x):
    return 2 * x.detach()
