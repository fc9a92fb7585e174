"""Work done once per process rather than once per app: a web process makes one app, but
the command line's commands and the tests make many, and two costs of making one grew with
the site's 110 routes and 60 templates.

- Werkzeug compiles two URL builders per route (Python code generated and compiled) when
  the route is added; a page asks ``url_for`` for a few of them. ``LazyRule`` compiles a
  builder the first time it builds a URL, the same code at a later moment.
- Werkzeug parses every route and adds it to the URL map's matcher (most of what making an
  app cost). ``SettledMap`` collects an app's routes, and once they are all added takes the
  parsed routes and matcher of an earlier app of the process with the same routes and
  options, if there is one; a route added later gives the app a map of its own first.
- Jinja compiles a template for each app's environment; ``TEMPLATES`` keeps the compiled
  code by name and source checksum (Jinja's own bytecode cache protocol), so a second
  app of the same process loads it instead.
"""

from __future__ import annotations

import threading

from jinja2.bccache import Bucket, BytecodeCache
from werkzeug.routing import Map, Rule
from werkzeug.routing.matcher import StateMachineMatcher


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


class SettledMap(Map):
    def __init__(self, *args, **kwargs):
        self._pending: list[Rule] | None = []
        self._order: list[Rule] = []  # every rule, in the order added: how a map is rebuilt
        self._shared = False
        super().__init__(*args, **kwargs)

    def add(self, rulefactory) -> None:
        if self._pending is not None:
            self._pending.extend(rulefactory.get_rules(self))
            self._remap = True
            return
        if self._shared:
            self._own()
        rules = list(rulefactory.get_rules(self))
        for rule in rules:
            super().add(rule)
        self._order.extend(rules)

    def update(self) -> None:
        self.settle()
        super().update()

    def settle(self) -> None:
        """Bind the routes added so far, or take an equal map's (see the module's docstring)."""
        if self._pending is None:
            return
        with _settling:
            pending, self._pending = self._pending, None
            key = (self._options(), tuple(_route(rule) for rule in pending))
            earlier = _settled.get(key)
            if earlier is not None:
                self._matcher, self._rules_by_endpoint, self._order = earlier
                self._shared, self._remap = True, False
                return
            for rule in pending:
                super().add(rule)
            self._order = pending
            super().update()
            self._shared = True  # the next app's too: neither may change it in place
            _settled[key] = (self._matcher, self._rules_by_endpoint, self._order)

    def _own(self) -> None:
        """Unbound copies of the shared rules, in a matcher of this map's alone."""
        shared = self._order
        self._matcher = StateMachineMatcher(self.merge_slashes)
        self._rules_by_endpoint, self._order, self._shared = {}, [], False
        for rule in shared:
            copy = rule.empty()
            copy.__dict__.update({k: v for k, v in vars(rule).items() if k not in vars(copy)})
            super().add(copy)
            self._order.append(copy)

    def _options(self) -> tuple:
        return (self.default_subdomain, self.strict_slashes, self.merge_slashes, self.redirect_defaults,
                self.host_matching, self.sort_parameters, self.sort_key, tuple(sorted(self.converters.items())))


def _route(rule: Rule) -> str:
    """Everything a map or an app reads of a rule before it is bound (functions by identity)."""
    return repr(sorted((k, sorted(v) if isinstance(v, (set, frozenset)) else v) for k, v in vars(rule).items()))


# The parsed routes of each set of routes and options made into an app: its matcher, its
# rules by endpoint and its rules in order.
_settled: dict[tuple, tuple] = {}
_settling = threading.Lock()

