"""LoRA and n-gram speculative decoding on the real vLLM CPU build (one server start).

The plan's serve flags (--enable-lora --max-loras --max-lora-rank, --speculative-config) must be
accepted by vLLM 0.32; the adapter must answer; n-gram proposals add no KV layers, so the KV
capacity vLLM prints must equal the plan's (the LoRA stacks and the n-gram proposer do not touch
a fixed --kv-cache-memory-bytes budget)."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.e2e.tiny import build_tiny_lora
from tests.e2e.vllm_proc import CAPACITY_RE, start_vllm
from vllmkit.launch.command import attach_serve_command
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("require_vllm")]

GIB = 1 << 30


def test_lora_and_ngram_flags_start_vllm_and_match_capacity(tiny_model_factory, tmp_path) -> None:
    model = tiny_model_factory("llama")
    adapter = build_tiny_lora(tmp_path / "adapter", model, rank=8)
    req = PlanRequest(model=str(model), source="local", device="cpu", kv_cache_memory_bytes=GIB, max_model_len=1024,
                      enable_lora=True, max_loras=2, max_lora_rank=8,
                      speculative_config={"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3})
    plan = attach_serve_command(build_plan(req, {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}), req)
    assert plan.memory.lora_bytes > 0 and plan.memory.speculative_bytes == 0
    flags = plan.serve_command[3:]  # after "vllm serve MODEL"
    # keep the plan's feature flags; host/port are chosen by the test harness
    keep: list[str] = []
    skip_next = False
    for i, tok in enumerate(flags):
        if skip_next:
            skip_next = False
            continue
        if tok in ("--host", "--port"):
            skip_next = True
            continue
        keep.append(tok)
        del i
    assert "--enable-lora" in keep and "--speculative-config" in keep
    args = [*keep, "--enforce-eager", "--lora-modules", f"tiny={adapter}"]
    with start_vllm(model, args) as server:
        server.wait("healthy", 600)
        m = CAPACITY_RE.search(server.log_text())
        assert m is not None, server.log_text()[-3000:]
        assert int(m.group(1).replace(",", "")) == plan.kv_cache.tokens
        body = json.dumps({"model": "tiny", "prompt": "hello hello hello", "max_tokens": 4}).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{server.port}/v1/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as resp:
            answer = json.loads(resp.read())
        assert answer["model"] == "tiny" and answer["choices"]


def test_draft_model_kv_layers_keep_their_own_shape(tiny_model_factory) -> None:
    """A separate draft model registers its attention layers in the target's KV pool at its own size
    (vLLM's draft_model proposer, supported by the CPU runner in 0.32): the target has 2 layers of
    1 KV head x 64, the drafter 3 layers of 2 KV heads x 64, so one token costs
    2 x 2 x 1 x 64 x 2 B + 3 x 2 x 2 x 64 x 2 B = 2,048 B, and 1 GiB holds 524,288 tokens (4,096
    blocks of 128). Before round 30 the plan gave the drafter's layers the target's head shape."""
    target = tiny_model_factory("llama")
    draft = tiny_model_factory("llama", num_hidden_layers=3, num_key_value_heads=2, num_attention_heads=4)
    spec = {"method": "draft_model", "model": str(draft), "num_speculative_tokens": 2}
    req = PlanRequest(model=str(target), source="local", device="cpu", kv_cache_memory_bytes=GIB,
                      max_model_len=1024, speculative_config=spec)
    plan = build_plan(req, {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"})
    assert plan.kv_cache.tokens == GIB // 2048 == 524_288
    assert plan.memory.speculative_bytes > 0
    with start_vllm(target, ["--enforce-eager", "--max-model-len", "1024", "--kv-cache-memory-bytes", str(GIB),
                             "--speculative-config", json.dumps(spec)]) as server:
        server.wait("healthy", 600)
        m = CAPACITY_RE.search(server.log_text())
        assert m is not None, server.log_text()[-3000:]
        assert int(m.group(1).replace(",", "")) == plan.kv_cache.tokens
