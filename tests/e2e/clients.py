"""Clients the e2e tests drive a real vLLM server with."""

from __future__ import annotations

import json
import threading
import time

import httpx


def stream_at_once(url: str, model: str, prompts: list[list[int]], max_tokens: int, *,
                   timeout: float = 600.0) -> list[dict[str, float]]:
    """Send every prompt (token ids) as a streaming completion of exactly `max_tokens` tokens (ignore_eos, greedy), all
    at the same moment (a barrier), and return for each when it was sent ("start"), when its first token came
    ("first"), when its stream ended ("end"), how many chunks with text it carried ("chunks") and how many tokens the
    server says it generated ("tokens", from the usage chunk: a chunk may carry several tokens when the client reads
    more slowly than the engine makes them, so chunks are not a token count)."""
    times: list[dict[str, float]] = [{} for _ in prompts]
    start = threading.Barrier(len(prompts))

    def one(i: int) -> None:
        body = {"model": model, "prompt": prompts[i], "max_tokens": max_tokens, "ignore_eos": True,
                "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True}}
        with httpx.Client(timeout=timeout) as client:
            start.wait()
            t0 = time.monotonic()
            chunks = 0
            with client.stream("POST", url + "/v1/completions", json=body) as r:
                r.raise_for_status()
                for line in r.iter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    chunk = json.loads(line[6:])
                    assert "choices" in chunk, chunk  # an error object in the stream
                    if chunk.get("usage"):
                        times[i]["tokens"] = chunk["usage"]["completion_tokens"]
                    if not chunk["choices"]:
                        continue  # the usage chunk
                    if chunk["choices"][0].get("text") is not None and "first" not in times[i]:
                        times[i]["first"] = time.monotonic()
                    chunks += 1
            times[i].update(start=t0, end=time.monotonic(), chunks=chunks)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=timeout)
    return times
