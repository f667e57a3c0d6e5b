"""TP/PP validation with vLLM's own rules (vllm 0.32.0: ModelConfig.verify_with_parallel_config,
QKVParallelLinear, VocabParallelEmbedding; see src/vllmkit/plan/validate.py for the lines)."""

from __future__ import annotations

import pytest

from vllmkit.arch import read_arch
from vllmkit.errors import ExitCode, UsageError
from vllmkit.hub.catalog import entry_to_metadata, find_entry
from vllmkit.plan.validate import accepted_tp_sizes, tp_problems, validate_parallelism


def arch_of(model_id: str):  # type: ignore[no-untyped-def]
    return read_arch(entry_to_metadata(find_entry(model_id)).config)


def cfg(heads: int, kv: int, vocab: int = 32000) -> dict:
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": heads * 64,
            "num_hidden_layers": 4, "num_attention_heads": heads, "num_key_value_heads": kv,
            "vocab_size": vocab, "max_position_embeddings": 4096}


# (heads, kv heads, vocab, tp, refused because ...) — each reason is the vLLM rule named in validate.py
CASES = [
    (32, 8, 151936, 3, ["attention heads (32)", "KV heads (8)", "vocabulary (151936"]),  # Qwen3-8B shapes
    (32, 8, 151936, 16, []),  # KV heads replicated 2x: 16 % 8 == 0 (QKVParallelLinear num_kv_head_replicas)
    (64, 8, 128256, 8, []),  # Llama-3.1-70B on 8 GPUs
    (24, 6, 32000, 4, ["KV heads (6)"]),  # 24 % 4 == 0 but 6 neither splits over 4 nor divides it
    (24, 8, 32001, 3, ["KV heads (8)"]),  # vocab padded to 32064, divisible by 3
    (48, 48, 32001, 3, []),  # vocab 32001 pads to 32064 = 3 x 10688
    (48, 48, 32000, 3, ["vocabulary (32000, padded to 32000)"]),  # 32000 % 3 != 0
]


@pytest.mark.parametrize(("heads", "kv", "vocab", "tp", "reasons"), CASES)
def test_tp_rules(heads: int, kv: int, vocab: int, tp: int, reasons: list[str]) -> None:
    problems = tp_problems(read_arch(cfg(heads, kv, vocab)), tp)
    assert len(problems) == len(reasons), problems
    for reason, problem in zip(reasons, problems, strict=True):
        assert reason in problem


def test_qwen3_8b_tp3_is_refused_naming_each_rule_and_the_valid_sizes() -> None:
    arch = arch_of("Qwen/Qwen3-8B")
    with pytest.raises(UsageError) as err:
        validate_parallelism(arch, tp=3, pp=None, gpu_count=8, gpus_per_node=8, device="nvidia")
    assert err.value.exit_code == ExitCode.USAGE and err.value.code == "invalid-tensor-parallel-size"
    assert "attention heads (32)" in err.value.message and "KV heads (8)" in err.value.message
    assert err.value.hint == "valid TP sizes up to 8: 1, 2, 4, 8"
    assert accepted_tp_sizes(arch, 8) == [1, 2, 4, 8]


def test_more_gpus_than_gpu_count() -> None:
    with pytest.raises(UsageError) as err:
        validate_parallelism(arch_of("Qwen/Qwen3-8B"), tp=16, pp=None, gpu_count=8, gpus_per_node=8, device="nvidia")
    assert err.value.code == "too-many-gpus" and "16 GPUs" in err.value.message
    with pytest.raises(UsageError):
        validate_parallelism(arch_of("Qwen/Qwen3-8B"), tp=4, pp=4, gpu_count=8, gpus_per_node=8, device="nvidia")


def test_mla_counts_query_heads_only() -> None:
    arch = arch_of("deepseek-ai/DeepSeek-V3")  # 128 heads, one latent KV "head" on every rank
    assert tp_problems(arch, 16) == []
    assert validate_parallelism(arch, tp=16, pp=2, gpu_count=32, gpus_per_node=8, device="nvidia") is None


def test_planner_choice_needs_no_validation() -> None:
    assert validate_parallelism(arch_of("Qwen/Qwen3-8B"), tp=None, pp=None, gpu_count=1, gpus_per_node=8,
                                device="nvidia") is None


def test_cpu_tp_or_pp_is_a_usage_error_not_a_crash() -> None:
    # the planner evaluates one CPU device (the host's RAM) and skips every TP x PP > 1 option on it, so an
    # explicit --pipeline-parallel-size 2 with --gpu cpu left it no candidate at all: ValueError from min(),
    # exit 1 (found by a plan sweep over flags x GPUs, round 26)
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    for tp, pp in ((2, None), (None, 2)):
        with pytest.raises(UsageError) as err:
            build_plan(PlanRequest(model="google/gemma-3-27b-it", source="catalog", gpu="cpu",
                                   tensor_parallel_size=tp, pipeline_parallel_size=pp), {"VLLMKIT_NO_CALIBRATION": "1"})
        assert err.value.code == "cpu-parallelism" and err.value.exit_code == ExitCode.USAGE
    plan = build_plan(PlanRequest(model="Qwen/Qwen3-8B", source="catalog", gpu="cpu", tensor_parallel_size=1),
                      {"VLLMKIT_NO_CALIBRATION": "1"})
    assert plan.parallel.tensor_parallel_size == 1
