"""Planning flags for features users turn on (issue 13): multimodal limits, LoRA, speculative
decoding, data / expert parallel. Parsed once here and applied to a PlanRequest."""

from __future__ import annotations

import json
from typing import Any

import typer

from vllmkit.errors import UsageError
from vllmkit.plan.models import PlanRequest

LIMIT_MM_OPTION = typer.Option(None, "--limit-mm-per-prompt",
                               help='JSON, e.g. \'{"image": 2, "video": 0}\'; all 0 = text-only.')
LANGUAGE_MODEL_ONLY_OPTION = typer.Option(False, "--language-model-only", help="Serve a VLM as text-only.")
ENABLE_LORA_OPTION = typer.Option(False, "--enable-lora")
MAX_LORAS_OPTION = typer.Option(None, "--max-loras", help="Adapters per batch (vLLM default 1).")
MAX_LORA_RANK_OPTION = typer.Option(None, "--max-lora-rank", help="vLLM default 16.")
MAX_CPU_LORAS_OPTION = typer.Option(None, "--max-cpu-loras")
SPECULATIVE_OPTION = typer.Option(None, "--speculative-config",
                                  help='JSON, e.g. \'{"method": "ngram", "num_speculative_tokens": 3}\'.')
DATA_PARALLEL_OPTION = typer.Option(None, "--data-parallel-size", "-dp", help="Replicas of the plan.")
EXPERT_PARALLEL_OPTION = typer.Option(False, "--enable-expert-parallel")


FEATURE_FIELDS = ("limit_mm_per_prompt", "language_model_only", "enable_lora", "max_loras", "max_lora_rank",
                  "max_cpu_loras", "speculative_config", "data_parallel_size", "enable_expert_parallel")


def _json_object(text: str | None, flag: str, example: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{flag} is not valid JSON ({exc.msg})", f"e.g. {flag} '{example}'") from None
    if not isinstance(value, dict):
        raise UsageError(f"{flag} must be a JSON object", f"e.g. {flag} '{example}'")
    return value


def apply_feature_flags(req: PlanRequest, *, limit_mm_per_prompt: str | None = None, language_model_only: bool = False,
                        enable_lora: bool = False, max_loras: int | None = None, max_lora_rank: int | None = None,
                        max_cpu_loras: int | None = None, speculative_config: str | None = None,
                        data_parallel_size: int | None = None, enable_expert_parallel: bool = False) -> PlanRequest:
    limits = _json_object(limit_mm_per_prompt, "--limit-mm-per-prompt", '{"image": 1}')
    if limits is not None:
        bad = [k for k, v in limits.items() if isinstance(v, bool) or not isinstance(v, (int, dict)) or
               (isinstance(v, int) and v < 0)]
        if bad:
            raise UsageError(f"--limit-mm-per-prompt: {bad[0]!r} needs a non-negative count", '{"image": 2, "video": 0}')
        limits = {k: (v if isinstance(v, int) else int(v.get("count", 999))) for k, v in limits.items()}
    spec = _json_object(speculative_config, "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}')
    if spec is not None and not (spec.get("method") or spec.get("model")):
        raise UsageError("--speculative-config needs a method (ngram, eagle, eagle3, mtp, draft_model) or a model",
                         '{"method": "ngram", "num_speculative_tokens": 3}')
    for flag, value in (("--max-loras", max_loras), ("--max-lora-rank", max_lora_rank),
                        ("--max-cpu-loras", max_cpu_loras), ("--data-parallel-size", data_parallel_size)):
        if value is not None and value <= 0:
            raise UsageError(f"{flag} must be a positive integer", f"e.g. {flag} 2")
    if (max_loras or max_lora_rank or max_cpu_loras) and not enable_lora:
        enable_lora = True  # vLLM ignores LoRA sizes without --enable-lora; the user clearly wants LoRA
    return req.model_copy(update={
        "limit_mm_per_prompt": limits, "language_model_only": language_model_only, "enable_lora": enable_lora,
        "max_loras": max_loras, "max_lora_rank": max_lora_rank, "max_cpu_loras": max_cpu_loras,
        "speculative_config": spec, "data_parallel_size": data_parallel_size,
        "enable_expert_parallel": enable_expert_parallel,
    })
