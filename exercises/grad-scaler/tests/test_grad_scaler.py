import math

import torch

from grader.testing import Feedback, Hint, Mistake, TensorState, Text, expect_close, points, visible

TWICE = ("The gradients were divided by the scale twice in one step. unscale_() must remember that it "
         "already ran in this step: a second call does nothing, and step() only unscales when unscale_() "
         "has not been called since the last update().",
         "한 스텝에서 기울기를 scale로 두 번 나누었습니다. unscale_()는 이번 스텝에서 이미 실행되었음을 "
         "기억해야 합니다. 두 번째 호출은 아무것도 하지 않고, step()은 마지막 update() 이후 unscale_()가 "
         "호출되지 않았을 때만 unscale합니다.")

NO_SKIP = ("optimizer.step() ran although a gradient was inf or nan, so the parameters became nan. When "
           "unscale_() finds a non-finite gradient, step() must skip optimizer.step() and return False.",
           "기울기에 inf나 nan이 있었는데도 optimizer.step()이 실행되어 파라미터가 nan이 되었습니다. "
           "unscale_()가 유한하지 않은 기울기를 찾으면 step()은 optimizer.step()을 건너뛰고 False를 "
           "반환해야 합니다.")

EVERY_STEP = ("The scale grew after every clean step. It should grow only after growth_interval clean steps "
              "in a row: count the clean steps, multiply by growth_factor when the count reaches "
              "growth_interval, then start counting again from 0.",
              "깨끗한 스텝마다 scale이 커졌습니다. scale은 연속으로 growth_interval번 깨끗한 스텝이 지난 "
              "뒤에만 커져야 합니다. 깨끗한 스텝을 세다가 growth_interval에 이르면 growth_factor를 곱하고 "
              "0부터 다시 세세요.")

KEEPS_COUNT = ("After an overflow the scale grew too early: backing off did not reset the count of clean "
               "steps. When inf or nan is found, multiply the scale by backoff_factor and set the growth "
               "counter back to 0.",
               "오버플로 뒤에 scale이 너무 일찍 커졌습니다. scale을 줄일 때 깨끗한 스텝 수를 초기화하지 "
               "않았습니다. inf나 nan을 찾으면 scale에 backoff_factor를 곱하고 성장 카운터를 0으로 "
               "되돌리세요.")

NOT_UNSCALED = ("The parameters moved by the scale factor too much: step() called optimizer.step() on "
                "gradients that were still scaled. When unscale_() was not called in this step, step() must "
                "unscale the gradients itself before optimizer.step().",
                "파라미터가 scale 배만큼 너무 많이 움직였습니다. step()이 아직 스케일된 기울기로 "
                "optimizer.step()을 호출했습니다. 이번 스텝에서 unscale_()가 호출되지 않았다면 step()이 "
                "optimizer.step() 전에 직접 기울기를 unscale해야 합니다.")

NO_BACKOFF = ("The scale did not go down after an overflow: update() must multiply it by backoff_factor "
              "whenever the step found inf or nan.",
              "오버플로 뒤에 scale이 줄지 않았습니다. 스텝에서 inf나 nan을 찾았다면 update()가 scale에 "
              "backoff_factor를 곱해야 합니다.")

LOSS_ONLY = ("optimizer.step() ran on a step whose gradients held inf or nan while the scaled loss was "
             "finite: the overflow check looks at the loss, not at the gradients. A gradient can overflow "
             "on its own; unscale_() must check every parameter's .grad (torch.isfinite).",
             "스케일된 손실은 유한했지만 기울기에 inf나 nan이 있던 스텝에서 optimizer.step()이 실행되었습니다. "
             "오버플로 검사가 기울기가 아니라 손실을 봅니다. 기울기만 따로 넘칠 수 있으므로 unscale_()는 모든 "
             "파라미터의 .grad를 검사해야 합니다(torch.isfinite).")

INF_ONLY = ("optimizer.step() ran on the steps whose gradients were nan, and skipped those with inf: the "
            "check finds inf but not nan (torch.isinf, or a comparison with float('inf')). Check for both "
            "with torch.isfinite in unscale_().",
            "기울기가 nan인 스텝에서는 optimizer.step()이 실행되고 inf인 스텝은 건너뛰었습니다. 검사가 inf만 "
            "찾고 nan은 놓칩니다(torch.isinf나 float('inf')와의 비교). unscale_()에서 torch.isfinite로 둘 다 "
            "검사하세요.")

