"""Smoke's feature checks (structured output, tool call, reasoning) against a stand-in HTTP server
that answers with canned chat completions, so each way a server can get them wrong is seen to
fail. The passing path against the real vLLM CPU build is tests/e2e/test_features_e2e.py."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest

from vllmkit.launch.smoke import SmokeFeatures, run_smoke


def _answer(body: dict[str, Any], mode: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": "hi"}
    if "response_format" in body:
        message["content"] = {
            "good": '{"answer": "yes", "confidence": 2}',
            "notjson": "Sure! The sky is blue.",
            "badschema": '{"answer": "maybe", "confidence": 2}',
        }[mode]
    elif "tools" in body:
        if mode == "good":
            message["tool_calls"] = [{"id": "c1", "type": "function",
                                      "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]  # fmt: skip
        elif mode == "badschema":
            message["tool_calls"] = [{"id": "c1", "type": "function",
                                      "function": {"name": "get_weather", "arguments": '{"town": "Paris"}'}}]  # fmt: skip
        else:
            message["content"] = '<tool_call>{"name": "get_weather"}</tool_call>'
    elif "17 * 23" in body["messages"][0]["content"]:
        if mode == "good":
            message["reasoning"] = "17*23 = 391"
            message["content"] = "391"
        else:
            message["content"] = "<think>17*23</think>391"
    return {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"completion_tokens": 3}}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    mode = "good"
    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, doc: Any, status: int = 200) -> None:
        raw = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send({})
        else:
            self._send({"data": [{"id": "m", "max_model_len": 1024}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(body)
        if body.get("stream"):
            raw = b'data: {"choices":[{"delta":{"content":"a"}}]}\n\ndata: [DONE]\n\n'
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
            return
        if self.path == "/v1/completions":
            self._send({"choices": [{"text": "x"}], "usage": {"completion_tokens": 1}})
            return
        self._send(_answer(body, type(self).mode))


@pytest.fixture
def server() -> Iterator[tuple[str, type[_Handler]]]:
    handler = type("H", (_Handler,), {"mode": "good", "seen": []})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


ALL = SmokeFeatures(structured=True, tools=True, reasoning=True, thinking_off_kwargs={"enable_thinking": False})


def _checks(url: str) -> dict[str, Any]:
    report = run_smoke(url, features=ALL, timeout_s=10)
    return {c.name: c for c in report.checks}


def test_good_answers_pass_and_thinking_is_turned_off_for_grammar_checks(server) -> None:  # type: ignore[no-untyped-def]
    url, handler = server
    checks = _checks(url)
    assert [checks[n].status for n in ("structured_output", "tool_call", "reasoning")] == ["pass"] * 3
    grammar = [b for b in handler.seen if "response_format" in b or "tools" in b]
    assert len(grammar) == 2 and all(b["chat_template_kwargs"] == {"enable_thinking": False} for b in grammar)
    reasoning = next(b for b in handler.seen if "17 * 23" in str(b.get("messages")))
    assert "chat_template_kwargs" not in reasoning  # thinking stays on (the family's default)


@pytest.mark.parametrize("mode", ["notjson", "badschema", "inline"])
def test_wrong_answers_fail(server, mode: str) -> None:  # type: ignore[no-untyped-def]
    url, handler = server
    handler.mode = mode
    checks = _checks(url)
    if mode == "notjson":
        assert checks["structured_output"].status == "fail" and "not JSON" in checks["structured_output"].detail
        assert checks["tool_call"].status == "fail" and "no tool_calls" in checks["tool_call"].detail
    elif mode == "badschema":
        assert checks["structured_output"].status == "fail" and "schema" in checks["structured_output"].detail
        assert checks["tool_call"].status == "fail" and "schema" in checks["tool_call"].detail
    else:
        assert checks["reasoning"].status == "fail" and "inline" in checks["reasoning"].detail
        assert "--reasoning-parser" in (checks["reasoning"].fix or "")


def test_no_features_means_no_extra_checks(server) -> None:  # type: ignore[no-untyped-def]
    url, _ = server
    names = [c.name for c in run_smoke(url, timeout_s=10).checks]
    assert names == ["health", "models", "chat", "chat_stream", "completion"]
