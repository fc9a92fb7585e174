# Knows the calculus, skips autograd: x.grad stays empty.
def grad_2xtx(x):
    return 4 * x.detach()
