# Backpropagates three times "to be safe": 9x².
def backward_twice(x):
    y = (x ** 3).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    y.backward()
    return x.grad