NEVER_RESET = ("After the first overflow every step was skipped, also the clean ones: the inf/nan flag is "
               "never cleared. update() ends the step; it must reset the flag (and the unscaled mark), so "
               "that the next step starts clean.",
               "첫 오버플로 뒤로 깨끗한 스텝까지 모두 건너뛰었습니다. inf/nan 표시를 지우지 않습니다. "
               "update()가 스텝을 끝내므로 그 표시(그리고 unscale했다는 표시)를 초기화해서 다음 스텝이 "
               "깨끗하게 시작하게 하세요.")

STEP_LIES = ("What step() returned does not match what it did: the parameters moved on a step where it "
             "returned False, or stayed put where it returned True. Return True exactly when "
             "optimizer.step() ran.",
             "step()의 반환값이 실제 동작과 맞지 않습니다. False를 반환한 스텝에서 파라미터가 움직였거나, "
             "True를 반환한 스텝에서 그대로였습니다. optimizer.step()을 실행했을 때만 True를 반환하세요.")

# What each of the look-alikes is, in a phrase, for a hint that must name more than one.
CANDIDATES = {
    "no_skip": ("step() does not skip optimizer.step() when unscale_() found inf or nan",
                "unscale_()가 inf나 nan을 찾아도 step()이 optimizer.step()을 건너뛰지 않습니다"),
    "inf_only": ("the check finds inf but not nan (use torch.isfinite)",
                 "검사가 inf만 찾고 nan은 놓칩니다(torch.isfinite를 쓰세요)"),
    "loss_only": ("the check looks at the loss instead of every parameter's .grad",
                  "검사가 모든 파라미터의 .grad가 아니라 손실을 봅니다"),
}
ONE_OF = {"no_skip": NO_SKIP, "inf_only": INF_ONLY, "loss_only": LOSS_ONLY}


def one_of(names):
    """The hint for evidence that fits several mistakes: it names each of them."""
    if len(names) == 1:
        return Hint(*ONE_OF[names[0]])
    return Hint("optimizer.step() ran on a step whose gradients were not finite. What the steps show fits "
                "more than one mistake: " + "; or ".join(CANDIDATES[n][0] for n in names) + ".",
                "유한하지 않은 기울기가 있는 스텝에서 optimizer.step()이 실행되었습니다. 스텝들이 보여 주는 "
                "것으로는 여러 실수가 가능합니다: " + "; 또는 ".join(CANDIDATES[n][1] for n in names) + ".")


STOPPED = ("unscale_() stopped at the first gradient that is not finite and left the others undivided: it "
           "must divide every gradient by the scale, and note the inf or nan, whether or not one of them "
           "overflowed (torch's unscale_() does; the step is skipped all the same).",
           "unscale_()가 유한하지 않은 첫 기울기에서 멈춰 나머지 기울기를 나누지 않았습니다. 기울기 중 하나가 "
           "넘쳤든 아니든 모든 기울기를 scale로 나누고 inf나 nan을 기록해야 합니다(torch의 unscale_()가 그렇게 "
           "하고, 스텝은 어차피 건너뜁니다).")

SCALE_LOSS = Hint("scale(loss) must return the loss multiplied by the current scale (get_scale()).",
                  "scale(loss)는 손실에 현재 scale(get_scale())을 곱한 값을 반환해야 합니다.")

INITIAL = Hint("Right after construction get_scale() must return init_scale.",
               "생성 직후 get_scale()은 init_scale을 반환해야 합니다.")

STEP_BOOL = Hint("step(optimizer) must return True when optimizer.step() ran and False when it was skipped.",
                 "step(optimizer)는 optimizer.step()을 실행했으면 True, 건너뛰었으면 False를 반환해야 합니다.")

A_NUMBER = Hint("get_scale() must return the scale as a number (a float).",
                "get_scale()은 scale을 숫자(float)로 반환해야 합니다.")


# ------------------------------------------------------------------ the same steps, run here

def build_model(seed, sizes):
    torch.default_generator.manual_seed(seed)  # the CPU generator: the model is built on the CPU
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(torch.nn.Tanh())
    return torch.nn.Sequential(*layers)


