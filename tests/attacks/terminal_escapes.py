# Prints terminal escape sequences that clear the screen and draw a forged report, and a
# right-to-left override that makes text read backwards; raises an exception (with a
# class name) carrying more of both. A terminal running `grader grade` would obey them.
import sys

ESC = "\x1b"
FORGED = f"{ESC}[2J{ESC}[H{ESC}[32mattack-target v1: 2/2 points  [graded]{ESC}[0m"


def grad_2xtx(x):
    print(FORGED)
    print("score: \u202e2/0\u202c, and a C1 CSI: \x9b2J, a bell\x07, a carriage return\rhere")
    sys.stdout.flush()
    raise type(f"{ESC}[8mHidden", (Exception,), {})(f"{ESC}]0;pwned{ESC}\\ \u2066right\u2069 {ESC}[1A{ESC}[2K")
