"""The API's answers are declared once (grader.api.answers): the document's response schemas
are the models', and an answer a view builds wrongly fails where it is built."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from grader.api import answers
from grader.api.openapi import document

COMMENT = dict(id=1, body="look at line 3", line=3, author="API key gk_abc", created_at="2026-12-10T23:59:00+09:00")


def test_the_documents_response_schemas_are_the_models():
    schemas = document()["components"]["schemas"]
    for model in answers.RESPONSES:
        schema = schemas[model.__name__]
        assert list(schema["properties"]) == list(model.model_fields), model.__name__
        required = [name for name, field in model.model_fields.items() if field.is_required()]
        assert schema.get("required", []) == required, model.__name__
        # Open, so that a field added later breaks no client; a comment promised closed.
        assert ("additionalProperties" in schema) == (model is answers.Comment), model.__name__
    assert schemas["Comment"]["additionalProperties"] is False
    # Null where the model allows it, as 3.1 writes it; absent, never null, where it may be left out.
    submission = schemas["Submission"]["properties"]
    assert submission["score"]["type"] == ["number", "null"]
    assert submission["late"] == {"type": "boolean", "description": submission["late"]["description"]}
    assert schemas["Exercise"]["properties"]["slug"]["examples"] == ["autograd-basics"]


@pytest.mark.parametrize("wrong, says", [
    (dict(COMMENT, athor="x"), "athor"),                                    # misspelt: an extra field, one missing
    (dict(COMMENT, id="1"), "id"),                                          # not coerced
    (dict(COMMENT, created_at="2026-12-10T23:59:00"), "UTC offset"),        # a date-time without its zone
    (dict(COMMENT, line=0), "line"),
])
def test_an_answer_built_wrongly_fails_where_it_is_built(wrong, says):
    with pytest.raises(ValidationError, match=says):
        answers.Comment(**wrong)


def test_what_a_view_leaves_out_is_left_out_and_null_is_sent_where_given(app):
    made = answers.SubmissionAccepted(id="a" * 32, url="http://grader.test/api/v1/submissions/" + "a" * 32,
                                      status="queued")
    with app.app_context():
        assert answers.reply(made, 202).get_json() == {"id": "a" * 32, "url": made.url, "status": "queued"}
        assert answers.reply(answers.Comment(**dict(COMMENT, line=None))).get_json()["line"] is None
    with pytest.raises(ValidationError):
        answers.SubmissionAccepted(id="a" * 32, url=made.url, status="queued", practice=None)
