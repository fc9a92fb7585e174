import torch

from grader.testing import Feedback, Hint, expect_true, hints_for_errors, points, visible

EXPECTED = {
    "x": {"is_leaf": True, "requires_grad": True, "grad_fn": None},
    "a": {"is_leaf": False, "requires_grad": True, "grad_fn": "AddBackward0"},
    "b": {"is_leaf": False, "requires_grad": True, "grad_fn": "MulBackward0"},
}

A_DICT = Hint('Return {"x": facts, "a": facts, "b": facts}, where each facts is a dict with the keys '
              '"is_leaf", "requires_grad" and "grad_fn".',
              '{"x": facts, "a": facts, "b": facts}를 반환하세요. 각 facts는 "is_leaf", "requires_grad", '
              '"grad_fn" 키를 가진 dict입니다.')

OBJECT = Hint("grad_fn objects cannot be returned: report the class name, type(t.grad_fn).__name__ "
              "(a string such as 'AddBackward0'), or None when t.grad_fn is None.",
              "grad_fn 객체는 반환할 수 없습니다. 클래스 이름인 type(t.grad_fn).__name__('AddBackward0' 같은 "
              "문자열)을 반환하고, t.grad_fn이 None이면 None을 반환하세요.")

REPR = Hint("grad_fn was reported as the object's printed form ('<AddBackward0 object at 0x...>'), which "
            "changes from run to run. Report only the class name: type(t.grad_fn).__name__.",
            "grad_fn을 객체를 출력한 문자열('<AddBackward0 object at 0x...>')로 반환했습니다. 이 문자열은 "
            "실행할 때마다 달라집니다. 클래스 이름만 반환하세요: type(t.grad_fn).__name__.")

NONE_TEXT = Hint("The grad_fn of x was reported as the string 'None'. x is a leaf created by you, not by "
                 "an operation, so it has no grad_fn: report the value None itself, not str(None).",
                 "x의 grad_fn을 문자열 'None'으로 반환했습니다. x는 연산으로 만들어진 것이 아닌 리프라서 "
                 "grad_fn이 없습니다. str(None)이 아니라 값 None 자체를 반환하세요.")

CUT_LEAF = Hint("a came out as a leaf of its own that requires grad but has no grad_fn: it was made anew from "
                "the values of 2 * x + 10 (detach().requires_grad_(), or torch.tensor(..., requires_grad=True)), "
                "cut off from x. A tensor computed from x by operations, like a = 2 * x + 10, is not a leaf and "
                "has a grad_fn.",
                "a가 grad_fn 없이 기울기를 요구하는 별도의 리프로 나왔습니다. 2 * x + 10의 값으로 새로 만들어져"
                "(detach().requires_grad_() 또는 torch.tensor(..., requires_grad=True)) x에서 떼어 냈습니다. "
                "a = 2 * x + 10처럼 x로부터 연산으로 계산한 텐서는 리프가 아니고 grad_fn이 있습니다.")

NO_HISTORY = Hint("a came out with no history: a leaf that does not require grad and has no grad_fn, although "
                  "x requires grad. Autograd recorded no operation from x to a. Compute a = 2 * x + 10 and "
                  "b = 3 * a from the x you were given, where autograd records operations.",
                  "x는 기울기를 요구하는데 a가 이력 없이 나왔습니다. 기울기를 요구하지 않고 grad_fn도 "
                  "없는 리프입니다. autograd가 x에서 a까지 어떤 연산도 기록하지 않았습니다. 받은 x로 "
                  "autograd가 연산을 기록하는 곳에서 a = 2 * x + 10과 b = 3 * a를 계산하세요.")

LAST_OP = Hint("grad_fn names the last operation that produced the tensor: a = 2 * x + 10 ends with an "
               "addition (AddBackward0) and b = 3 * a with a multiplication (MulBackward0). Read it from "
               "the tensors: type(t.grad_fn).__name__.",
               "grad_fn은 텐서를 만든 마지막 연산의 이름입니다. a = 2 * x + 10은 덧셈(AddBackward0)으로, "
               "b = 3 * a는 곱셈(MulBackward0)으로 끝납니다. 텐서에서 직접 읽으세요: "
               "type(t.grad_fn).__name__.")

