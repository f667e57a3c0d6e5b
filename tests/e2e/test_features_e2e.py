"""Serving features (issue 14) with the real vLLM CPU build: one server for the module.

The tiny model mimics Qwen3: config model_type qwen3 (so the qwen3 preset picks the hermes tool
parser and the qwen3 reasoning parser), a tokenizer with <think>, </think>, <tool_call>,
</tool_call> as special tokens, and a chat template that, like Qwen3's, opens a <think> block
unless chat_template_kwargs {enable_thinking: false} closes it in the prompt. Its decoder fuses
tokens (no spaces), so grammar-constrained text decodes to exactly the JSON the grammar allowed.
Weights are random: the parsers' and grammar's behaviour is what is tested, not the model's. A
random model given optional whitespace fills it until max_tokens, so the server runs with vLLM's
compact-JSON option (--structured-outputs-config disable_any_whitespace, which vLLM accepts only
with an explicit xgrammar or guidance backend): every valid document is then a few dozen tokens.
For the same reason it runs with VLLM_ENFORCE_STRICT_TOOL_CALLING=0: 0.32's default wraps a named
tool call in the parser's structural tag (hermes: `<tool_call>{"name": …, "arguments": …}`),
whose JSON allows free whitespace whatever that option says; without it the arguments are
decoded with the (compact) JSON-schema grammar and vLLM returns them as tool_calls itself.

What must hold:
- vLLM accepts the preset's flags (--enable-auto-tool-choice --tool-call-parser hermes
  --reasoning-parser qwen3) and starts;
- smoke's structured_output, tool_call and reasoning checks pass;
- independently of vllmkit's code, a response_format json_schema request returns JSON that
  validates against the schema (jsonschema here), and a named tool_choice comes back as tool_calls.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

import jsonschema
import pytest
import requests

from tests.e2e.tiny import build_tiny_model
from tests.e2e.vllm_proc import free_port, own_tmpdir, server_env

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("require_vllm")]

GIB = 1 << 30
START_TIMEOUT = 420
QWEN3_LIKE_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> "
    "{% if enable_thinking is defined and enable_thinking is false %}<think> </think> {% else %}<think> {% endif %}"
    "{% endif %}"
)
SCHEMA = {
    "type": "object",
    "properties": {"color": {"type": "string", "enum": ["red", "blue"]}, "n": {"type": "integer", "enum": [1, 2]}},
    "required": ["color", "n"],
    "additionalProperties": False,
}


def _vllmkit(env: dict[str, str], *args: str, timeout: float = START_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vllmkit", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, check=False)  # fmt: skip


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("features")
    model = build_tiny_model(
        root / "qwen3-tiny", "qwen3", chat_template=QWEN3_LIKE_TEMPLATE,
        extra_specials=("<think>", "</think>", "<tool_call>", "</tool_call>"), fused_decoder=True,
    )  # fmt: skip
    env = server_env({"VLLMKIT_STATE_DIR": str(root / "state"), "VLLMKIT_CACHE_DIR": str(root / "cache")})
    env.pop("VLLM_API_KEY", None)
    env["VLLMKIT_VLLM_PYTHON"] = os.environ.get("VLLMKIT_TEST_VLLM_PYTHON", sys.executable)
    env["VLLM_ENFORCE_STRICT_TOOL_CALLING"] = "0"  # see the module docstring (vllm/envs.py)
    # vllmkit and the vLLM it starts keep their temp files (the torch.distributed file store a stopped vLLM
    # leaves behind) in a short folder of the module's own (unix socket names: pytest's tmp paths are too long)
    short = tempfile.mkdtemp(prefix="vk-feat-", dir="/tmp")
    env.update(own_tmpdir(short))
    port = free_port()
    proc = _vllmkit(env, "serve", str(model), "--device", "cpu", "--port", str(port), "--kv-cache-memory-bytes",
                    str(GIB), "--max-model-len", "1024", "--detach", "--json",
                    '--vllm-arg=--structured-outputs-config={"backend": "xgrammar", "disable_any_whitespace": true}')  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(proc.stdout)["data"]
    try:
        yield data
    finally:
        _vllmkit(env, "stop", data["run_id"], "--json", timeout=120)
        shutil.rmtree(short, ignore_errors=True)


def test_preset_flags_are_accepted_by_vllm(served: dict[str, Any]) -> None:
    cmd = served["command"]
    assert "--enable-auto-tool-choice" in cmd
    assert cmd[cmd.index("--tool-call-parser") + 1] == "hermes"
    assert cmd[cmd.index("--reasoning-parser") + 1] == "qwen3"
    assert served["status"] == "detached"  # vLLM started with them and /health answered


def test_smoke_feature_checks_pass(served: dict[str, Any]) -> None:
    checks = {c["name"]: c for c in served["smoke"]["checks"]}
    statuses = {n: checks[n]["status"] for n in ("structured_output", "tool_call", "reasoning")}
    shown = json.dumps([checks[n] for n in statuses], indent=1)
    assert statuses == dict.fromkeys(statuses, "pass"), shown
    assert served["smoke"]["ok"] is True


def test_json_schema_answer_validates_independently(served: dict[str, Any]) -> None:
    body = {
        "model": served["served_model_name"],
        "messages": [{"role": "user", "content": "pick"}],
        "max_tokens": 64,
        "temperature": 0,
        "chat_template_kwargs": {"enable_thinking": False},
        "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": SCHEMA}},
    }
    resp = requests.post(served["url"] + "/v1/chat/completions", json=body, timeout=120)
    assert resp.status_code == 200, resp.text[:500]
    message = resp.json()["choices"][0]["message"]
    jsonschema.validate(json.loads(message["content"]), SCHEMA)
    # with thinking on, the same server puts the (random) text in the reasoning field
    body = {"model": served["served_model_name"], "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 8, "temperature": 0}  # fmt: skip
    message = requests.post(served["url"] + "/v1/chat/completions", json=body, timeout=120).json()["choices"][0]["message"]
    assert message.get("reasoning") or message.get("reasoning_content"), message


def test_named_tool_choice_comes_back_as_tool_calls(served: dict[str, Any]) -> None:
    # strict: vLLM pins the arguments to the schema (else only the <tool_call> envelope is constrained)
    tool = {"type": "function", "function": {"name": "pick", "parameters": SCHEMA, "strict": True}}
    body = {
        "model": served["served_model_name"],
        "messages": [{"role": "user", "content": "pick"}],
        "max_tokens": 64,
        "temperature": 0,
        "chat_template_kwargs": {"enable_thinking": False},
        "tools": [tool],
        "tool_choice": {"type": "function", "function": {"name": "pick"}},
    }
    resp = requests.post(served["url"] + "/v1/chat/completions", json=body, timeout=120)
    assert resp.status_code == 200, resp.text[:500]
    message = resp.json()["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    assert calls and calls[0]["function"]["name"] == "pick", message
    jsonschema.validate(json.loads(calls[0]["function"]["arguments"]), SCHEMA)
