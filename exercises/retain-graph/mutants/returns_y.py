# Returns y instead of the accumulated gradient.
def backward_twice(x):
    y = (x ** 3).sum()
    y.backward(retain_graph=True)
    y.backward()
    return y