class KnownMistake:
    """A scaler written here that updates its scale wrongly in one known way (or never skips a step):
    only for naming the mistake, never for expected values."""

    def __init__(self, mistake, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.mistake = mistake
        self.current, self.growth, self.backoff, self.interval = float(init_scale), growth_factor, \
            backoff_factor, growth_interval
        self.tracker, self.unscaled, self.found_inf = 0, False, False

    def get_scale(self):
        return self.current

    def scale(self, loss):
        return loss * self.current

    def unscale_(self, optimizer):
        if self.unscaled:
            raise RuntimeError("unscale_() already ran in this step")
        grads = [p.grad for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        self.found_inf = not all(bool(torch.isfinite(g).all()) for g in grads)
        with torch.no_grad():
            for g in grads:
                g.mul_(1.0 / self.current)
        self.unscaled = True

    def step(self, optimizer):
        if not self.unscaled:
            self.unscale_(optimizer)
        if self.found_inf and self.mistake != "no_skip":
            return False
        optimizer.step()
        return True

    def update(self):
        if self.found_inf:
            self.current *= self.backoff
            if self.mistake != "keeps_count":
                self.tracker = 0
        elif self.mistake == "grows_every_step":
            self.current *= self.growth
        else:
            self.tracker += 1
            if self.tracker == self.interval:
                self.current *= self.growth
                self.tracker = 0
        self.unscaled = self.found_inf = False


def flat(tensors):
    return torch.cat([t.detach().reshape(-1) for t in tensors]).clone()


def trusted_run(spec, mistake=None):
    """The test's steps with torch.amp.GradScaler (or a scaler making `mistake`), run here."""
    model = build_model(spec["seed"], spec["sizes"])
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=spec["lr"])
    calls = []
    plain_step = optimizer.step
    optimizer.step = lambda *a, **k: (calls.append(1), plain_step(*a, **k))[1]
    if mistake is None:
        scaler = torch.amp.GradScaler("cpu", **spec["scaler"])
    else:
        scaler = KnownMistake(mistake, **spec["scaler"])
    scales, stepped, after, grads = [scaler.get_scale()], [], [flat(params)], []
    kinds, loss_finite = [], []  # per step: the worst in the raw gradients; whether the scaled loss was finite
    for step in spec["steps"]:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(spec["x"]), spec["y"]) * step["mult"]
        if step.get("inject"):
            loss = loss * float(step["inject"])
        scaler.scale(loss).backward()
        if step.get("grad"):
            with torch.no_grad():
                params[0].grad.view(-1)[0] = float(step["grad"])
        if step.get("unscale", 0):
            scaler.unscale_(optimizer)  # torch refuses a second call in the same step; it changes nothing
        raw = flat([p.grad for p in params])
        kinds.append("inf" if bool(raw.isinf().any()) else "nan" if bool(raw.isnan().any()) else "finite")
        loss_finite.append(bool(torch.isfinite(loss * scaler.get_scale()).all()))
        grads.append(flat([p.grad for p in params]) if step.get("unscale", 0) else None)
        before = len(calls)
        scaler.step(optimizer)
        stepped.append(float(len(calls) > before))
        scaler.update()
        scales.append(scaler.get_scale())
        after.append(flat(params))
    # scales[i] and params[i] are those before step i + 1; the last entry is after the last step.
    return {"scales": torch.tensor(scales, dtype=torch.float64), "stepped": torch.tensor(stepped),
            "params": torch.stack(after), "grads": grads, "kinds": kinds, "loss_finite": loss_finite}


SCALE_MISTAKES = {"grows_every_step": EVERY_STEP, "keeps_count": KEEPS_COUNT, "no_skip": NO_SKIP}


def like(wrong, hint, rtol, atol):
    """A known wrong value, worked out (by calling `wrong`) only when a check has already failed."""
    def matches(actual):
        value = wrong()
        return value.shape == actual.shape and bool(torch.allclose(
            actual.double(), value.double(), rtol=rtol, atol=atol, equal_nan=True))
    return Mistake(matches, *hint)


def moved_by(before, delta, hint):
    """Parameters that moved from `before` by about `delta` (an update of the wrong size)."""
    def matches(actual):
        return actual.shape == before.shape and bool(torch.allclose(
            actual.double() - before.double(), delta.double(), rtol=0.05, atol=1e-7))
    return Mistake(matches, *hint)


