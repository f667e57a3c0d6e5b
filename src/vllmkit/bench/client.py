"""One streamed request over the OpenAI completions API, timed the way vLLM's benchmark times it.

httpx (async) + httpx-sse do the HTTP and the event-stream parsing. Timing follows
vllm/benchmarks/lib/endpoint_request_func.py (`async_request_openai_completions`, 0.32): the clock
(time.perf_counter) starts just before the request is sent; every event that carries a choice is a
token event (its text may be empty, e.g. an incomplete multi-byte character); TTFT is the first one,
ITL the gaps between them, e2e the last one. Token counts come from the final `usage` event
(stream_options.include_usage), never from the text.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
from httpx_sse import SSEError, aconnect_sse

from vllmkit.bench.models import RequestSample
from vllmkit.bench.stats import tpot_s

# Failure reasons that mean "the server is not there any more" (checked against /health).
CONNECTION_REASONS = frozenset({"connect", "disconnected"})


def error_message(body: bytes) -> str:
    """The first line of an OpenAI-style error body ({"error": {"message": ...}} or {"message": ...})."""
    text = body.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text)
    except ValueError:
        return text.strip().splitlines()[0][:300] if text.strip() else ""
    err: Any = doc.get("error", doc) if isinstance(doc, dict) else doc
    if isinstance(err, dict):
        err = err.get("message") or err
    lines = str(err).strip().splitlines()
    return lines[0][:300] if lines else ""


def completion_body(model: str, prompt: list[int] | str, max_tokens: int, *, ignore_eos: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if ignore_eos:
        # vLLM sampling extension: generate exactly max_tokens (vllm/sampling_params.py ignore_eos)
        body["ignore_eos"] = True
    return body


async def stream_completion(
    client: httpx.AsyncClient,
    body: dict[str, Any],
    *,
    origin: float,
    sink: list[RequestSample],
    path: str = "/v1/completions",
) -> RequestSample:
    """Send one request and time it; the sample is appended to `sink` exactly once, whatever happens.
    Request failures become ok=False with a reason; a cancelled request (Ctrl-C, sweep stopped) is
    recorded as "interrupted" before the cancellation propagates - nothing is dropped silently."""
    requested = int(body.get("max_tokens") or 0) or None
    start = time.perf_counter()
    sample = RequestSample(start_s=start - origin, ok=False, requested_output_tokens=requested)
    try:
        return await _stream(client, body, path, start, sample)
    except asyncio.CancelledError:
        sample.ok, sample.error, sample.detail = False, "interrupted", "stopped before the answer ended"
        raise
    finally:
        sink.append(sample)


async def _stream(
    client: httpx.AsyncClient, body: dict[str, Any], path: str, start: float, sample: RequestSample
) -> RequestSample:
    first: float | None = None
    last: float | None = None
    chunks = 0
    usage: dict[str, Any] | None = None
    done = False
    try:
        async with aconnect_sse(client, "POST", path, json=body) as source:
            resp = source.response
            if resp.status_code != 200:
                raw = await resp.aread()
                sample.error = f"http-{resp.status_code}"
                sample.detail = error_message(raw) or resp.reason_phrase
                return sample
            async for event in source.aiter_sse():
                # Read on to the end of the body after [DONE] (only the chunked terminator follows)
                # instead of breaking out: a response left unfinished makes httpx close its
                # connection, so every request would pay a new TCP connection (and the server its
                # teardown) inside the timed window, while vLLM's benchmark (aiohttp) keeps one
                # alive connection per user.
                if done:
                    continue
                if event.data.strip() == "[DONE]":
                    done = True
                    continue
                try:
                    data = json.loads(event.data)
                except ValueError:
                    sample.error, sample.detail = "bad-event", event.data[:120]
                    return sample
                if not isinstance(data, dict):
                    continue
                if data.get("error"):  # vLLM streams engine errors as a data event
                    err = data["error"]
                    sample.error = "stream-error"
                    sample.detail = str(err.get("message") if isinstance(err, dict) else err)[:300]
                    return sample
                if data.get("choices"):
                    now = time.perf_counter()
                    if first is None:
                        first = now
                    else:
                        sample.itl_s.append(now - (last or now))
                    last = now
                    chunks += 1
                if data.get("usage"):
                    usage = data["usage"]
    except httpx.ConnectError as exc:
        sample.error, sample.detail = "connect", str(exc)[:200]
        return sample
    except httpx.TimeoutException:
        if not done:  # after [DONE] the answer is complete, whatever happens to the rest of the body
            sample.error, sample.detail = "timeout", "no answer within the request timeout"
            return sample
    except SSEError as exc:
        sample.error, sample.detail = "not-sse", str(exc)[:200]
        return sample
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
        if not done:
            sample.error, sample.detail = "disconnected", (str(exc) or type(exc).__name__)[:200]
            return sample
    except httpx.HTTPError as exc:
        sample.error, sample.detail = "http-error", (str(exc) or type(exc).__name__)[:200]
        return sample
    if first is None:
        sample.error, sample.detail = ("no-tokens" if done else "disconnected"), "the stream carried no token"
        return sample
    if not done:
        sample.error, sample.detail = "disconnected", "the stream ended without [DONE]"
        return sample
    sample.ok = True
    sample.ttft_s = first - start
    sample.e2e_s = (last or first) - start
    if usage is not None and usage.get("completion_tokens") is not None:
        sample.output_tokens = int(usage["completion_tokens"])
        if usage.get("prompt_tokens") is not None:
            sample.input_tokens = int(usage["prompt_tokens"])
    else:
        sample.output_tokens, sample.tokens_from = chunks, "chunks"
    sample.tpot_s = tpot_s(sample.e2e_s, sample.ttft_s, sample.output_tokens)
    return sample


def make_client(url: str, api_key: str | None, *, timeout_s: float, connections: int) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.AsyncClient(
        base_url=url.rstrip("/"),
        headers=headers,
        # connect/write/pool bounded; read = the longest silence allowed between two events
        timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
        # no cap on connections: with Poisson / inf arrivals a capped pool would queue requests in the
        # client, and that wait would count as server TTFT (closed loops never exceed their N anyway)
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=connections),
        trust_env=False,  # a benchmark must not go through HTTP(S)_PROXY
    )
