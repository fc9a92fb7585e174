# Forgets the .sum(): calls backward() on the non-scalar x ** 3.
def backward_twice(x):
    y = x ** 3
    y.backward(retain_graph=True)
    y.backward()
    return x.grad