def undivided(want, scale):
    """Gradients of an overflow step where some finite ones were left as they were (times the
    scale) and the rest divided: unscale_() stopped at the first gradient that is not finite."""
    def matches(actual):
        if actual.shape != want.shape:
            return False
        finite = torch.isfinite(want)
        wrong = finite & ~torch.isclose(actual.double(), want.double(), rtol=1e-4, atol=1e-7)
        return bool(wrong.any()) and bool(torch.allclose(
            actual.double()[wrong], (want * scale).double()[wrong], rtol=1e-4, atol=1e-7))
    return Mistake(matches, *STOPPED)


def step(mult=1.0, inject=None, unscale=0, grad=None):
    """One step; ``inject`` multiplies the loss by inf or nan, ``grad`` puts inf or nan into one
    gradient after backward() while the scaled loss stays finite."""
    return {"mult": mult, "inject": inject, "unscale": unscale, "grad": grad}


def make_spec(seed, sizes, samples, lr, scaler, steps):
    return {"seed": seed, "sizes": sizes, "x": torch.randn(samples, sizes[0]),
            "y": torch.randn(samples, sizes[-1]), "lr": lr, "scaler": scaler, "steps": steps}


# ------------------------------------------------------------------ reading what came back

BEFORE_FIRST = Text("get_scale() before the first step", "첫 스텝 전의 get_scale()")


def number(value, what, hint=A_NUMBER):
    what = Text.of(what)
    if isinstance(value, TensorState) and value.data.numel() == 1:
        return float(value.data.reshape(()))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    kind = value["unsupported"] if isinstance(value, dict) else type(value).__name__
    raise Feedback(f"{what.en} should be a number; got a {kind}", hint, f"{what.get('ko')}은(는) 숫자여야 합니다 ({kind})")


def flag(value):
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, TensorState) and value.data.numel() == 1 and value.data.dtype == torch.bool:
        return float(bool(value.data.reshape(())))
    kind = value["unsupported"] if isinstance(value, dict) else type(value).__name__
    raise Feedback(f"step(optimizer) should return True or False; it returned {kind}", STEP_BOOL,
                   f"step(optimizer)는 True 또는 False를 반환해야 합니다 ({kind} 반환)")


def tensor_of(value, what, hint=None):
    if isinstance(value, TensorState):
        return value.data
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return torch.tensor(float(value))
    raise Feedback(f"{what} should be a tensor; got {type(value).__name__}", hint,
                   f"{what}은(는) 텐서여야 합니다")


def diagnose(spec, records, expected):
    """Name the mistake from what each step did, before any sequence is compared: did the
    parameters move (step() ran), are they finite, and what step() returned. Look-alike
    mistakes leave the same scale sequence; these facts tell them apart."""
    ran, finite, said = [], [], []
    before = expected["params"][0]
    for record in records:
        params = record["params"].data if isinstance(record["params"], TensorState) else None
        if params is None or params.shape != before.shape:
            return
        ran.append(not torch.equal(params, before))
        finite.append(bool(torch.isfinite(params).all()))
        said.append(record["stepped"] if isinstance(record["stepped"], bool) else None)
        before = params
    should = [bool(v) for v in expected["stepped"]]
    bad = [i for i, (r, want) in enumerate(zip(ran, should)) if r and not want]
    if bad:
        # Once the parameters are nan, later steps say nothing: judge only up to there.
        window = next((i for i, f in enumerate(finite) if not f), len(finite) - 1) + 1
        bad = [i for i in bad if i < window]
        skipped = [i for i, want in enumerate(should[:window]) if not want and not ran[i]]
        kinds, loss_finite = expected["kinds"], expected["loss_finite"]
        fits = [name for name, ok in (
            ("no_skip", not skipped),
            ("inf_only", all(kinds[i] == "nan" for i in bad) and all(kinds[i] == "inf" for i in skipped)),
            ("loss_only", all(loss_finite[i] for i in bad) and not any(loss_finite[i] for i in skipped)),
        ) if ok]
        hint = one_of(fits or ["no_skip", "inf_only", "loss_only"])
        raise Feedback(f"optimizer.step() ran on step {bad[0] + 1}, whose gradients were not finite",
                       hint, f"{bad[0] + 1}번째 스텝에서 유한하지 않은 기울기로 optimizer.step()이 실행되었습니다")
    missed = [i for i, (r, want) in enumerate(zip(ran, should)) if want and not r]
    if missed and not any(ran[missed[0]:]) and any(not w for w in should[:missed[0]]):
        raise Feedback(f"every step from step {missed[0] + 1} on was skipped, although its gradients were finite",
                       Hint(*NEVER_RESET), f"{missed[0] + 1}번째 스텝부터 모든 스텝을 건너뛰었습니다")
    lies = [i for i, (r, flag) in enumerate(zip(ran, said)) if flag is not None and r != flag and all(finite[:i + 1])]
    if lies and spec["lr"] > 0:
        raise Feedback(f"step() returned {said[lies[0]]} at step {lies[0] + 1}, but optimizer.step() "
                       f"{'ran' if ran[lies[0]] else 'did not run'}", Hint(*STEP_LIES),
                       f"{lies[0] + 1}번째 스텝에서 step()의 반환값이 실제 동작과 다릅니다")


