"""A client made from the OpenAPI document alone, as a generator would make one.

It knows nothing of /api/v1 but what the document says: each operation by its operationId (its
method, path and parameters), a request body's example, and the links a response names to the
next operation. It never builds a URL by hand: a path parameter is filled from the document's
template, a link's parameter from the response it points into. Each answer is handed to
``check`` (tests/openapi_check.py's hold_to_document in the tests) before it is returned.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from urllib.parse import quote, urlencode

METHODS = ("get", "put", "post", "delete", "patch")


class NotInDocument(LookupError):
    """What the client was asked for is not in the document (an operation, an example, a link)."""


@dataclass
class Answer:
    operation_id: str
    status: int
    headers: dict
    body: object  # the JSON value, or the raw bytes of any other content type


class Client:
    def __init__(self, document: dict, send, check=None, headers: dict | None = None):
        """``send(method, path, headers, data)`` makes the request and returns a response with
        status_code, headers, mimetype and get_data(); ``check(method, path, response)`` raises
        where the answer is not what the document allows."""
        self.document, self.send, self.check = document, send, check
        self.headers = dict(headers or {})
        self.base = document["servers"][0]["url"].rstrip("/")
        self.operations = {}
        for path, item in document["paths"].items():
            for method, operation in item.items():
                if method in METHODS:
                    self.operations[operation["operationId"]] = (method.upper(), path, operation)

    def example(self, operation_id: str) -> object:
        """A copy of the operation's JSON request body example, to start a request from."""
        content = self._operation(operation_id)[2].get("requestBody", {}).get("content", {})
        media = content.get("application/json", {})
        if "example" in media:
            return copy.deepcopy(media["example"])
        examples = media.get("examples") or {}
        if examples:
            return copy.deepcopy(next(iter(examples.values()))["value"])
        raise NotInDocument(f"{operation_id} has no JSON request body example")

    def call(self, operation_id: str, body: object = None, **parameters) -> Answer:
        method, template, operation = self._operation(operation_id)
        path, query = template, {}
        for parameter in operation.get("parameters", []):
            parameter = self._resolve(parameter)
            name, where = parameter["name"], parameter["in"]
            if name not in parameters:
                if parameter.get("required"):
                    raise TypeError(f"{operation_id} needs the {where} parameter {name!r}")
                continue
            value = parameters.pop(name)
            if where == "path":
                path = path.replace("{" + name + "}", quote(str(value), safe=""))
            elif where == "query":
                query[name] = value
        if parameters:
            raise TypeError(f"{operation_id} has no parameters {sorted(parameters)}")
        headers, data = dict(self.headers), None
        if body is not None:
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                raise NotInDocument(f"{operation_id} takes no JSON body")
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode("utf-8")
        url = self.base + path + ("?" + urlencode(query) if query else "")
        response = self.send(method, url, headers, data)
        if self.check is not None:
            self.check(method, url, response)
        if response.mimetype == "application/json":
            answer_body = json.loads(response.get_data(as_text=True))
        else:
            answer_body = response.get_data()
        return Answer(operation_id, response.status_code, dict(response.headers), answer_body)

    def follow(self, answer: Answer, link: str) -> Answer:
        """The operation a documented link of this answer names, its parameters taken from it."""
        _, _, operation = self._operation(answer.operation_id)
        documented = self._resolve(operation["responses"].get(str(answer.status), {}))
        target = documented.get("links", {}).get(link)
        if target is None:
            raise NotInDocument(f"{answer.operation_id}'s {answer.status} has no link {link!r}")
        target = self._resolve(target)
        values = {name: self._evaluate(expression, answer) for name, expression in target["parameters"].items()}
        return self.call(target["operationId"], **values)

    # ------------------------------------------------------------------ the document's own devices

    def _operation(self, operation_id: str):
        if operation_id not in self.operations:
            raise NotInDocument(f"the document has no operation {operation_id!r}")
        return self.operations[operation_id]

    def _resolve(self, node: dict) -> dict:
        while "$ref" in node:
            target = self.document
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            node = target
        return node

    @staticmethod
    def _evaluate(expression: str, answer: Answer):
        """An OpenAPI runtime expression: $response.body#/json/pointer, or $response.header.Name."""
        if expression.startswith("$response.body#"):
            value = answer.body
            for part in expression.removeprefix("$response.body#").split("/")[1:]:
                part = part.replace("~1", "/").replace("~0", "~")
                value = value[int(part)] if isinstance(value, list) else value[part]
            return value
        if expression.startswith("$response.header."):
            wanted = expression.removeprefix("$response.header.").lower()
            return next(v for k, v in answer.headers.items() if k.lower() == wanted)
        raise NotInDocument(f"a runtime expression this client does not read: {expression}")
