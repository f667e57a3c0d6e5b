"""`vllmkit bench`: load-test a live OpenAI-compatible server (vLLM first) and store what it measured.

Rooms: `workload` (prompts of exact token lengths), `client` (one streamed request, timed),
`loadgen` (closed loop / Poisson arrivals, /metrics sampling), `stats` (percentiles, goodput, CIs),
`compare` (noise-aware A/B), `store` (PerfRecord adapter), `service` (the sweep, faults, target).
"""
