"""The API's request bodies (grader.api.bodies): what each model takes and refuses, with which
code and words, and that the document's request schemas are the models' own."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from grader.api import bodies
from grader.api.openapi import document
from grader.refusals import Refused

SOURCE = "def f(x):\n    return x\n"


def refused(model, body, **context) -> tuple[str, str]:
    with pytest.raises(Refused) as caught:
        bodies.parse(model, body, **context)
    return caught.value.code, caught.value.message


@pytest.mark.parametrize("model, body, code, says", [
    (bodies.NewSubmission, {"exercise": "e", "user": "u", "source": SOURCE, "lang": "py", "x": 1}, "unknown_field",
     "unknown fields ['lang', 'x']"),
    (bodies.NewSubmission, {"source": SOURCE}, "missing_field", "['user', 'exercise']"),
    (bodies.NewSubmission, {"exercise": None, "user": "u", "source": SOURCE}, "wrong_type",
     "'exercise' must be a string, not null"),
    (bodies.NewSubmission, {"assignment": "3", "user": "u", "source": SOURCE}, "wrong_type",
     "'assignment' must be a whole number"),
    (bodies.NewSubmission, {"exercise": "e", "user": "u", "source": SOURCE, "practice": 1}, "wrong_type",
     "'practice' must be true or false"),
    (bodies.NewSubmission, {"exercise": "e", "user": "u\x7f", "source": SOURCE}, "invalid_user", "printable"),
    (bodies.NewSubmission, {"exercise": "e", "user": "u", "source": "x = '\ud800'"}, "source_not_utf8",
     "surrogate"),
    (bodies.NewCourse, {"title": "T", "code": 101}, "invalid_course", "'code' must be a string"),
    (bodies.NewCourse, {"title": "T" * 501, "code": "C"}, "invalid_course", "'title': must have at most 500"),
    (bodies.NewAssignment, {"exercise": "e", "due_at": "2026-12-10T23:59+09:00", "attempts": "many"},
     "invalid_assignment", "'attempts' must be a whole number, not a string"),
    (bodies.NewAssignment, {"exercise": "e", "due_at": "2026-12-10T23:59+09:00", "counts": "first"},
     "invalid_assignment", "'counts': must be 'best' or 'latest'"),
    (bodies.NewAssignment, {"exercise": "e", "due_at": "2026-12-10T23:59+09:00", "late_percent": 101},
     "invalid_assignment", "'late_percent'"),
    (bodies.Members, {"members": {"user": "ada"}}, "wrong_type", "'members' must be an array"),
    (bodies.Members, {"members": [{"user": "ada"}, "bo"]}, "invalid_roster", "members[1]"),
    (bodies.Members, {"members": [{"user": "ada", "role": 1}]}, "invalid_roster", "role must be a string"),
    (bodies.NewExtension, {"user": 7, "reason": "ill"}, "wrong_type", "'user' must be a string, not a number"),
    (bodies.NewExtension, {"user": " ", "reason": "ill"}, "invalid_user", "must not be empty"),
    (bodies.NewExtension, {"user": "ada", "reason": "ill", "extra_minutes": -5}, "invalid_assignment",
     "'extra_minutes'"),
    (bodies.NewOverride, {"user": "ada", "reason": "r", "score": -1}, "invalid_assignment", "'score'"),
    (bodies.NewComment, {"body": "x", "line": 2.0}, "wrong_type", "'line' must be a whole number"),
    (bodies.NewWebhook, {"url": "https://example.org/" + "a" * 2000}, "invalid_url", "at most 2000"),
])
def test_a_body_is_refused_with_its_code_and_the_field_named(model, body, code, says):
    answered, message = refused(model, body)
    assert answered == code and says in message, message


def test_a_personal_token_leaves_out_user_and_a_key_needs_it():
    body = {"exercise": "e", "source": SOURCE}
    assert bodies.parse(bodies.NewSubmission, body, personal=True).user is None
    assert refused(bodies.NewSubmission, body) == ("missing_field", "missing required fields ['user']")
    assert refused(bodies.NewSubmission, {**body, "user": "u"}, personal=True)[0] == "invalid_body"


def test_numbers_may_come_as_strings_and_empty_strings_are_absent_where_the_domain_reads_them_so():
    taken = bodies.parse(bodies.NewAssignment, {"exercise": "e", "due_at": "2026-12-10T23:59+09:00",
                                                "attempts": "3", "late_percent": "12.5", "cooldown_minutes": "",
                                                "late_policy": ""})
    assert (taken.attempts, taken.late_percent, taken.cooldown_minutes, taken.late_policy) == (3, 12.5, None, None)
    assert bodies.parse(bodies.NewOverride, {"user": "ada", "score": "4.5", "reason": "r"}).score == 4.5


def test_the_documents_request_schemas_are_the_models_and_take_their_examples():
    doc = document()
    schemas = doc["components"]["schemas"]
    for name in ("NewSubmission", "NewComment", "NewWebhook", "NewCourse", "Members", "NewAssignment",
                 "NewExtension", "NewOverride"):
        model = getattr(bodies, name)
        assert list(schemas[name]["properties"]) == list(model.model_fields), name
        assert schemas[name]["additionalProperties"] is False
    example = doc["paths"]["/submissions"]["post"]["requestBody"]["content"]["application/json"]["example"]
    Draft202012Validator(schemas["NewSubmission"]).validate(example)
    assert bodies.parse(bodies.NewSubmission, example).exercise == "autograd-basics"
    assert schemas["Members"]["properties"]["members"]["items"] == {"$ref": "#/components/schemas/Member"}
    assert "nullable" not in str(doc) and doc["openapi"] == "3.1.0"
