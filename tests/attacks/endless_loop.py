# Spins on the CPU for ever.
def grad_2xtx(x):
    while True:
        pass
