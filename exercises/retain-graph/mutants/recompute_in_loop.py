# Builds a new y on every pass of a loop: two graphs, each backpropagated once.
def backward_twice(x):
    for _ in range(2):
        (x ** 3).sum().backward()
    return x.grad
