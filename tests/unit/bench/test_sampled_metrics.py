"""bench parses only the /metrics lines it needs: on a real vLLM page (tests/data/metrics/cpu-0.32.txt,
captured from the vLLM CPU build by the logs helper) that gives the same snapshot as the whole page."""

from __future__ import annotations

from pathlib import Path

from vllmkit.bench.loadgen import sampled_lines
from vllmkit.doctor.metrics import parse_prometheus, snapshot

PAGE = Path(__file__).resolve().parents[2] / "data" / "metrics" / "cpu-0.32.txt"


def test_filtered_page_gives_the_same_snapshot() -> None:
    text = PAGE.read_text()
    full, part = snapshot(parse_prometheus(text)), snapshot(parse_prometheus(sampled_lines(text)))
    for field in ("kv_cache_usage", "running", "waiting", "preemptions", "prefix_cache_queries", "prefix_cache_hits"):
        assert getattr(part, field) == getattr(full, field), field
    assert full.kv_cache_usage is not None and full.preemptions is not None
    assert len(sampled_lines(text).splitlines()) < len(text.splitlines()) / 10
