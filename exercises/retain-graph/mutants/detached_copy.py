# Backpropagates twice through a graph built on a detached copy of x.
def backward_twice(x):
    x = x.detach().requires_grad_()
    y = (x ** 3).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad
