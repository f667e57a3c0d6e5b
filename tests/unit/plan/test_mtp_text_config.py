"""MTP layers declared inside a multimodal config's text_config (Qwen3.5), not at the top level.

vLLM reads Qwen3.5's `mtp_num_hidden_layers` from hf_text_config (vllm/config/speculative.py, the
qwen3_5 branch; Qwen3_5MTPModelArchConfigConvertor) and drops the checkpoint's "mtp." weights when no
MTP speculation is asked for (Qwen3_5ForConditionalGeneration.hf_to_vllm_mapper, {"mtp.": None} in
vllm/model_executor/models/qwen3_5.py). The configs below are the catalog's copies of the real
config.json files (aiconfigurator snapshots, cited in each catalog entry).
"""

from __future__ import annotations

import pytest

from vllmkit.engine.versions import rules_for
from vllmkit.hub.base import ModelMetadata
from vllmkit.hub.catalog import entry_to_metadata, find_entry
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan
from vllmkit.plan.variants import make_variant, mtp_layers, mtp_own_embeddings

ENV = {"VLLMKIT_NO_CALIBRATION": "1"}


def _meta(model_id: str) -> ModelMetadata:
    entry = find_entry(model_id)
    assert entry is not None
    return entry_to_metadata(entry)


def _mtp(model_id: str) -> tuple[int, bool]:
    meta = _meta(model_id)
    variant = make_variant(meta, rules_for("0.28.0"))
    return mtp_layers(variant.arch, meta), mtp_own_embeddings(meta)


@pytest.mark.parametrize(
    "model", ["Qwen/Qwen3.5-27B", "Qwen/Qwen3.5-35B-A3B", "Qwen/Qwen3.5-122B-A10B", "Qwen/Qwen3.5-397B-A17B"]
)
def test_qwen35_mtp_layer_read_from_text_config(model: str) -> None:
    meta = _meta(model)
    # the real config keeps it nested: nothing at the top level
    assert "mtp_num_hidden_layers" not in meta.config
    assert meta.config["text_config"]["mtp_num_hidden_layers"] == 1
    # one MTP layer, sharing the main embeddings (text_config.mtp_use_dedicated_embeddings false)
    assert _mtp(model) == (1, False)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("deepseek-ai/DeepSeek-V3", (1, True)),  # num_nextn_predict_layers 1, own embed + shared_head
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", (1, False)),  # top-level mtp_num_hidden_layers
        ("meta-llama/Llama-3.3-70B-Instruct", (0, True)),  # no MTP
        ("Qwen/Qwen3-VL-8B-Instruct", (0, True)),  # multimodal, no MTP in text_config
    ],
)
def test_top_level_and_absent_mtp_unchanged(model: str, expected: tuple[int, bool]) -> None:
    assert _mtp(model) == expected


def test_qwen35_27b_plan_drops_the_mtp_block() -> None:
    # Shape arithmetic of Qwen3.5-27B's MTP block (text_config: h 5120, 24 heads x 256 with the output
    # gate doubling q_proj, 4 KV heads, intermediate 17408): fc 2h*h + 2 pre-fc norms + one gated
    # full-attention layer (q 2*24*256*h, k/v 2*4*256*h, o 24*256*h, q/k norms 2*256) + MLP 3*h*17408
    # + 2 layer norms + final norm = 424,699,392 params = 849,398,784 B (BF16).
    h = 5120
    mtp_params = (2 * h * h + 2 * h + h * 24 * 256 * 2 + 2 * h * 4 * 256 + 24 * 256 * h + 2 * 256
                  + 3 * h * 17408 + 2 * h + h)
    assert mtp_params == 424_699_392
    served = 55_562_855_904 - 2 * mtp_params  # catalog weights_bytes less the block vLLM skips
    plan = build_plan(PlanRequest(model="Qwen/Qwen3.5-27B", source="catalog", gpu="h100", gpu_count=1), ENV)
    # the planner sizes the skipped layer as an average decoder layer + fc (split_weights), not by its
    # exact shapes: within 0.2 % of the served size, and below the whole checkpoint by > 1 %
    assert plan.memory.weights_bytes == pytest.approx(served, rel=0.002)
    assert plan.memory.weights_bytes < 55_562_855_904 * 0.99


def test_qwen35_mtp_speculation_loads_the_block() -> None:
    req = PlanRequest(model="Qwen/Qwen3.5-27B", source="catalog", gpu="h100", gpu_count=1)
    base = build_plan(req, ENV)
    spec = build_plan(req.model_copy(update={"speculative_config": {"method": "qwen3_5_mtp",
                                                                    "num_speculative_tokens": 1}}), ENV)
    # the MTP block comes back as the drafter's weights (~849 MB, see above), within 10 %
    assert spec.memory.speculative_bytes == pytest.approx(849_398_784, rel=0.10)
    assert spec.memory.weights_bytes == base.memory.weights_bytes


def test_linear_attention_layers_hold_a_state_block_per_draft_token() -> None:
    """With speculative decoding every recurrent layer keeps one more state block a request per draft token
    (MambaSpec.max_memory_usage_bytes: page x (1 + num_speculative_blocks), from the 0.15 wheel). A public
    DGX Spark start (benchmarks/data/collected-startup-logs-41.jsonl, sostrowsk/dgx-spark-local-llm qwen36.log)
    of Qwen3.6-35B-A3B with MTP, 3 draft tokens, on vLLM 0.25.1 printed "Available KV cache memory: 74.22 GiB",
    3,366,051 tokens and 12.84x for 262,144: its 10 + 1 (MTP) full-attention layers need 245 blocks of 1072
    tokens a request, its three linear-attention groups 1 + 3 each, 257 in all. Counting one state block per
    group (248) gave 13.30x."""
    req = PlanRequest(model="Qwen/Qwen3.6-35B-A3B", source="catalog", gpu="gb10", gpu_count=1,
                      vllm_version="0.25.1", max_model_len=262144, max_num_seqs=32,
                      kv_cache_memory_bytes=int(74.22 * 2**30),
                      speculative_config={"method": "mtp", "num_speculative_tokens": 3})
    plan = build_plan(req, ENV)
    assert plan.kv_cache.block_size == 1072
    assert plan.kv_cache.max_concurrency == pytest.approx(12.84, abs=0.005)
    # within one of its ~3,300 blocks: the log rounds the budget to 0.01 GiB (74.215 - 74.225 GiB is 3,299 - 3,300)
    assert plan.kv_cache.tokens == pytest.approx(3_366_051, rel=1 / 3300)
    # before 0.15 a request's state is one block whatever the drafter
    old = build_plan(req.model_copy(update={"vllm_version": "0.14.0"}), ENV)
    assert old.kv_cache.max_concurrency > 13.2
