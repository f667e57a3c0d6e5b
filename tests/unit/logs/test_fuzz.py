"""Random and mangled input never crashes the reader, fed whole or line by line."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllmkit.logs import LogFacts, LogReader, parse_log


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(max_size=300), max_size=30))
def test_random_lines(lines: list[str]) -> None:
    reader = LogReader()
    for line in lines:
        reader.feed(line)
    assert isinstance(reader.facts, LogFacts)
    reader.facts.model_dump_json()
    assert parse_log("\n".join(lines)).model_dump_json()
