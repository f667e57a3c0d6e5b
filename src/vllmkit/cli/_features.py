"""Planning flags for features users turn on (issue 13): multimodal limits, LoRA, speculative
decoding, data / expert parallel. Declared with the other planning options (cli/options.py); parsed
and checked here into PlanRequest fields."""

from __future__ import annotations

import json
from typing import Any

from vllmkit.errors import UsageError

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


# vLLM's SpeculativeMethod (vllm/config/speculative.py, 0.8 - 0.32) and the methods that load a
# separate checkpoint named by "model" (EAGLE heads, draft models, Medusa / MLP speculators, DFlash)
SPECULATIVE_METHODS = ("ngram", "ngram_gpu", "suffix", "medusa", "mlp_speculator", "draft_model", "eagle", "eagle3",
                       "mtp", "dflash", "dspark", "custom_class", "extract_hidden_states")
METHODS_WITH_A_MODEL = ("eagle", "eagle3", "draft_model", "medusa", "mlp_speculator", "dflash")
_SPEC_EXAMPLE = '{"method": "ngram", "num_speculative_tokens": 3}'


def check_speculative(spec: dict[str, Any]) -> None:
    """Refuse what vLLM's SpeculativeConfig refuses at start-up: no method and no model, a method it
    does not know, a model-based method without its checkpoint, a token count that is not >= 1."""
    method, model = spec.get("method"), spec.get("model")
    if not (method or model):
        raise UsageError("--speculative-config needs a method (ngram, eagle, eagle3, mtp, draft_model) or a model",
                         _SPEC_EXAMPLE)
    if method is not None and (not isinstance(method, str) or
                               not (method in SPECULATIVE_METHODS or method.endswith("_mtp"))):
        raise UsageError(f"--speculative-config: unknown method {str(method)!r}",
                         "use one of: " + ", ".join(SPECULATIVE_METHODS) + " (or a model's *_mtp)")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise UsageError("--speculative-config: \"model\" must be a repository id or a folder", _SPEC_EXAMPLE)
    if method in METHODS_WITH_A_MODEL and not model:
        raise UsageError(f"--speculative-config: method {method!r} needs \"model\", the repository of its "
                         "draft / head checkpoint",
                         '\'{"method": "eagle3", "model": "org/eagle3-head", "num_speculative_tokens": 3}\'')
    n = spec.get("num_speculative_tokens")
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise UsageError("--speculative-config: num_speculative_tokens must be a positive integer", _SPEC_EXAMPLE)


def parse_features(*, limit_mm_per_prompt: str | None = None, language_model_only: bool | None = None,
                   enable_lora: bool | None = None, max_loras: int | None = None, max_lora_rank: int | None = None,
                   max_cpu_loras: int | None = None, speculative_config: str | None = None,
                   data_parallel_size: int | None = None, enable_expert_parallel: bool | None = None) -> dict[str, Any]:
    """The given feature flags as PlanRequest fields (usage errors, exit 2, on bad values)."""
    out: dict[str, Any] = {}
    limits = _json_object(limit_mm_per_prompt, "--limit-mm-per-prompt", '{"image": 1}')
    if limits is not None:
        def count(v: Any) -> Any:  # vLLM's legacy form is a count, the configurable one {"count": N, ...}
            return v.get("count", 999) if isinstance(v, dict) else v

        bad = [k for k, v in limits.items()
               if isinstance(count(v), bool) or not isinstance(count(v), int) or count(v) < 0]
        if bad:
            raise UsageError(f"--limit-mm-per-prompt: {bad[0]!r} needs a non-negative count", '{"image": 2, "video": 0}')
        out["limit_mm_per_prompt"] = {k: count(v) for k, v in limits.items()}
        options = {k: v for k, v in limits.items() if isinstance(v, dict)}
        if options:
            out["limit_mm_options"] = options
    spec = _json_object(speculative_config, "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}')
    if spec is not None:
        check_speculative(spec)
        out["speculative_config"] = spec
    for flag, name, value in (("--max-loras", "max_loras", max_loras), ("--max-lora-rank", "max_lora_rank", max_lora_rank),
                              ("--max-cpu-loras", "max_cpu_loras", max_cpu_loras),
                              ("--data-parallel-size", "data_parallel_size", data_parallel_size)):
        if value is None:
            continue
        if value <= 0:
            raise UsageError(f"{flag} must be a positive integer", f"e.g. {flag} 2")
        out[name] = value
    if enable_lora or max_loras or max_lora_rank or max_cpu_loras:
        out["enable_lora"] = True  # LoRA sizes mean nothing without --enable-lora; the user wants LoRA
    if language_model_only:
        out["language_model_only"] = True
    if enable_expert_parallel:
        out["enable_expert_parallel"] = True
    return out
