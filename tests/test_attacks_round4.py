"""Hostile submissions, fourth round: channels between the calls of one submission that
outlive every process of a call (the sandbox's shared network and PID namespaces), and
gradients made by hand that a reading of the source does not see (written from a helper
function, through .data, by a hook, before backward(), or handed to backward() as its
upstream gradient) or that a patched torch.Tensor would forge to the sandbox's encoder.

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


def test_a_gradient_assigned_in_a_helper_function_is_found_made_by_hand(autograd_basics):
    g = _full_marks_by_hand(autograd_basics, "grad_assigned_in_a_helper")
    assert g.report.score < g.report.max_score, g.report.render()
    assert any("assigned by hand" in (t.hint or "") for t in g.report.tests), g.report.render()


def test_backward_of_a_hand_made_gradient_earns_no_gradient_points(autograd_basics):
    g = _full_marks_by_hand(autograd_basics, "backward_of_a_hand_made_gradient")
    assert g.report.score < g.report.max_score, g.report.render()


def test_a_patched_grad_attribute_does_not_forge_the_gradient_autograd_left(autograd_basics):
    g = _full_marks_by_hand(autograd_basics, "grad_property_patched")
    assert g.report.score < g.report.max_score, g.report.render()


@pytest.mark.parametrize("name", ["grad_replaced_by_a_hook", "grad_written_through_data", "grad_written_before_backward"])
def test_a_gradient_autograd_did_not_make_is_found_made_by_hand(autograd_basics, name):
    g = _full_marks_by_hand(autograd_basics, name)
    assert g.report.score < g.report.max_score, g.report.render()
    assert any("assigned by hand" in (t.hint or "") for t in g.report.tests), g.report.render()


def test_backward_through_a_graph_of_a_hand_made_upstream_gradient_earns_no_gradient_points(autograd_basics):
    g = _full_marks_by_hand(autograd_basics, "backward_of_a_copy_with_a_hand_made_gradient")
    assert g.report.score < g.report.max_score, g.report.render()


def test_a_patched_detach_does_not_forge_the_values_the_sandbox_sends(autograd_basics):
    g = _full_marks_by_hand(autograd_basics, "detach_patched_to_forge_grad")
    assert g.report.score < g.report.max_score, g.report.render()
