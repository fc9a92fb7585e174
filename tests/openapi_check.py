"""Every answer of /api/v1 a test receives is held to the OpenAPI document.

tests/conftest.py wraps Flask's test client with `hold_to_document`: a response whose status the
document does not list for its operation, or whose JSON body breaks the schema the document
gives for that status, fails the test that got it. So a view that drifts from its documented
contract (a renamed field, a new error code, a status nobody wrote down) cannot pass
unnoticed, whichever test happens to exercise it.

The document is OpenAPI 3.1, whose schemas are JSON Schema 2020-12.
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache

from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

PREFIX = "/api/v1"
BASE = "urn:grader-api"


class Drift(AssertionError):
    """An API response that its operation's documentation does not allow."""


def _for_validation(node):
    """The document as jsonschema validates it: examples left out, and refs absolute, so that
    an inline schema's refs resolve too. (It is OpenAPI 3.1, with no 3.0 ``nullable`` left:
    grader.api.openapi writes those as type lists.)"""
    if isinstance(node, dict):
        assert "nullable" not in node, "a 3.0 nullable in the 3.1 document"
        node = {key: _for_validation(value) for key, value in node.items() if key != "example"}
        if isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/"):
            node["$ref"] = BASE + node["$ref"]
        return node
    if isinstance(node, list):
        return [_for_validation(item) for item in node]
    return node


@lru_cache(maxsize=1)
def _contract():
    from grader.api.openapi import document

    doc = _for_validation(copy.deepcopy(document()))
    registry = Registry().with_resource(BASE, Resource(contents=doc, specification=DRAFT202012))
    routes = []
    for template, operations in doc["paths"].items():
        pattern = re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template))
        routes.append((re.compile(f"^{pattern}$"), template, operations))
    # a literal path wins over a template that also matches it (/courses/mine over /courses/{id})
    routes.sort(key=lambda route: route[1].count("{"))
    return doc, registry, routes


def _resolve(doc: dict, node: dict) -> dict:
    while "$ref" in node:
        target = doc
        for part in node["$ref"].removeprefix(BASE).removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def hold_to_document(method: str, path: str, response) -> None:
    """Raise Drift when the response to `method path` is not what the document allows."""
    if not path.startswith(PREFIX + "/"):
        return
    doc, registry, routes = _contract()
    local = path[len(PREFIX):].split("?", 1)[0]
    found = next(((template, ops) for pattern, template, ops in routes if pattern.match(local)), None)
    if found is None:
        if response.status_code == 404:
            # A path the API does not have: no operation's, but the document's NotFound answer.
            return _hold_to(doc, registry, doc["components"]["responses"]["NotFound"], f"{method} {path}", response)
        raise Drift(f"{method} {path} answered {response.status_code}, but the document has no such path")
    template, operations = found
    operation = operations.get(method.lower())
    if operation is None:
        if response.status_code == 405:
            return _hold_to(doc, registry, doc["components"]["responses"]["MethodNotAllowed"],
                            f"{method} {template}", response)
        raise Drift(f"{method} {template} answered {response.status_code}, but the document has no {method} there")
    responses = operation.get("responses", {})
    status = str(response.status_code)
    documented = responses.get(status) or responses.get(f"{status[0]}XX") or responses.get("default")
    if documented is None:
        raise Drift(f"{method} {template} answered {status}, which the document does not list "
                    f"(it lists {', '.join(sorted(responses))}); body: {response.get_data(as_text=True)[:300]}")
    _hold_to(doc, registry, documented, f"{method} {template}", response)


def _hold_to(doc: dict, registry, documented: dict, where: str, response) -> None:
    """Raise Drift when the response is not the documented answer (its content type and body)."""
    documented = _resolve(doc, documented)
    status = str(response.status_code)
    method, _, template = where.partition(" ")
    content = documented.get("content", {})
    mimetype = response.mimetype or ""
    if not content:
        if response.status_code != 204 and mimetype == "application/json" and response.get_data():
            raise Drift(f"{method} {template} {status}: the document gives no body, but it sent JSON")
        return
    if mimetype not in content:
        raise Drift(f"{method} {template} {status}: sent {mimetype or 'no content type'}, "
                    f"the document gives {', '.join(content)}")
    schema = content[mimetype].get("schema")
    if schema is None or mimetype != "application/json":
        return
    try:
        body = json.loads(response.get_data(as_text=True))
    except ValueError as exc:
        raise Drift(f"{method} {template} {status}: the body is not JSON ({exc})") from None
    # Formats are held too: a date-time without its zone is not one (RFC 3339).
    validator = Draft202012Validator(schema, registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
    if errors:
        where = "; ".join(f"at {'/'.join(map(str, e.absolute_path)) or 'the top'}: {e.message[:200]}"
                          for e in errors[:5])
        raise Drift(f"{method} {template} {status}: the body breaks its schema: {where}")
