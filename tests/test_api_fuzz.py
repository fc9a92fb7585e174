"""/api/v1 fuzzed by schemathesis from the document the app serves (tests/api_fuzzing.py), on
SQLite and a real Redis, where submissions stay queued: every operation, with a key holding
every scope, keys lacking the operation's, no key and malformed Authorization headers. No
5xx, nothing the document does not allow, no refused write that stored anything.

Bounded and deterministic (a fixed number of examples, derandomized); bench/api_fuzz.py runs
the same with many more. API_FUZZ_EXAMPLES scales the number of examples.
"""

from __future__ import annotations

import os

import pytest

from tests.api_fuzzing import BOUNDED, build_world, fuzz


@pytest.mark.slow
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_every_operation_keeps_to_the_document_under_fuzzing(app, client, database_url):
    # Limits high enough that the fuzzing reaches the views; tests/test_api_contract.py has the 429s.
    app.config.update(SUBMISSION_RATE_LIMIT="100000/minute", PRACTICE_RATE_LIMIT="100000/minute",
                      API_KEY_RATE_LIMIT="100000/minute", API_NEW_USERS_PER_HOUR=100000)
    world = build_world(client, database_url)
    scale = float(os.environ.get("API_FUZZ_EXAMPLES_SCALE", "1"))
    examples = {calling: max(1, round(n * scale)) for calling, n in BOUNDED.items()}
    timings: dict[str, float] = {}
    findings = fuzz(app, database_url, world, examples=examples, timings=timings,
                    derandomize=os.environ.get("API_FUZZ_RANDOM") is None, only=os.environ.get("API_FUZZ_ONLY"))
    report = "\n".join(map(str, findings))
    slowest = sorted(timings.items(), key=lambda item: -item[1])[:8]
    print("slowest operations:", ", ".join(f"{name} {seconds:.1f}s" for name, seconds in slowest))
    if os.environ.get("API_FUZZ_REPORT"):
        with open(os.environ["API_FUZZ_REPORT"], "w", encoding="utf-8") as out:
            out.write(report + "\n")
    assert not findings, f"{len(findings)} findings:\n{report}"
