# Writes the gradient into x.grad by hand, no backward() at all.
def grad_2xtx(x):
    x.grad = 4 * x.detach()
    return x.grad
