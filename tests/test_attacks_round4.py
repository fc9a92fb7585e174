"""Hostile submissions, fourth round: channels between the calls of one submission that
outlive every process of a call (the sandbox's shared network and PID namespaces), and
gradients made by hand that the by-hand check does not see.

Graded like tests/test_attacks.py, with its helpers. A test marked xfail(strict=True)
keeps a weakness the engine still has; its reason says what the attack got.
"""

from __future__ import annotations

import pytest

from grader import catalog
from tests.test_attacks import (  # noqa: F401  (_fresh_sandbox_per_module: a fixture, used by being here)
    ATTACKS, _fresh_sandbox_per_module, assert_contained, grade_attack, graded, leaks, message,
)

# ------------------------------------------------------------------ hidden inputs carried across calls


def test_hidden_inputs_cannot_cross_to_a_visible_call_through_time_wait_sockets(target):
    g = graded(target, "hidden_input_in_time_wait_ports")
    assert "TIME-WAIT FOUND:" in g.report.output, g.report.output  # the visible call did look
    assert g.report.status == "graded", g.report.render()
    assert leaks(g.report, g.source) == [], message(g.report, visible=True)
    assert_contained(g, target)


def test_nothing_left_on_the_loopback_reaches_the_next_submission(target, grade_file):
    graded(target, "hidden_input_in_time_wait_ports")
    after = grade_file(ATTACKS / "look_for_time_wait_ports.py")
    assert "LEFT ON THE LOOPBACK:" in after.output, after.output
    assert leaks(after, (ATTACKS / "look_for_time_wait_ports.py").read_text()) == [], after.render()


def test_hidden_inputs_cannot_cross_to_a_visible_call_through_the_pid_counter(target):
    g = graded(target, "hidden_input_in_the_pid_counter")
    assert "PID-COUNTER FOUND:" in g.report.output, g.report.output
    assert g.report.status == "graded", g.report.render()
    assert leaks(g.report, g.source) == [], message(g.report, visible=True)
    assert_contained(g, target)


def test_hidden_inputs_cannot_cross_to_a_visible_call_through_the_pids_proc_names(target):
    g = graded(target, "hidden_input_in_outer_pids")
    assert "OUTER-PID FOUND:" in g.report.output, g.report.output
    assert g.report.status == "graded", g.report.render()
    assert leaks(g.report, g.source) == [], message(g.report, visible=True)
    assert_contained(g, target)


# ------------------------------------------------------------------ gradients made by hand


@pytest.fixture(scope="module")
def autograd_basics():
    return catalog.find("autograd-basics")


def _full_marks_by_hand(exercise, name: str):
    g = grade_attack(exercise, name)
    assert g.report.status == "graded", g.report.render()
    assert g.stray == []
    return g


@pytest.mark.xfail(strict=True, reason="6 of 6 points: x.grad = 4x assigned in a helper function passes "
                   "the by-hand check, which reads grad_2xtx's body only")
def test_a_gradient_assigned_in_a_helper_function_is_found_made_by_hand(autograd_basics):
    g = _full_marks_by_hand(autograd_basics, "grad_assigned_in_a_helper")
    assert g.report.score < g.report.max_score, g.report.render()
    assert any("assigned by hand" in (t.hint or "") for t in g.report.tests), g.report.render()


@pytest.mark.xfail(strict=True, reason="6 of 6 points: x.backward(4 * x.detach()) puts a hand-made gradient "
                   "into x.grad through backward() without building y")
def test_backward_of_a_hand_made_gradient_earns_no_gradient_points(autograd_basics):
    g = _full_marks_by_hand(autograd_basics, "backward_of_a_hand_made_gradient")
    assert g.report.score < g.report.max_score, g.report.render()


@pytest.mark.xfail(strict=True, reason="6 of 6 points: Tensor.grad replaced by a property at import answers "
                   "4x to the sandbox's encoder; no backward(), no .grad written")
def test_a_patched_grad_attribute_does_not_forge_the_gradient_autograd_left(autograd_basics):
    g = _full_marks_by_hand(autograd_basics, "grad_property_patched")
    assert g.report.score < g.report.max_score, g.report.render()
