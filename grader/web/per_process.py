"""Work done once per process rather than once per app: a web process makes one app, but
the command line's commands and the tests make many, and two costs of making one grew with
the site's 110 routes and 60 templates.

- Werkzeug compiles two URL builders per route (Python code generated and compiled) when
  the route is added; a page asks ``url_for`` for a few of them. ``LazyRule`` compiles a
  builder the first time it builds a URL, the same code at a later moment.
- Jinja compiles a template for each app's environment; ``TEMPLATES`` keeps the compiled
  code by name and source checksum (Jinja's own bytecode cache protocol), so a second
  app of the same process loads it instead.
"""

from __future__ import annotations

import threading

from jinja2.bccache import Bucket, BytecodeCache
from werkzeug.routing import Rule


class LazyRule(Rule):
    def _compile_builder(self, append_unknown: bool = True):
        compiled = None

        def build(rule, *args, **kwargs):
            nonlocal compiled
            if compiled is None:  # two threads at once compile it twice: the same function
                compiled = Rule._compile_builder(rule, append_unknown).__get__(rule, None)
            return compiled(*args, **kwargs)

        return build


class _InMemory(BytecodeCache):
    def __init__(self):
        self._code: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def load_bytecode(self, bucket: Bucket) -> None:
        with self._lock:
            code = self._code.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)  # a stale checksum resets the bucket: compiled again

    def dump_bytecode(self, bucket: Bucket) -> None:
        code = bucket.bytecode_to_string()
        with self._lock:
            self._code[bucket.key] = code


TEMPLATES = _InMemory()
