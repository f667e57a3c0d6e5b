"""A plan's serving features: the model family's tool-call and reasoning parsers (turned into
`vllm serve` flags), chat-template and sampling advice, and the prefix-caching / chunked-prefill /
structured-output facts shown by `plan`; what `serve`'s smoke test checks.

The preset table (profiles/presets/*.yaml) and the reader of the installed vLLM's parser
registries live in engine/presets.py (doctor reads them too). vLLM refuses to start with an
unknown parser name ("invalid tool call parser"), so a name the installed registry lacks is
dropped with a warning instead of being passed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vllmkit.engine.flags import Flag
from vllmkit.engine.presets import (  # the table lives in engine/ (doctor reads it too)
    ENABLE_REASONING_UNTIL,
    REASONING_FIELD_RENAMED,
    ParserRegistry,
    Preset,
    PresetError,
    _first,
    find_preset,
    installed_registry,
    load_presets,
    parse_presets,
    read_registry,
)
from vllmkit.engine.versions import parse_version, rules_for
from vllmkit.plan.models import FeatureNote, FeaturesInfo, ParserPick, PlanRequest, PlanResult

if TYPE_CHECKING:  # smoke loads the HTTP client: only serve needs it
    from vllmkit.launch.smoke import SmokeFeatures


def model_name(plan: PlanResult) -> str:
    """What name patterns are matched against: the hub id, or a local folder's name."""
    if plan.model.source == "local" and plan.model.path:
        return Path(plan.model.path).name
    return plan.model.id


# ---------------------------------------------------------------------------------------------
# features for a plan


_AUTO = object()


def _pick(
    name: str | None, enabled: bool, known: frozenset[str] | None, registry: ParserRegistry | None, what: str,
    warnings: list[str],
) -> ParserPick | None:
    if name is None:
        return None
    if registry is not None and known is not None:
        if name not in known:
            warnings.append(
                f"the {what} parser {name!r} of this model's preset is not registered in the installed "
                f"{registry.label}: not enabled (known: {', '.join(sorted(known)[:12])}…)"
            )
            return ParserPick(name=name, enabled=False, checked=f"missing from {registry.label}")
        return ParserPick(name=name, enabled=enabled, checked=f"installed {registry.label} registry")
    return ParserPick(name=name, enabled=enabled, checked="preset table")


def _prefix_caching_note(plan: PlanResult, req: PlanRequest) -> FeatureNote:
    on = plan.settings.enable_prefix_caching
    source = (
        "--enable-prefix-caching" if req.enable_prefix_caching is True
        else "--no-enable-prefix-caching" if req.enable_prefix_caching is False
        else "vLLM default"
    )  # fmt: skip
    rules = rules_for(plan.vllm_version)
    if not on:
        why = ""
        if source == "vLLM default" and plan.kv_cache.state_only:
            why = " (vLLM does not support it for attention-free models)"
        elif source == "vLLM default" and plan.model.is_hybrid and rules.mamba_align_mode:
            # 0.15 - 0.25: off by default for hybrids, the align mode on request (engine/versions.py)
            why = (" (vLLM's default for hybrid models before 0.26; --enable-prefix-caching turns it on in the mamba "
                   "'align' mode, two state blocks per request)")
        elif plan.model.is_hybrid and (source == "vLLM default" or req.enable_prefix_caching is True):
            # before 0.15: switched off even when asked for (plan/candidates.py hybrid_prefix_caching_refused)
            why = " (vLLM turns it off for this hybrid model in this version, even when asked for)"
        detail = (
            f"off{why}: every request prefills its whole prompt, even a system prompt shared with the "
            "previous request"
        )
    else:
        detail = (
            "on: full KV blocks are hashed and reused by later requests with the same prefix (shared "
            "system prompts, multi-turn chats, few-shot examples); a hit skips that part of the prefill, "
            "which lowers TTFT. Cached blocks are free blocks kept until evicted, so it costs no KV capacity"
        )
        if plan.performance is not None and plan.performance.workload.get("dataset", "fixed") == "fixed":
            detail += (
                "; the throughput predicted here assumes no cache hits (random prompts, as `vllm bench "
                "serve --dataset-name random`): prompts sharing a system prompt prefill only the rest"
            )
        if plan.model.is_hybrid:
            detail += (
                "; for this hybrid (mamba/linear-attention) model it switches the state cache to "
                "'align' mode, which keeps 2-3 state pages per request instead of 1 (counted in this plan)"
            )
        if not rules.v1_engine:
            detail += "; before the V1 engine (vLLM < 0.8) it is off unless --enable-prefix-caching is passed"
    return FeatureNote(enabled=on, source=source, detail=detail)