LEAF_FACTS = Hint("Only x, which you did not compute from anything, is a leaf; a and b are computed from x, "
                  "so they are not leaves, and they require grad because x does. Read each fact from the "
                  "tensor itself: t.is_leaf, t.requires_grad.",
                  "아무것에서도 계산되지 않은 x만 리프입니다. a와 b는 x로부터 계산되었으므로 리프가 아니고, "
                  "x가 기울기를 요구하므로 a와 b도 기울기를 요구합니다. 각 값을 텐서에서 직접 읽으세요: "
                  "t.is_leaf, t.requires_grad.")

COPIED_X = Hint("The x you reported was made inside graph_facts from the x you were given (x.clone() or another "
                "operation on it), so it has a grad_fn and is no leaf. Report the facts of the x you were given: "
                "reading t.is_leaf or t.grad_fn does not change it.",
                "보고한 x는 graph_facts 안에서 받은 x로부터 만든 텐서(x.clone() 등)라서 grad_fn이 있고 리프가 "
                "아닙니다. 받은 x의 값을 보고하세요. t.is_leaf나 t.grad_fn을 읽어도 x는 바뀌지 않습니다.")

ERRORS = {"Backward0 cannot be graded": OBJECT, "AccumulateGrad cannot be graded": OBJECT}


def facts_of(call):
    value = call.value
    if not isinstance(value, dict) or not all(
            isinstance(value.get(name), dict) and set(EXPECTED[name]) <= set(value[name]) for name in EXPECTED):
        raise Feedback('graph_facts(x) should return {"x": ..., "a": ..., "b": ...}, each a dict with the keys '
                       '"is_leaf", "requires_grad" and "grad_fn"', A_DICT,
                       'graph_facts(x)는 {"x": ..., "a": ..., "b": ...}를 반환해야 하고, 각 값은 "is_leaf", '
                       '"requires_grad", "grad_fn" 키를 가진 dict여야 합니다')
    return value


def hint_for(name, key, got, facts):
    made = facts["x"].get("grad_fn")
    if name == "x" and isinstance(made, str) and made.endswith("Backward0"):
        return COPIED_X  # the facts of a tensor computed from x: the student's own copy of it
    if key == "grad_fn":
        if isinstance(got, str) and got.startswith("<") and "object at" in got:
            return REPR
        if got == "None":
            return NONE_TEXT
    if name == "a" and facts["a"].get("is_leaf") is True and facts["a"].get("grad_fn") is None:
        # A leaf that requires grad was made one on purpose; one that does not has no history at
        # all (made under no_grad, detached, rebuilt from its values): look-alikes, told apart here.
        requires = facts["a"].get("requires_grad")
        return CUT_LEAF if requires is True else NO_HISTORY if requires is False else LEAF_FACTS
    if key == "grad_fn" and isinstance(got, str) and got.endswith("Backward0"):
        return LAST_OP
    return LEAF_FACTS


def check(facts, names):
    for name in names:
        for key, want in EXPECTED[name].items():
            got = facts[name][key]
            same = got is want if isinstance(want, bool) or want is None else got == want
            expect_true(same, f'graph_facts(x)["{name}"]["{key}"] is {got!r}; expected {want!r}',
                        hint=hint_for(name, key, got, facts),
                        message_ko=f'graph_facts(x)["{name}"]["{key}"] 값이 {got!r}입니다. 기대값: {want!r}')


def run(student, x):
    with hints_for_errors(ERRORS):
        return student.call("graph_facts", x)


@visible
@points(1)
def test_facts_of_x(student):
    """x is a leaf that requires grad and has no grad_fn

    ko: x는 기울기를 요구하는 리프이고 grad_fn이 없음
    """
    x = torch.tensor([0.5, -2.0, 3.0], requires_grad=True)
    check(facts_of(run(student, x)), ["x"])


@points(2)
def test_facts_of_a_and_b(student):
    """a and b are not leaves; their grad_fn are AddBackward0 and MulBackward0

    ko: a와 b는 리프가 아니고 grad_fn은 AddBackward0과 MulBackward0
    """
    x = torch.randn(2, 2, dtype=torch.float64).requires_grad_()
    check(facts_of(run(student, x)), ["a", "b"])
