"""Smoke test for any OpenAI-compatible endpoint (vLLM first).

Checks, in order: /health, /v1/models (served names, max_model_len), one chat completion, one
streamed chat completion (time to first token, tokens/s), one text completion, and with an API key
that a request without it is refused with 401 (vLLM protects /v1/* when --api-key / VLLM_API_KEY
is set: vllm/entrypoints/serve/middleware/register.py in 0.32).

With features turned on (`SmokeFeatures`, from the plan's features block under `serve`, or
`vllmkit smoke --features structured,tools,reasoning`), three more checks (issue 14):
- structured_output: a chat request with response_format {type: json_schema} must come back as
  JSON that validates against the schema (jsonschema); vLLM decodes it under a grammar, so this
  holds even for random weights;
- tool_call: a request naming a (strict) function in tool_choice must come back as
  message.tool_calls with that function and arguments that validate against its parameters;
- reasoning: a chat request must come back with the reasoning in its own field (`reasoning`, or
  `reasoning_content` before vLLM 0.11), not inline as <think>…</think> in the content.
Grammar-constrained output starts after the reasoning ends (vllm/v1/structured_output), so the
first two send the model family's "thinking off" chat_template_kwargs when it has them.

A chat request to a model whose tokenizer has no chat template gets HTTP 400 with
"As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat
template if the tokenizer does not define one." — recognised and explained.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import requests
from pydantic import BaseModel, Field, computed_field

from vllmkit.errors import ExitCode, UsageError
from vllmkit.files import FileProblem, read_text

CheckStatus = Literal["pass", "fail", "skip"]
CHAT_TEMPLATE_MARKERS = ("default chat template is no longer allowed", "chat template")
CHAT_TEMPLATE_FIX = (
    "the model's tokenizer has no chat template: start vLLM with --chat-template FILE "
    "(a Jinja template for this model; instruct models ship one as chat_template.jinja or in "
    "tokenizer_config.json), or, for a base model, use /v1/completions instead of chat"
)
PROMPT = "Say hello in one short sentence."
REASONING_FIELDS = ("reasoning", "reasoning_content")
# small, closed schema: every valid document is short, so a grammar-bound random model ends it
SMOKE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "enum": ["yes", "no"]},
        "confidence": {"type": "integer", "enum": [1, 2, 3]},
    },
    "required": ["answer", "confidence"],
    "additionalProperties": False,
}
SMOKE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city",
        # OpenAI's `strict`: the arguments must follow the schema. vLLM 0.32 then pins them with a
        # grammar (tool_parsers/tool_strict_level.py, AUTO level); without it only the call's
        # envelope is constrained and the arguments may be any JSON value
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "enum": ["Paris", "Tokyo"]}},
            "required": ["city"],
            "additionalProperties": False,
        },
    },
}
FEATURE_NAMES = ("structured", "tools", "reasoning")


class SmokeFeatures(BaseModel):
    structured: bool = False
    tools: bool = False
    reasoning: bool = False
    thinking_on_kwargs: dict[str, Any] | None = None
    thinking_off_kwargs: dict[str, Any] | None = None
    max_tokens: int = 64


class SmokeCheck(BaseModel):
    name: str
    status: CheckStatus
    detail: str = ""
    fix: str | None = None
    http_status: int | None = None
    elapsed_s: float | None = None


class SmokeReport(BaseModel):
    url: str
    model: str | None = None
    served_models: list[str] = Field(default_factory=list)
    max_model_len: int | None = None
    ttft_s: float | None = None
    tokens_per_s: float | None = None
    completion_tokens: int | None = None
    checks: list[SmokeCheck] = Field(default_factory=list)
    reachable: bool = True

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return all(c.status != "fail" for c in self.checks)

    @property
    def failed(self) -> list[SmokeCheck]:
        return [c for c in self.checks if c.status == "fail"]


def _error_text(resp: requests.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:500]
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        return str(err.get("message") or err)[:500]
    return str(err)[:500]


def _is_chat_template_error(status: int, message: str) -> bool:
    low = message.lower()
    return status == 400 and any(m in low for m in CHAT_TEMPLATE_MARKERS)


class _Client:
    def __init__(self, url: str, api_key: str | None, timeout_s: float) -> None:
        self.base = url.rstrip("/")
        self.timeout = timeout_s
        self.session = requests.Session()
        self.session.trust_env = False  # a local endpoint must not go through HTTP(S)_PROXY
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def get(self, path: str, *, auth: bool = True) -> requests.Response:
        return self.session.get(self.base + path, headers=self.headers if auth else {}, timeout=self.timeout)

    def post(self, path: str, body: dict[str, Any], *, stream: bool = False) -> requests.Response:
        return self.session.post(
            self.base + path, json=body, headers=self.headers, timeout=self.timeout, stream=stream
        )


def _timed(fn: Callable[[], SmokeCheck]) -> SmokeCheck:
    t0 = time.monotonic()
    check = fn()
    check.elapsed_s = round(time.monotonic() - t0, 3)
    return check


def run_smoke(
    url: str = "http://127.0.0.1:8000",
    *,
    api_key: str | None = None,
    model: str | None = None,
    timeout_s: float = 60.0,
    max_tokens: int = 16,
    features: SmokeFeatures | None = None,
) -> SmokeReport:
    client = _Client(url, api_key, timeout_s)
    report = SmokeReport(url=client.base)
    try:
        health = _timed(lambda: _check_health(client))
        report.checks.append(health)
        if health.status == "fail" and health.http_status is None:
            report.reachable = False
            return report
        models = _timed(lambda: _check_models(client, report))
        report.checks.append(models)
        report.model = model or (report.served_models[0] if report.served_models else None)
        if report.model is None:
            for name in ("chat", "chat_stream", "completion"):
                report.checks.append(SmokeCheck(name=name, status="skip", detail="no served model name"))
        else:
            name = report.model
            report.checks.append(_timed(lambda: _check_chat(client, name, max_tokens)))
            report.checks.append(_timed(lambda: _check_chat_stream(client, name, max_tokens, report)))
            report.checks.append(_timed(lambda: _check_completion(client, name, max_tokens)))
            if features is not None:
                report.checks += _feature_checks(client, name, features)
        if api_key:
            report.checks.append(_timed(lambda: _check_unauthorized(client)))
    finally:
        client.session.close()
    return report


def _check_health(client: _Client) -> SmokeCheck:
    try:
        resp = client.get("/health", auth=False)
    except requests.RequestException as exc:
        return SmokeCheck(
            name="health",
            status="fail",
            detail=f"cannot reach {client.base}/health: {type(exc).__name__}",
            fix="is the server running and listening on that host/port? (`vllmkit ps`)",
        )
    if resp.status_code == 200:
        return SmokeCheck(name="health", status="pass", http_status=200, detail="200 OK")
    return SmokeCheck(
        name="health",
        status="fail",
        http_status=resp.status_code,
        detail=f"/health answered {resp.status_code}" + (" (engine dead)" if resp.status_code == 503 else ""),
        fix="see the server log (`vllmkit doctor --log`)",
    )


def _check_models(client: _Client, report: SmokeReport) -> SmokeCheck:
    try:
        resp = client.get("/v1/models")
    except requests.RequestException as exc:
        return SmokeCheck(name="models", status="fail", detail=f"{type(exc).__name__}: {exc}")
    if resp.status_code == 401:
        return SmokeCheck(
            name="models",
            status="fail",
            http_status=401,
            detail="401 Unauthorized: the server wants an API key",
            fix="pass --api-key or --api-key-file (or set VLLM_API_KEY)",
        )
    if resp.status_code != 200:
        return SmokeCheck(
            name="models", status="fail", http_status=resp.status_code, detail=_error_text(resp)
        )
    try:
        data = resp.json().get("data", [])
    except (ValueError, AttributeError):
        return SmokeCheck(name="models", status="fail", http_status=200, detail="not an OpenAI model list")
    report.served_models = [str(m.get("id")) for m in data if isinstance(m, dict)]
    lens = [m.get("max_model_len") for m in data if isinstance(m, dict) and m.get("max_model_len")]
    report.max_model_len = int(lens[0]) if lens else None
    if not report.served_models:
        return SmokeCheck(name="models", status="fail", http_status=200, detail="no models served")
    detail = ", ".join(report.served_models)
    if report.max_model_len:
        detail += f" (max_model_len {report.max_model_len:,})"
    return SmokeCheck(name="models", status="pass", http_status=200, detail=detail)


def _chat_body(model: str, max_tokens: int, stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _http_failure(name: str, resp: requests.Response) -> SmokeCheck:
    message = _error_text(resp)
    if _is_chat_template_error(resp.status_code, message):
        return SmokeCheck(
            name=name,
            status="fail",
            http_status=resp.status_code,
            detail=f"no chat template: {message}",
            fix=CHAT_TEMPLATE_FIX,
        )
    return SmokeCheck(name=name, status="fail", http_status=resp.status_code, detail=message)


def _check_chat(client: _Client, model: str, max_tokens: int) -> SmokeCheck:
    try:
        resp = client.post("/v1/chat/completions", _chat_body(model, max_tokens, stream=False))
    except requests.RequestException as exc:
        return SmokeCheck(name="chat", status="fail", detail=f"{type(exc).__name__}: {exc}")
    if resp.status_code != 200:
        return _http_failure("chat", resp)
    try:
        body = resp.json()
        choice = body["choices"][0]
        text = choice["message"].get("content") or ""
        tokens = (body.get("usage") or {}).get("completion_tokens")
    except (ValueError, KeyError, IndexError, TypeError):
        return SmokeCheck(name="chat", status="fail", http_status=200, detail="not an OpenAI chat completion")
    return SmokeCheck(
        name="chat",
        status="pass",
        http_status=200,
        detail=f"{tokens if tokens is not None else '?'} tokens, finish_reason={choice.get('finish_reason')}: {text[:60]!r}",
    )


def _check_chat_stream(client: _Client, model: str, max_tokens: int, report: SmokeReport) -> SmokeCheck:
    t0 = time.monotonic()
    first: float | None = None
    last: float | None = None
    chunks = 0
    usage_tokens: int | None = None
    try:
        resp = client.post("/v1/chat/completions", _chat_body(model, max_tokens, stream=True), stream=True)
        if resp.status_code != 200:
            return _http_failure("chat_stream", resp)
        # chunk_size=1: see each event when it arrives. The default 512-byte chunks bunch several
        # events together, and chunk_size=None reads a non-chunked (HTTP/1.0) body to EOF; either
        # would hide the real inter-token timing. Streams are a few KB, so this is cheap.
        for raw in resp.iter_lines(chunk_size=1):
            if not raw or not raw.startswith(b"data:"):
                continue
            payload = raw[5:].strip()
            if payload == b"[DONE]":
                break
            try:
                event = json.loads(payload)
            except ValueError:
                continue
            if event.get("usage"):
                usage_tokens = event["usage"].get("completion_tokens", usage_tokens)
            for choice in event.get("choices") or []:
                delta = choice.get("delta") or {}
                # a chunk that carries generated text (vLLM may send "" while a multi-byte
                # character is incomplete: it still marks a generated token)
                if "content" in delta or "reasoning_content" in delta or "reasoning" in delta:
                    now = time.monotonic()
                    if first is None:
                        first = now
                    last = now
                    chunks += 1
        resp.close()
    except requests.RequestException as exc:
        return SmokeCheck(name="chat_stream", status="fail", detail=f"{type(exc).__name__}: {exc}")
    if first is None:
        return SmokeCheck(name="chat_stream", status="fail", http_status=200, detail="no streamed tokens")
    tokens = usage_tokens if usage_tokens is not None else chunks
    report.ttft_s = round(first - t0, 4)
    report.completion_tokens = tokens
    span = (last or first) - first
    # decode rate over the tokens after the first one
    report.tokens_per_s = round((tokens - 1) / span, 2) if tokens > 1 and span > 0 else None
    rate = f"{report.tokens_per_s} tok/s" if report.tokens_per_s is not None else "rate n/a"
    return SmokeCheck(
        name="chat_stream",
        status="pass",
        http_status=200,
        detail=f"TTFT {report.ttft_s * 1000:.0f} ms, {tokens} tokens, {rate}",
    )


def _check_completion(client: _Client, model: str, max_tokens: int) -> SmokeCheck:
    body = {"model": model, "prompt": "Hello, my name is", "max_tokens": max_tokens, "temperature": 0}
    try:
        resp = client.post("/v1/completions", body)
    except requests.RequestException as exc:
        return SmokeCheck(name="completion", status="fail", detail=f"{type(exc).__name__}: {exc}")
    if resp.status_code != 200:
        return _http_failure("completion", resp)
    try:
        data = resp.json()
        text = data["choices"][0].get("text") or ""
        tokens = (data.get("usage") or {}).get("completion_tokens")
    except (ValueError, KeyError, IndexError, TypeError):
        return SmokeCheck(
            name="completion", status="fail", http_status=200, detail="not an OpenAI completion"
        )
    return SmokeCheck(
        name="completion",
        status="pass",
        http_status=200,
        detail=f"{tokens if tokens is not None else '?'} tokens: {text[:60]!r}",
    )


def _check_unauthorized(client: _Client) -> SmokeCheck:
    try:
        resp = client.get("/v1/models", auth=False)
    except requests.RequestException as exc:
        return SmokeCheck(name="auth", status="fail", detail=f"{type(exc).__name__}: {exc}")
    if resp.status_code == 401:
        return SmokeCheck(
            name="auth", status="pass", http_status=401, detail="request without the key got 401"
        )
    return SmokeCheck(
        name="auth",
        status="fail",
        http_status=resp.status_code,
        detail=f"request without the key got {resp.status_code}, expected 401: the endpoint is open",
        fix="start vLLM with --api-key (or VLLM_API_KEY in its environment)",
    )


# ---------------------------------------------------------------------------------------------
# features (issue 14)


def _feature_checks(client: _Client, model: str, f: SmokeFeatures) -> list[SmokeCheck]:
    out: list[SmokeCheck] = []
    if f.structured:
        out.append(_timed(lambda: _check_structured(client, model, f)))
    if f.tools:
        out.append(_timed(lambda: _check_tool_call(client, model, f)))
    if f.reasoning:
        out.append(_timed(lambda: _check_reasoning(client, model, f)))
    return out


def _post_chat(client: _Client, name: str, body: dict[str, Any]) -> tuple[dict[str, Any] | None, SmokeCheck | None]:
    try:
        resp = client.post("/v1/chat/completions", body)
    except requests.RequestException as exc:
        return None, SmokeCheck(name=name, status="fail", detail=f"{type(exc).__name__}: {exc}")
    if resp.status_code != 200:
        return None, _http_failure(name, resp)
    try:
        message = resp.json()["choices"][0]["message"]
        if not isinstance(message, dict):
            raise TypeError
    except (ValueError, KeyError, IndexError, TypeError):
        return None, SmokeCheck(name=name, status="fail", http_status=200, detail="not an OpenAI chat completion")
    return message, None


def _base_body(model: str, content: str, f: SmokeFeatures, *, thinking: bool | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": f.max_tokens,
        "temperature": 0,
    }
    kwargs = f.thinking_on_kwargs if thinking else f.thinking_off_kwargs if thinking is False else None
    if kwargs:
        body["chat_template_kwargs"] = dict(kwargs)
    return body


def _schema_errors(document: Any, schema: dict[str, Any]) -> list[str]:
    import jsonschema  # ~0.4 s: only when a structured-output check runs, not for every serve

    validator = jsonschema.Draft202012Validator(schema)
    return [e.message for e in validator.iter_errors(document)]


def _check_structured(client: _Client, model: str, f: SmokeFeatures) -> SmokeCheck:
    name = "structured_output"
    body = _base_body(model, "Is the sky blue? Answer in JSON.", f, thinking=False)
    body["response_format"] = {"type": "json_schema", "json_schema": {"name": "smoke", "schema": SMOKE_SCHEMA, "strict": True}}
    message, failure = _post_chat(client, name, body)
    if failure is not None or message is None:
        return failure or SmokeCheck(name=name, status="fail")
    text = message.get("content") or ""
    try:
        document = json.loads(text)
    except ValueError:
        return SmokeCheck(
            name=name, status="fail", http_status=200,
            detail=f"content is not JSON: {text[:80]!r}",
            fix="the server ignored response_format: check the structured-output backend in its log",
        )  # fmt: skip
    errors = _schema_errors(document, SMOKE_SCHEMA)
    if errors:
        return SmokeCheck(name=name, status="fail", http_status=200, detail=f"JSON breaks the schema: {errors[0][:120]}")
    return SmokeCheck(name=name, status="pass", http_status=200, detail=f"schema-valid JSON: {text[:60]}")


def _check_tool_call(client: _Client, model: str, f: SmokeFeatures) -> SmokeCheck:
    name = "tool_call"
    body = _base_body(model, "What is the weather in Paris?", f, thinking=False)
    body["tools"] = [SMOKE_TOOL]
    body["tool_choice"] = {"type": "function", "function": {"name": SMOKE_TOOL["function"]["name"]}}
    message, failure = _post_chat(client, name, body)
    if failure is not None or message is None:
        return failure or SmokeCheck(name=name, status="fail")
    calls = message.get("tool_calls") or []
    if not calls:
        return SmokeCheck(
            name=name, status="fail", http_status=200,
            detail=f"no tool_calls in the answer (content {str(message.get('content'))[:60]!r})",
            fix="start vLLM with --enable-auto-tool-choice --tool-call-parser NAME for this model family",
        )  # fmt: skip
    fn = (calls[0] or {}).get("function") or {}
    if fn.get("name") != SMOKE_TOOL["function"]["name"]:
        return SmokeCheck(name=name, status="fail", http_status=200, detail=f"called {fn.get('name')!r}")
    try:
        args = json.loads(fn.get("arguments") or "")
    except ValueError:
        return SmokeCheck(name=name, status="fail", http_status=200, detail=f"arguments are not JSON: {str(fn.get('arguments'))[:80]!r}")
    errors = _schema_errors(args, SMOKE_TOOL["function"]["parameters"])
    if errors:
        return SmokeCheck(name=name, status="fail", http_status=200, detail=f"arguments break the schema: {errors[0][:120]}")
    return SmokeCheck(name=name, status="pass", http_status=200, detail=f"tool_calls: get_weather({json.dumps(args)})")


def _check_reasoning(client: _Client, model: str, f: SmokeFeatures) -> SmokeCheck:
    name = "reasoning"
    message, failure = _post_chat(client, name, _base_body(model, "What is 17 * 23?", f, thinking=True))
    if failure is not None or message is None:
        return failure or SmokeCheck(name=name, status="fail")
    for field in REASONING_FIELDS:
        value = message.get(field)
        if isinstance(value, str) and value:
            return SmokeCheck(name=name, status="pass", http_status=200, detail=f"message.{field}: {value[:60]!r}")
    content = str(message.get("content") or "")
    inline = "<think>" in content or "</think>" in content
    return SmokeCheck(
        name=name, status="fail", http_status=200,
        detail=("reasoning is inline in the content (<think>…</think>)" if inline
                else "no reasoning field in the answer") + f": {content[:60]!r}",
        fix="start vLLM with --reasoning-parser NAME for this model family (see `vllmkit plan`)",
    )  # fmt: skip
def parse_features(text: str | None) -> SmokeFeatures | None:
    """`smoke --features structured,tools,reasoning` (issue 14)."""
    if text is None:
        return None
    names = {t.strip() for t in text.split(",") if t.strip()}
    unknown = names - set(FEATURE_NAMES)
    if unknown or not names:
        raise UsageError(f"unknown --features {', '.join(sorted(unknown)) or repr(text)}", "use structured,tools,reasoning")
    return SmokeFeatures(**{n: True for n in names})


MAX_KEY_FILE_BYTES = 64 << 10  # an API key file holds one line


def read_key_file(path: Path | str) -> str:
    """The API key on the first line of --api-key-file (a usage error when unreadable or empty)."""
    try:
        key = read_text(Path(path).expanduser(), max_bytes=MAX_KEY_FILE_BYTES).strip()
    except FileProblem as exc:
        raise UsageError(exc.describe("--api-key-file "), "check the path; the key goes on the first line") from None
    if not key:
        raise UsageError(f"--api-key-file {path} is empty", "put the key on the first line")
    return key


def read_api_key(api_key: str | None, api_key_file: Path | None) -> str | None:
    """--api-key, else --api-key-file, else VLLM_API_KEY (read when the command runs)."""
    if api_key:
        return api_key
    if api_key_file is not None:
        return read_key_file(api_key_file)
    return os.environ.get("VLLM_API_KEY") or None


def smoke_errors(report: SmokeReport) -> tuple[int, list[dict[str, str | None]]]:
    """Exit code and envelope errors: unreachable -> 6 (health failure), a failed check -> 3."""
    if not report.reachable:
        code = int(ExitCode.LAUNCH)
    elif not report.ok:
        code = int(ExitCode.DOES_NOT_FIT)
    else:
        return 0, []
    errors = [
        {"code": f"smoke-{c.name}", "message": f"{c.name}: {c.detail}", "hint": c.fix} for c in report.failed
    ]
    return code, errors