def _chunked_prefill_note(plan: PlanResult) -> FeatureNote:
    budget = plan.settings.max_num_batched_tokens
    mml = plan.settings.max_model_len
    steps = max(1, math.ceil(mml / budget)) if budget > 0 else 1
    if plan.settings.engine == "v0" and not plan.settings.chunked_prefill:
        # the old engine without chunked prefill (vLLM < 0.8 turned it on only for contexts over 32K)
        return FeatureNote(enabled=False, source="the old engine (V0)", detail=(
            f"off: vLLM {plan.vllm_version} runs this plan on its old engine (V0), whose scheduler prefills each "
            f"waiting prompt whole, in a step of its own before the running decodes continue; "
            f"max_num_batched_tokens = {budget:,} (at least max_model_len) bounds such a step, and the profile "
            "run that sizes the activation memory in this plan uses all of it. --enable-chunked-prefill splits "
            "prompts (and lowers that peak) at the cost of mixing them with decodes"))
    engine = "the old engine's (V0) chunked prefill splits" if plan.settings.engine == "v0" else \
        "the V1 scheduler always splits"
    detail = (
        f"{engine} prefills: at most max_num_batched_tokens = {budget:,} tokens "
        f"per step, shared between running decodes and prompt chunks. A {mml:,}-token prompt takes "
        f"{steps} step(s). A larger budget shortens TTFT for long prompts but makes each step longer "
        "(running decodes wait: higher inter-token latency); a smaller one does the opposite. The "
        "activation memory in this plan is sized for this budget"
    )
    workload = plan.performance.workload if plan.performance is not None else {}
    prompt = workload.get("input_len")
    if isinstance(prompt, (int, float)) and prompt > 0:
        prompt_steps = max(1, math.ceil(prompt / budget)) if budget > 0 else 1
        detail += f". Your workload's {int(prompt):,}-token prompts take {prompt_steps} step(s) each"
        if prompt_steps > 1:
            detail += (
                f": --max-num-batched-tokens {int(math.ceil(prompt / 1024) * 1024):,} would prefill one in a "
                "single step (lower TTFT, longer decode steps while it runs; re-plan: activation memory grows)"
            )
    return FeatureNote(enabled=True, source="--max-num-batched-tokens", detail=detail)


def _structured_note(plan: PlanResult) -> FeatureNote:
    return FeatureNote(
        enabled=True,
        source="vLLM default",
        detail=(
            "response_format {type: json_schema | json_object} and tool_choice 'required' / a named "
            "function are decoded under a grammar (xgrammar by default, guidance as fallback), so the "
            "output follows the schema; no flag is needed"
        ),
    )


