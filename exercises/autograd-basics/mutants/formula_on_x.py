# Applies the derivative's formula to x itself: the result still carries a graph, x.grad stays empty.
def grad_2xtx(x):
    return 4 * x