def check_steps(student, spec, initial_too: bool = False):
    """Run ``spec`` and check every step. ``initial_too``: also the scale before the first
    step (one test checks it, so that a scaler that sets it late loses that test alone)."""
    result = student.probe("run_scaler", spec, for_function="GradScaler").value
    records = result["records"]
    expected = trusted_run(spec)
    diagnose(spec, records, expected)
    cache = {}

    def known(name):
        if name not in cache:
            cache[name] = trusted_run(spec, name)
        return cache[name]

    init_scale = spec["scaler"].get("init_scale", 2.0**16)
    # Not a number at all is A_NUMBER's mistake; a number other than init_scale is INITIAL's.
    reported = result["initial_scale"]
    # Elsewhere the scaler's own first scale, where it tells one, so that scale(loss) is held
    # to the scaler's own number; one that starts elsewhere fails by its scales after update().
    initial = float(reported) if type(reported) in (int, float) else init_scale
    if initial_too:
        initial = number(result["initial_scale"], BEFORE_FIRST)
        expect_close(torch.tensor(initial), torch.tensor(init_scale), what=BEFORE_FIRST,
                     hint=INITIAL)

    # scale(loss) multiplies by the scaler's own current scale
    own = [initial] + [number(r["scale"], "get_scale()") for r in records[:-1]]
    for i, (record, current) in enumerate(zip(records, own)):
        scaled = tensor_of(record["scaled_loss"], "scale(loss)", SCALE_LOSS)
        loss = record["loss"].data
        # equal_nan: a step whose loss was made nan on purpose must scale to nan.
        expect_close(scaled.double().reshape(-1), (loss * current).double().reshape(-1),
                     what=(f"scale(loss) at step {i + 1}", f"{i + 1}번째 스텝의 scale(loss)"), rtol=1e-6, atol=0,
                     hint=SCALE_LOSS, equal_nan=True,
                     mistakes=[Mistake(loss, SCALE_LOSS.en, SCALE_LOSS.ko)])

    scales = torch.tensor([number(r["scale"], "get_scale()") for r in records], dtype=torch.float64)
    right = expected["scales"][1:]
    no_backoff = Mistake(lambda t: bool((t[1:] >= t[:-1]).all()) and bool((right[1:] < right[:-1]).any()),
                         *NO_BACKOFF)
    # The right rule from the wrong start: the scaler began at another scale than init_scale.
    elsewhere = Mistake(lambda t: initial != init_scale and bool(torch.allclose(
        t.double(), right.double() * (initial / init_scale), rtol=1e-6, atol=0)), INITIAL)
    # With a growth_interval of 2, growing after every clean step gives the very scales of a
    # count that starts again from 1 instead of 0 (off by one): the values cannot tell which,
    # so neither is named there; an interval of 3 or more tells them apart.
    named = {name: hint for name, hint in SCALE_MISTAKES.items()
             if name != "grows_every_step" or spec["scaler"].get("growth_interval", 2000) > 2}
    expect_close(scales, right, what=("the scale after each update()", "update()마다 그 뒤의 scale"), rtol=1e-6, atol=0,
                 mistakes=[like(lambda name=name: known(name)["scales"][1:], hint, 1e-6, 0)
                           for name, hint in named.items()] + [no_backoff, elsewhere])

    stepped = torch.tensor([flag(r["stepped"]) for r in records])
    expect_close(stepped, expected["stepped"],
                 what=("what step() returned (1 = True, 0 = False)", "step()이 반환한 값 (1 = True, 0 = False)"),
                 mistakes=[Mistake(torch.ones_like(stepped), *NO_SKIP)], hint=STEP_BOOL)

    # step by step: the first step that goes wrong says what went wrong
    for i, record in enumerate(records):
        scale = expected["scales"][i].float()
        want = expected["grads"][i]
        if want is not None:
            # On an overflow step too: torch's unscale_() divides every gradient, finite or not.
            got = tensor_of(record["unscaled_grads"], "the gradients after unscale_()")
            known = [Mistake(want / scale, *TWICE)] if bool(torch.isfinite(want).all()) else [
                undivided(want, scale)]
            expect_close(got, want, what=(f"the gradients after unscale_() at step {i + 1}",
                                          f"{i + 1}번째 스텝의 unscale_() 뒤 기울기"), rtol=1e-4, atol=1e-7,
                         mistakes=known, equal_nan=True)
        before, after = expected["params"][i], expected["params"][i + 1]
        delta = after - before
        wrong = [Mistake(lambda t: not bool(torch.isfinite(t).all()), *NO_SKIP)]
        if bool(delta.abs().sum()):
            wrong += [moved_by(before, delta / scale, TWICE), moved_by(before, delta * scale, NOT_UNSCALED)]
        expect_close(tensor_of(record["params"], "the parameters"), after,
                     what=(f"the parameters after step {i + 1}", f"{i + 1}번째 스텝 뒤의 파라미터"), rtol=1e-4,
                     atol=1e-6, mistakes=wrong)


