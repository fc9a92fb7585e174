# Detaches x as well as y in partial_grad (z = u * x.detach()): z no longer depends on x at all.
def partial_grad(x):
    y = x * x
    u = y.detach()
    z = u * x.detach()
    z.sum().backward()
    return x.grad


def source_grad(x):
    y = x * x
    u = y.detach()
    z = u * x
    z.sum().backward()
    x.grad = None
    y.sum().backward()
    return x.grad
