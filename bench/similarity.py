"""Similar submissions: what ranking an assignment's final submissions costs, by class size.

    .venv/bin/python bench/similarity.py [--sizes 50 200] [--scale 1] [--seed 1]

Each synthetic class answers two-layer-net: every student's solution is put together from
alternative lines for each step, under names of their own, with helpers and comments of
their own; one in ten is a renamed copy of a classmate's. --scale repeats each solution's
body that many times (longer sources). grader.courses.similarity.rank compares them all,
in this process, without a database. Prints per size the seconds to fingerprint and to
compare, the pairs that share code, and the ratio of each size's total to the first's
(pairs grow with the square of the class: 200 students are 16 times the pairs of 50).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from grader.courses import similarity  # noqa: E402

STARTER = (ROOT / "exercises" / "two-layer-net" / "starter.py").read_text(encoding="utf-8")
NAMES = ["loss", "err", "cost", "total", "out", "pred", "hidden", "h", "act", "grads", "history", "vals", "step",
         "i", "k", "lr", "a", "b", "z", "res", "score", "acc", "tmp", "buf", "diff", "delta", "upd", "p", "q"]
STEPS = [
    ["{h} = x.mm(w1).clamp(min=0)", "{h} = torch.relu(x @ w1)", "{h} = (x @ w1).clamp_min(0)",
     "{h} = torch.nn.functional.relu(torch.matmul(x, w1))"],
    ["{p} = {h}.mm(w2)", "{p} = {h} @ w2", "{p} = torch.matmul({h}, w2)"],
    ["{l} = (({p} - y) ** 2).sum()", "{l} = ({p} - y).pow(2).sum()", "{l} = torch.sum(({p} - y) * ({p} - y))",
     "{d} = {p} - y\n        {l} = ({d} * {d}).sum()"],
    ["{r}.append({l}.item())", "{r}.append(float({l}))", "{r} += [{l}.item()]"],
    ["{l}.backward()", "torch.autograd.backward({l})"],
    ["with torch.no_grad():\n            w1 -= learning_rate * w1.grad\n            w2 -= learning_rate * w2.grad",
     "with torch.no_grad():\n            for {w} in (w1, w2):\n                {w}.sub_(learning_rate * {w}.grad)",
     "with torch.no_grad():\n            w1.add_(w1.grad, alpha=-learning_rate)\n"
     "            w2.add_(w2.grad, alpha=-learning_rate)"],
    ["w1.grad.zero_()\n        w2.grad.zero_()", "w1.grad = None\n        w2.grad = None",
     "for {w} in (w1, w2):\n            {w}.grad.zero_()"],
]
HELPERS = ["def _check(t):\n    assert t.dim() == 2, 'expected a matrix'\n    return t\n",
           "def _mse(a, b):\n    return ((a - b) ** 2).sum()\n",
           "def _log(values, every=10):\n    return [v for i, v in enumerate(values) if i % every == 0]\n",
           "SEED = {n}\n", "def _shape(t):\n    return tuple(t.shape)\n"]


def solution(rng: random.Random, scale: int) -> str:
    names = rng.sample(NAMES, 6)
    fill = dict(zip("hpldrw", names))
    body = "\n        ".join(rng.choice(step).format(**fill) for step in STEPS)
    helpers = "\n\n".join(h.replace("{n}", str(rng.randrange(1000))) for h in rng.sample(HELPERS, rng.randrange(3)))
    loop = (f"    for _ in range(steps):\n        # {rng.choice(['forward', 'the forward pass', 'step'])}\n"
            f"        {body}\n") * scale
    return (f"import torch\n\n{helpers}\n\ndef train_two_layer(x: torch.Tensor, y: torch.Tensor, w1: torch.Tensor, "
            f"w2: torch.Tensor,\n                    learning_rate: float, steps: int) -> list[float]:\n"
            f"    {fill['r']} = []\n{loop}    return {fill['r']}\n")


def renamed(source: str, rng: random.Random) -> str:
    for name in rng.sample(NAMES, 4):
        source = source.replace(f"{name} ", f"{name}_{rng.randrange(9)} ")
    return source.replace("# ", "# my own ")


def class_of(n: int, rng: random.Random, scale: int) -> list[tuple[int, str]]:
    sources: list[tuple[int, str]] = []
    for i in range(n):
        copied = i >= 10 and rng.random() < 0.1
        sources.append((i, renamed(rng.choice(sources)[1], rng) if copied else solution(rng, scale)))
    return sources


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--scale", type=int, default=1, help="repeat each solution's body this many times")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    similarity.rank(STARTER, class_of(3, rng, 1))  # copydetect's import (and matplotlib's) is not the class's cost
    first = None
    print(f"{'students':>9}{'pairs':>9}{'sharing':>9}{'chars/src':>10}{'fingerprint s':>15}{'compare s':>11}"
          f"{'total s':>9}{'ratio':>7}")
    for n in args.sizes:
        sources = class_of(n, rng, args.scale)
        started = time.perf_counter()
        prints = [similarity._Source(key, text, similarity.starter_prints(STARTER)) for key, text in sources]
        fingerprinted = time.perf_counter() - started
        started = time.perf_counter()
        pairs = similarity.rank(STARTER, sources)
        total = time.perf_counter() - started
        first = first or total
        chars = sum(len(text) for _, text in sources) // n
        print(f"{n:>9}{n * (n - 1) // 2:>9}{len(pairs):>9}{chars:>10}{fingerprinted:>15.2f}"
              f"{total - fingerprinted:>11.2f}{total:>9.2f}{total / first:>7.1f}")
        del prints


if __name__ == "__main__":
    main()