def plan_features(
    plan: PlanResult, req: PlanRequest, *, registry: Any = _AUTO, presets: Iterable[Preset] | None = None,
    generation_config_vllm: bool = False,
) -> FeaturesInfo:
    """The features block of a plan. `registry`: a ParserRegistry, None (do not check), or the
    default (the installed vLLM's, when it is the planned version)."""
    reg: ParserRegistry | None = installed_registry(plan.vllm_version) if registry is _AUTO else registry
    version = plan.vllm_version
    preset = find_preset(plan.model.model_type, plan.model.architecture, model_name(plan), presets)
    warnings: list[str] = []
    info = FeaturesInfo(
        prefix_caching=_prefix_caching_note(plan, req),
        chunked_prefill=_chunked_prefill_note(plan),
        structured_outputs=_structured_note(plan),
    )
    if preset is None:
        return info
    info.family = preset.family
    info.tool_call_parser = _pick(
        preset.tool_parser(version), req.tools, reg.tool_parsers if reg else None, reg, "tool-call", warnings
    )
    info.reasoning_parser = _pick(
        preset.reasoning(version), req.reasoning, reg.reasoning_parsers if reg else None, reg, "reasoning", warnings
    )
    if info.reasoning_parser is not None:
        info.reasoning_field = "reasoning" if parse_version(version) >= REASONING_FIELD_RENAMED else "reasoning_content"
    for choices, what in ((preset.tool_call_parser, "tool-call"), (preset.reasoning_parser, "reasoning")):
        if choices and _first(choices, version) is None:
            warnings.append(
                f"vLLM {version} predates the {what} parser of the {preset.family} preset "
                f"({', '.join(f'{c.name} from {c.since}' for c in choices)}): not enabled"
            )
    info.chat_template = preset.chat_template
    info.tokenizer_mode = preset.tokenizer_mode
    info.thinking_on_kwargs = preset.thinking_on_kwargs
    info.thinking_off_kwargs = preset.thinking_off_kwargs
    info.generation_config = preset.generation_config
    info.notes = list(preset.notes)
    if preset.chat_template and info.tool_call_parser is not None:
        info.notes.append(
            f"vLLM's docs pair this parser with --chat-template {preset.chat_template} (from the vLLM "
            "source tree at the matching release tag; the wheel does not ship examples/): pass it with "
            "--vllm-arg if the model's own template does not render tools"
        )
    if generation_config_vllm and preset.generation_config:
        warnings.append(
            "--generation-config vllm drops the sampling defaults the model ships: " + preset.generation_config
        )
    info.sources = list(preset.sources)
    info.warnings = warnings
    return info


def feature_flags(plan: PlanResult, req: PlanRequest) -> list[Flag]:
    """`vllm serve` flags for the plan's enabled parsers (none when the plan has no features block,
    e.g. a plan saved before presets existed, or --no-tools / --no-reasoning)."""
    f = plan.features
    if f is None:
        return []
    out: list[Flag] = []
    tool = f.tool_call_parser
    if tool is not None and tool.enabled and req.tools:
        out += [Flag(name="--enable-auto-tool-choice"), Flag(name="--tool-call-parser", value=tool.name)]
    reasoning = f.reasoning_parser
    if reasoning is not None and reasoning.enabled and req.reasoning:
        if parse_version(plan.vllm_version) < ENABLE_REASONING_UNTIL:
            out.append(Flag(name="--enable-reasoning"))
        out.append(Flag(name="--reasoning-parser", value=reasoning.name))
    return out


def smoke_features(plan: PlanResult, req: PlanRequest) -> SmokeFeatures | None:
    """What `serve` smoke-tests beyond plain chat: structured outputs always (no flag needed), the
    tool call and the reasoning field when their parsers are turned on."""
    from vllmkit.launch.smoke import SmokeFeatures

    f = plan.features
    if f is None:
        return None
    return SmokeFeatures(
        structured=True,
        tools=bool(f.tool_call_parser and f.tool_call_parser.enabled and req.tools),
        reasoning=bool(f.reasoning_parser and f.reasoning_parser.enabled and req.reasoning),
        thinking_on_kwargs=f.thinking_on_kwargs,
        thinking_off_kwargs=f.thinking_off_kwargs,
    )


__all__ = [
    "ParserRegistry",
    "Preset",
    "PresetError",
    "feature_flags",
    "find_preset",
    "installed_registry",
    "load_presets",
    "parse_presets",
    "plan_features",
    "read_registry",
    "smoke_features",
]
