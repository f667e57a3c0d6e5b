"""A fake OpenAI-compatible streaming server (real HTTP on 127.0.0.1) for bench's fast tests.

It speaks the subset vLLM serves that bench uses, in vLLM's shapes (vllm/entrypoints/openai, 0.32):
/health, /version, /v1/models (with max_model_len), /tokenize, /metrics (Prometheus text with the
vllm: names doctor reads) and streamed /v1/completions: one `data:` event per token
({"choices": [{"index": 0, "text": ...}]}), then a usage event with empty choices, then [DONE].

Its timing is set by the test (time to first token, gap between tokens), which gives bench's
clock an independent reference. Faults: a key (401 without it), a 500 on chosen requests, and
`die_after`: after that many requests have started, the server closes every stream mid-answer and
stops listening (a crashed vLLM).
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeOpenAI:
    def __init__(
        self,
        *,
        ttft_s: float = 0.05,
        itl_s: float = 0.005,
        api_key: str | None = None,
        fail_requests: set[int] | None = None,
        die_after: int | None = None,
        max_model_len: int = 4096,
        model: str = "fake-model",
        version: str = "0.32.0",
        kv_per_request: float = 0.01,
        send_usage: bool = True,
        metrics_padding: int = 0,
        burst: bool = False,
    ) -> None:
        self.ttft_s, self.itl_s, self.api_key = ttft_s, itl_s, api_key
        self.fail_requests = fail_requests or set()
        self.die_after = die_after
        self.max_model_len, self.model, self.version = max_model_len, model, version
        self.kv_per_request = kv_per_request
        self.send_usage = send_usage
        # burst: hold every token chunk until the answer's last one is due, then write them all at once
        # (what the vLLM CPU build's API server does when its engine core's polling takes its CPU core)
        self.burst = burst
        # histogram lines added to /metrics: a real vLLM page runs to thousands of lines
        self.metrics_padding = "".join(
            f'vllm:request_prompt_tokens_bucket{{engine="0",le="{i}.0",model_name="{model}"}} {i}\n'
            for i in range(metrics_padding))
        self.lock = threading.Lock()
        self.started = 0
        self.running = 0
        self.max_running_seen = 0
        self.completions: list[dict[str, Any]] = []  # request bodies, in arrival order
        self.peers: list[tuple[str, int]] = []  # the client's (host, port) of each completion: one per connection
        # the schedule the server actually kept (time.perf_counter): when each completion request
        # arrived and when each token chunk left. On a loaded machine the server's own sleeps
        # overshoot, so tests compare the client's measurements with this, not with ttft_s / itl_s.
        self.arrived_at: dict[int, float] = {}
        self.token_sent_at: dict[int, list[float]] = {}
        self.dead = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- the schedule kept, per completed request (index = arrival order) --------------------------

    def served(self) -> list[int]:
        return [i for i, t in sorted(self.token_sent_at.items()) if t]

    def ttft_kept(self, index: int) -> float:
        return self.token_sent_at[index][0] - self.arrived_at[index]

    def tpot_kept(self, index: int) -> float:
        sent = self.token_sent_at[index]
        return (sent[-1] - sent[0]) / max(len(sent) - 1, 1)

    def e2e_kept(self, index: int) -> float:
        return self.token_sent_at[index][-1] - self.arrived_at[index]

    def itls_kept(self) -> list[float]:
        return [b - a for i in self.served() for a, b in itertools.pairwise(self.token_sent_at[i])]

    def kept_sorted(self, metric: str) -> list[float]:
        """Sorted kept values of one metric over the completed requests: ttft | tpot | itl."""
        if metric == "itl":
            return sorted(self.itls_kept())
        per_request = {"ttft": self.ttft_kept, "tpot": self.tpot_kept}[metric]
        return sorted(per_request(i) for i in self.served())

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, doc: Any) -> None:
                body = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _authorized(self) -> bool:
                if fake.api_key is None or self.headers.get("Authorization") == f"Bearer {fake.api_key}":
                    return True
                # vLLM's auth middleware answer (vllm/entrypoints/openai/api_server.py)
                self._json(401, {"error": "Unauthorized"})
                return False

            def do_GET(self) -> None:
                if fake.dead.is_set():  # a kept-alive connection to a crashed server
                    return self._abort()
                if self.path == "/health":
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif self.path == "/version":
                    self._json(200, {"version": fake.version})
                elif self.path == "/metrics":
                    with fake.lock:
                        running = fake.running
                    text = (
                        "# TYPE vllm:num_requests_running gauge\n"
                        f'vllm:num_requests_running{{engine="0",model_name="{fake.model}"}} {running}\n'
                        f'vllm:num_requests_waiting{{engine="0",model_name="{fake.model}"}} 0\n'
                        f'vllm:kv_cache_usage_perc{{engine="0",model_name="{fake.model}"}} {running * fake.kv_per_request}\n'
                        f'vllm:num_preemptions_total{{engine="0",model_name="{fake.model}"}} 0\n'
                        + fake.metrics_padding
                    ).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain; version=0.0.4")
                    self.send_header("Content-Length", str(len(text)))
                    self.end_headers()
                    self.wfile.write(text)
                elif self.path == "/v1/models":
                    if self._authorized():
                        self._json(200, {"object": "list", "data": [
                            {"id": fake.model, "object": "model", "max_model_len": fake.max_model_len}]})
                else:
                    self._json(404, {"detail": "Not Found"})
                return None

            def _body(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(length) or b"{}")

            def do_POST(self) -> None:
                if fake.dead.is_set():
                    return self._abort()
                body = self._body()
                if self.path == "/tokenize":
                    words = str(body.get("prompt", "")).split()
                    self._json(200, {"tokens": [100 + (sum(map(ord, w)) % 400) for w in words],
                                     "count": len(words), "max_model_len": fake.max_model_len})
                    return
                if self.path != "/v1/completions":
                    self._json(404, {"detail": "Not Found"})
                    return
                if not self._authorized():
                    return
                with fake.lock:
                    index = fake.started
                    fake.started += 1
                    fake.completions.append(body)
                    fake.peers.append(self.client_address[:2])
                    fake.arrived_at[index] = time.perf_counter()
                    fake.token_sent_at[index] = []
                if index in fake.fail_requests:
                    self._json(500, {"error": {"message": "boom: injected failure", "type": "InternalServerError",
                                               "code": 500}})
                    return
                prompt = body.get("prompt")
                prompt_tokens = len(prompt) if isinstance(prompt, list) else len(str(prompt).split())
                n = int(body.get("max_tokens") or 16)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                with fake.lock:
                    fake.running += 1
                    fake.max_running_seen = max(fake.max_running_seen, fake.running)
                try:
                    self._stream(index, prompt_tokens, n)
                finally:
                    with fake.lock:
                        fake.running -= 1
                return None

            def _chunk(self, data: str) -> None:
                raw = f"data: {data}\n\n".encode()
                frame = f"{len(raw):x}\r\n".encode() + raw + b"\r\n"
                if fake.burst:  # the handler's wfile is unbuffered: hold the frames here
                    self.held.append(frame)
                    return
                self.wfile.write(frame)
                self.wfile.flush()

            def _stream(self, index: int, prompt_tokens: int, n: int) -> None:
                self.held: list[bytes] = []  # burst mode: this answer's frames, written together at the end
                if fake.die_after is not None and index >= fake.die_after:
                    fake.kill()
                if fake.dead.wait(fake.ttft_s + (fake.itl_s * (n - 1) if fake.burst else 0.0)):
                    return self._abort()
                for k in range(n):
                    if k and not fake.burst and fake.dead.wait(fake.itl_s):
                        return self._abort()
                    self._chunk(json.dumps({"id": f"cmpl-{index}", "object": "text_completion", "model": fake.model,
                                            "choices": [{"index": 0, "text": f" t{k}", "logprobs": None,
                                                         "finish_reason": "length" if k == n - 1 else None}]}))
                    fake.token_sent_at[index].append(time.perf_counter())
                if fake.send_usage:
                    self._chunk(json.dumps({"id": f"cmpl-{index}", "object": "text_completion", "model": fake.model,
                                            "choices": [], "usage": {"prompt_tokens": prompt_tokens,
                                                                     "completion_tokens": n,
                                                                     "total_tokens": prompt_tokens + n}}))
                self._chunk("[DONE]")
                self.wfile.write(b"".join(self.held) + b"0\r\n\r\n")
                self.wfile.flush()
                return None

            def _abort(self) -> None:
                # a crashed server: the connection drops in the middle of the chunked body
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def kill(self) -> None:
        """Crash: stop listening now and drop every open stream."""
        if self.dead.is_set():
            return
        self.dead.set()
        server = self._server
        if server is not None:
            threading.Thread(target=lambda: (server.shutdown(), server.server_close()), daemon=True).start()

    def stop(self) -> None:
        if self._server is not None and not self.dead.is_set():
            self.dead.set()
            self._server.shutdown()
            self._server.server_close()
        time.sleep(0.01)