# ------------------------------------------------------------------ tests

@visible
@points(2)
def test_clean_steps_match_torch(student):
    """five clean steps: the scale doubles every 2 steps and the parameters match torch's GradScaler

    ko: 깨끗한 스텝 다섯 번: scale이 2스텝마다 두 배가 되고 파라미터가 torch의 GradScaler와 같음
    """
    spec = make_spec(seed=5, sizes=[3, 2], samples=6, lr=0.1,
                     scaler={"init_scale": 2.0**10, "growth_interval": 2}, steps=[step() for _ in range(5)])
    check_steps(student, spec, initial_too=True)


@points(2)
def test_skips_step_on_inf_or_nan(student):
    """skips optimizer.step() and backs off when a gradient is inf or nan

    ko: 기울기가 inf나 nan이면 optimizer.step()을 건너뛰고 scale을 줄임
    """
    spec = make_spec(seed=31, sizes=[4, 3, 2], samples=5, lr=0.05,
                     scaler={"init_scale": 2.0**8, "growth_interval": 3},
                     steps=[step(), step(inject="inf"), step(0.5), step(inject="nan"), step(), step(2.0)])
    check_steps(student, spec)


@points(2)
def test_backoff_resets_growth_counter(student):
    """after a backoff, growth waits for growth_interval new clean steps

    ko: scale을 줄인 뒤에는 새 깨끗한 스텝 growth_interval번을 기다려 커짐
    """
    spec = make_spec(seed=8, sizes=[3, 3, 1], samples=4, lr=0.1,
                     scaler={"init_scale": 2.0**12, "growth_interval": 3},
                     steps=[step(), step(), step(inject="inf"), step(), step(), step(), step()])
    check_steps(student, spec)


@points(2)
def test_unscale_divides_once(student):
    """unscale_() before step() divides once per step, even when called twice

    ko: step() 전의 unscale_()는 두 번 불려도 스텝마다 한 번만 나눔
    """
    spec = make_spec(seed=77, sizes=[2, 4, 2], samples=6, lr=0.1,
                     scaler={"init_scale": 2.0**9, "growth_interval": 2},
                     steps=[step(unscale=1), step(2.0, unscale=2), step(0.5), step(unscale=2)])
    check_steps(student, spec)


@points(1)
def test_custom_factors(student):
    """uses growth_factor, backoff_factor and growth_interval as given

    ko: 주어진 growth_factor, backoff_factor, growth_interval을 사용
    """
    spec = make_spec(seed=123, sizes=[3, 1], samples=5, lr=0.1,
                     scaler={"init_scale": 2.0**6, "growth_factor": 4.0, "backoff_factor": 0.25,
                             "growth_interval": 2},
                     steps=[step(), step(), step(inject="inf"), step(unscale=1), step(), step()])
    check_steps(student, spec)


@points(1)
def test_overflow_from_huge_loss(student):
    """default settings: a huge loss overflows the scaled gradients and the step is skipped

    ko: 기본 설정: 아주 큰 손실이 스케일된 기울기를 넘치게 하고 스텝을 건너뜀
    """
    spec = make_spec(seed=4, sizes=[4, 2], samples=3, lr=0.05, scaler={},
                     steps=[step(), step(1e36), step(), step(1e36, unscale=1), step(3.0)])
    check_steps(student, spec)


