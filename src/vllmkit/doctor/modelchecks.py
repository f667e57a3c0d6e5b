"""Model checks: the things about a checkpoint that change how vLLM serves it.

- chat template (tokenizer_config.json `chat_template`, or chat_template.jinja/.json): without one,
  /v1/chat/completions answers HTTP 400 "As of transformers v4.44, default chat template is no longer
  allowed ..." (reference §4) and llm.generate() never applies one anyway (seed 000: "Chat 模型必须用
  chat template").
- base vs instruct (name, then template), and the advice that follows.
- generation_config.json values vLLM applies as request defaults: repetition_penalty,
  presence_penalty, frequency_penalty, temperature, top_k, top_p, min_p, max_new_tokens (as
  max_tokens) - vllm/config/model.py get_diff_sampling_param (0.32); `--generation-config vllm`
  turns that off.
- auto_map in config.json -> --trust-remote-code.
- native context length (arch reader: the keys and rope scaling vLLM uses).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from vllmkit.doctor.envchecks import Check
from vllmkit.hub.base import ModelMetadata

# vllm/config/model.py get_diff_sampling_param (0.32.0): the generation_config.json keys it applies
VLLM_APPLIED_GENERATION_KEYS = (
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "max_new_tokens",
)

ModelKind = Literal["instruct", "base", "unknown"]

_INSTRUCT_NAME = re.compile(
    r"(instruct|[-_.]it\b|(?:^|[-_.])chat|rlhf|(?:^|[-_.])dpo\b|[-_.]sft\b|assistant|thinking|[-_.]r1\b|[-_.]distill)", re.I
)
_BASE_NAME = re.compile(r"([-_.]base\b|[-_.]pt\b|[-_.]pretrain)", re.I)


def applied_generation_params(generation_config: dict[str, Any] | None) -> dict[str, Any]:
    if not generation_config:
        return {}
    out: dict[str, Any] = {}
    for key in VLLM_APPLIED_GENERATION_KEYS:
        value = generation_config.get(key)
        if value is not None:
            out["max_tokens" if key == "max_new_tokens" else key] = value
    return out


def model_kind(meta: ModelMetadata) -> tuple[ModelKind, str]:
    """(kind, why). Names decide first (authors label their checkpoints), then the template."""
    name = meta.id.rstrip("/").split("/")[-1]
    if _BASE_NAME.search(name):
        return "base", f"the name {name!r} marks a base (pretrained) checkpoint"
    if _INSTRUCT_NAME.search(name):
        return "instruct", f"the name {name!r} marks an instruction/chat-tuned checkpoint"
    if meta.has_chat_template:
        return "instruct", "it ships a chat template (base checkpoints sometimes do too)"
    if meta.has_chat_template is False:
        return "base", "no chat template and no chat/instruct marker in the name"
    return "unknown", "the name and files do not say"


def _chat_template_source(meta: ModelMetadata) -> str | None:
    if meta.tokenizer_config and meta.tokenizer_config.get("chat_template"):
        return "tokenizer_config.json"
    names = {f.name.split("/")[-1] for f in meta.files}
    for candidate in ("chat_template.jinja", "chat_template.json"):
        if candidate in names:
            return candidate
    return "model files" if meta.has_chat_template else None


_OFFLINE = "not checked: the offline catalog has no tokenizer/generation files (run online or on a local folder)"


def check_chat_template(meta: ModelMetadata, kind: ModelKind) -> Check:
    source = _chat_template_source(meta)
    if not source and meta.source == "catalog":
        return Check(name="chat-template", status="ok", detail=_OFFLINE)
    if source:
        return Check(name="chat-template", status="ok", detail=f"chat template in {source}", data={"source": source})
    if meta.has_chat_template is None and meta.tokenizer_config is None:
        return Check(name="chat-template", status="warn", detail="could not read the tokenizer files", data={})
    detail = (
        "no chat template (tokenizer_config.json has no chat_template, no chat_template.jinja): "
        "/v1/chat/completions and llm.chat() fail with HTTP 400 \"default chat template is no longer allowed\""
    )
    if kind == "instruct":
        return Check(
            name="chat-template",
            status="fail",
            code="chat-template-missing",
            detail=detail,
            fix="This looks like a chat model: pass the template it was trained with, --chat-template template.jinja "
            "(from the original repository or the model card).",
        )
    return Check(
        name="chat-template",
        status="warn",
        code="chat-template-missing",
        detail=detail,
        fix="For a base model send plain prompts to /v1/completions (llm.generate); for chat use "
        "--chat-template template.jinja.",
    )


def check_kind(meta: ModelMetadata, kind: ModelKind, why: str) -> Check:
    if kind == "instruct":
        advice = (
            "use /v1/chat/completions (or llm.chat()); llm.generate() and /v1/completions send raw text "
            "without the template and chat models answer poorly to that"
        )
    elif kind == "base":
        advice = "use /v1/completions (or llm.generate()) with plain prompts; a base model does not follow chat turns"
    else:
        advice = "check the model card for whether it is chat-tuned"
    return Check(name="model-kind", status="ok", detail=f"{kind}: {why}; {advice}", data={"kind": kind, "advice": advice})


def check_generation_config(meta: ModelMetadata) -> Check:
    params = applied_generation_params(meta.generation_config)
    if not params and meta.source == "catalog" and meta.generation_config is None:
        return Check(name="generation-config", status="ok", detail=_OFFLINE)
    if not params:
        detail = (
            "no generation_config.json" if meta.generation_config is None else "generation_config.json sets no sampling defaults"
        )
        return Check(name="generation-config", status="ok", detail=f"{detail}: vLLM's own sampling defaults apply")
    shown = ", ".join(f"{k}={v}" for k, v in params.items())
    return Check(
        name="generation-config",
        status="ok",
        code="generation-config-override",
        detail=f"vLLM applies these from generation_config.json to requests that do not set them: {shown}",
        fix="Usually what the authors intend; start with --generation-config vllm to use vLLM's defaults instead.",
        data={"params": params},
    )


def check_remote_code(meta: ModelMetadata) -> Check:
    auto_map = meta.config.get("auto_map") if isinstance(meta.config, dict) else None
    if not auto_map:
        return Check(name="trust-remote-code", status="ok", detail="no custom code (no auto_map in config.json)")
    classes = ", ".join(sorted({str(v) if not isinstance(v, list) else str(v[0]) for v in auto_map.values()}))
    return Check(
        name="trust-remote-code",
        status="warn",
        code="trust-remote-code",
        detail=f"config.json auto_map points at custom code: {classes}",
        fix="Review that code, then start with --trust-remote-code (vLLM uses its own implementation when it knows "
        "the architecture, but transformers may still need the custom config/tokenizer classes).",
        data={"auto_map": auto_map},
    )


def check_context(meta: ModelMetadata) -> Check:
    from vllmkit.arch.reader import read_arch
    from vllmkit.errors import ConfigError

    try:
        arch = read_arch(meta.config, tokenizer_config=meta.tokenizer_config)
    except ConfigError as exc:
        return Check(name="context", status="warn", detail=f"cannot read the architecture: {exc.message}")
    native = arch.native_max_model_len
    return Check(
        name="context",
        status="ok",
        detail=f"native context {native:,} tokens ({arch.native_max_model_len_key}); a larger --max-model-len fails "
        "with \"User-specified max_model_len ... is greater than the derived max_model_len\"",
        data={"native_max_model_len": native, "key": arch.native_max_model_len_key},
    )


def _template_text(meta: ModelMetadata) -> str | None:
    tc = meta.tokenizer_config or {}
    template = tc.get("chat_template")
    if isinstance(template, list):  # named templates: [{"name": "default", "template": "..."}, ...]
        template = " ".join(str(t.get("template", "")) for t in template if isinstance(t, dict))
    return template if isinstance(template, str) and template else None


def check_serving_features(meta: ModelMetadata, version: str | None = None) -> Check:
    """Issue 14: the model family's tool-call / reasoning parsers (profiles/presets), whether the
    installed vLLM registers them, and whether the chat template renders `tools` at all."""
    from vllmkit.engine.presets import find_preset, installed_registry
    from vllmkit.engine.versions import resolve_version

    cfg = meta.config if isinstance(meta.config, dict) else {}
    model_type = str(cfg.get("model_type") or "")
    arch = str((cfg.get("architectures") or [""])[0])
    name = meta.id.rstrip("/").split("/")[-1] if meta.source == "local" else meta.id
    preset = find_preset(model_type, arch, name)
    if preset is None:
        return Check(name="serving-features", status="ok",
                     detail="no tool-call / reasoning preset for this model family: tool calls and reasoning are not parsed")  # fmt: skip
    version = version or resolve_version(None)[0]
    tool, reasoning = preset.tool_parser(version), preset.reasoning(version)
    flags = ([f"--enable-auto-tool-choice --tool-call-parser {tool}"] if tool else []) + (
        [f"--reasoning-parser {reasoning}"] if reasoning else []
    )
    data = {"family": preset.family, "tool_call_parser": tool, "reasoning_parser": reasoning, "sources": preset.sources}
    problems: list[str] = []
    registry = installed_registry(version)
    if registry is not None:
        problems += [f"{n!r} is not registered in the installed {registry.label}" for n in (tool,) if n and n not in registry.tool_parsers]
        problems += [f"{n!r} is not registered in the installed {registry.label}" for n in (reasoning,) if n and n not in registry.reasoning_parsers]
    template = _template_text(meta)
    if tool and template is not None and "tools" not in template:
        problems.append("the chat template never mentions `tools`: tool definitions will not reach the model")
    detail = (
        f"{preset.family}: {' '.join(flags) if flags else 'no parser for vLLM ' + version}; `vllmkit serve` turns "
        "these on (--no-tools / --no-reasoning to opt out); a plain `vllm serve` returns tool calls as text and "
        "reasoning inline"
    )
    if problems:
        fix = (f"pass --chat-template {preset.chat_template} (vLLM's examples/ at the matching tag)"
               if preset.chat_template else "see the model card for a template with tool support")  # fmt: skip
        return Check(name="serving-features", status="warn", code="serving-features", detail=detail + "; " + "; ".join(problems),
                     fix=fix, data=data)  # fmt: skip
    return Check(name="serving-features", status="ok", detail=detail, data=data)


def run_model_checks(meta: ModelMetadata) -> list[Check]:
    kind, why = model_kind(meta)
    return [
        check_kind(meta, kind, why),
        check_chat_template(meta, kind),
        check_generation_config(meta),
        check_remote_code(meta),
        check_context(meta),
        check_serving_features(meta),  # issue 14
    ]