@points(1)
def test_skips_step_when_only_gradients_overflow(student):
    """skips the step when a gradient is inf or nan although the scaled loss is finite

    ko: 스케일된 손실은 유한해도 기울기가 inf나 nan이면 스텝을 건너뜀
    """
    spec = make_spec(seed=19, sizes=[3, 2], samples=4, lr=0.1,
                     scaler={"init_scale": 2.0**8, "growth_interval": 2},
                     steps=[step(), step(grad="inf"), step(), step(grad="nan", unscale=1), step(), step(inject="inf"),
                            step()])
    check_steps(student, spec)


# Said where the scaler grows right when given its arguments: then a default is what differs,
# the growth interval or the initial scale alike.
DEFAULT_INTERVAL = ("With its default arguments the scale is not torch's around step 2000, while given its "
                    "arguments the scaler grows right: the defaults must be those of torch.amp.GradScaler "
                    "(init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000).",
                    "기본 인자로 만든 scaler의 scale이 2000번째 스텝 전후에서 torch와 다르고, 인자를 주면 올바르게 "
                    "커집니다. 기본값은 torch.amp.GradScaler와 같아야 합니다(init_scale=2.0**16, "
                    "growth_factor=2.0, backoff_factor=0.5, growth_interval=2000).")


GROWTH_RULE = ("The scale did not double after exactly growth_interval clean steps in a row, with the "
               "arguments given as well as with the defaults: count the clean steps since the last growth or "
               "backoff, and grow when the count reaches growth_interval (then start counting again).",
               "기본 인자로도, 인자를 준 경우에도 scale이 정확히 연속된 깨끗한 스텝 growth_interval번 뒤에 두 배가 "
               "되지 않았습니다. 마지막으로 커지거나 줄어든 뒤의 깨끗한 스텝을 세고, 그 수가 growth_interval에 "
               "이르면 키우세요(그리고 다시 세기 시작하세요).")


def why_not_at_2000(student):
    """DEFAULT_INTERVAL where the scaler grows right when given its arguments (so a default
    differs from torch's); GROWTH_RULE where it grows wrongly with them too (the counting is
    off, whatever the defaults). One more short run, made only once the check failed."""
    try:
        scales = student.probe("run_default_growth", 5, first=1, for_function="GradScaler",
                               init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=3).value
        got = [number(s, "get_scale()") for s in scales]
    except (Feedback, TypeError):
        return Hint(*GROWTH_RULE)
    right = [2.0**16, 2.0**16, 2.0**17, 2.0**17, 2.0**17]
    return Hint(*DEFAULT_INTERVAL) if got == right else Hint(*GROWTH_RULE)


@points(1)
def test_default_growth_interval(student):
    """with default arguments the scale doubles after exactly 2000 clean steps

    ko: 기본 인자에서는 깨끗한 스텝 정확히 2000번 뒤에 scale이 두 배가 됨
    """
    scales = student.probe("run_default_growth", 2001, for_function="GradScaler").value
    if not isinstance(scales, list):
        raise Feedback("the scales after steps 1999 to 2001 should be a list of numbers", Hint(*DEFAULT_INTERVAL),
                       "1999번째부터 2001번째 스텝까지의 scale이 숫자 리스트여야 합니다")
    got = torch.tensor([number(s, "get_scale()") for s in scales], dtype=torch.float64)
    want = torch.tensor([2.0**16, 2.0**17, 2.0**17], dtype=torch.float64)
    if got.shape == want.shape and bool(torch.equal(got, want)):
        return
    # Doubled at step 2000 and not at 2001, from a level no number of doublings or halvings
    # reaches (a negative one included): not a matter of growth, so neither growth hint fits.
    level = float(got[0] / want[0]) if got.shape == want.shape and bool(got[0] != 0) else 0.0
    off_level = level != 0 and (level < 0 or abs(math.log2(level) - round(math.log2(level))) > 1e-9) and bool(
        torch.allclose(got / got[0], want / want[0], rtol=1e-6, atol=0))
    expect_close(got, want, what=("get_scale() after steps 1999, 2000 and 2001",
                                  "1999, 2000, 2001번째 스텝 뒤의 get_scale()"), rtol=0, atol=0,
                 hint=None if off_level else why_not_at_2000(student),
                 mistakes=[Mistake(lambda t: bool(t[0] > 2.0**17), *EVERY_STEP)])
