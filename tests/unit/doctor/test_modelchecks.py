"""Model checks on ModelMetadata: chat template, base vs instruct, generation_config defaults vLLM applies,
auto_map -> --trust-remote-code, native context."""

from __future__ import annotations

from vllmkit.doctor.modelchecks import applied_generation_params, model_kind, run_model_checks
from vllmkit.hub.base import FileInfo, ModelMetadata

LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "vocab_size": 128256,
    "torch_dtype": "bfloat16",
}


def meta(model_id: str, **kw) -> ModelMetadata:
    base = {"id": model_id, "source": "hf", "config": LLAMA_CONFIG}
    base.update(kw)
    return ModelMetadata(**base)


def checks(m: ModelMetadata) -> dict:
    return {c.name: c for c in run_model_checks(m)}


def test_instruct_model_with_template_and_generation_config() -> None:
    # Llama-3.1-8B-Instruct's generation_config.json sets temperature 0.6, top_p 0.9 (plus token ids vLLM ignores here)
    m = meta(
        "meta-llama/Llama-3.1-8B-Instruct",
        tokenizer_config={"chat_template": "{% for m in messages %}...{% endfor %}"},
        has_chat_template=True,
        generation_config={"bos_token_id": 128000, "do_sample": True, "eos_token_id": [128001, 128009],
                           "temperature": 0.6, "top_p": 0.9},
    )
    c = checks(m)
    assert c["model-kind"].data["kind"] == "instruct" and "chat/completions" in c["model-kind"].detail
    assert c["chat-template"].status == "ok" and "tokenizer_config.json" in c["chat-template"].detail
    gen = c["generation-config"]
    assert gen.data["params"] == {"temperature": 0.6, "top_p": 0.9}
    assert "--generation-config vllm" in (gen.fix or "")
    assert c["trust-remote-code"].status == "ok"
    assert c["context"].data["native_max_model_len"] == 131072


def test_chat_model_without_template_fails() -> None:
    m = meta("someone/Mistral-7B-Instruct-v0.3-repack", tokenizer_config={"model_max_length": 32768},
             has_chat_template=False)
    c = checks(m)["chat-template"]
    assert c.status == "fail" and c.code == "chat-template-missing" and "--chat-template" in (c.fix or "")


def test_base_model_without_template_warns() -> None:
    m = meta("meta-llama/Meta-Llama-3-8B", tokenizer_config={}, has_chat_template=False)
    c = checks(m)
    assert c["model-kind"].data["kind"] == "base"
    assert c["chat-template"].status == "warn" and "/v1/completions" in (c["chat-template"].fix or "")


def test_template_file_counts() -> None:
    m = meta("org/x", tokenizer_config={}, has_chat_template=True, files=[FileInfo(name="chat_template.jinja", size=10)])
    assert checks(m)["chat-template"].detail == "chat template in chat_template.jinja"


def test_auto_map_needs_trust_remote_code() -> None:
    cfg = {**LLAMA_CONFIG, "auto_map": {"AutoConfig": "configuration_x.XConfig", "AutoModelForCausalLM": "modeling_x.XForCausalLM"}}
    c = checks(meta("org/custom", config=cfg, tokenizer_config={}, has_chat_template=False))["trust-remote-code"]
    assert c.status == "warn" and c.code == "trust-remote-code" and "--trust-remote-code" in (c.fix or "")


def test_applied_generation_params_renames_max_new_tokens() -> None:
    # vllm/config/model.py get_diff_sampling_param: max_new_tokens -> max_tokens; other keys ignored
    assert applied_generation_params({"max_new_tokens": 512, "do_sample": True, "top_k": 20, "repetition_penalty": 1.05}) == {
        "top_k": 20, "repetition_penalty": 1.05, "max_tokens": 512}
    assert applied_generation_params(None) == {}


def test_model_kind_names() -> None:
    assert model_kind(meta("Qwen/Qwen2.5-7B-Instruct"))[0] == "instruct"
    assert model_kind(meta("google/gemma-3-27b-it"))[0] == "instruct"
    assert model_kind(meta("Qwen/Qwen3-8B-Base"))[0] == "base"
    assert model_kind(meta("/tmp/tiny_nochat", has_chat_template=False))[0] == "base"  # "nochat" is not "chat"
    assert model_kind(meta("Qwen/Qwen3-8B", has_chat_template=True))[0] == "instruct"


def test_unreadable_config_is_a_warning() -> None:
    c = checks(meta("org/broken", config={"model_type": "llama"}))["context"]
    assert c.status == "warn"


def test_offline_catalog_does_not_claim_missing_files() -> None:
    c = checks(ModelMetadata(id="Qwen/Qwen3-8B", source="catalog", config=LLAMA_CONFIG))
    assert c["chat-template"].status == "ok" and "not checked" in c["chat-template"].detail
    assert "not checked" in c["generation-config"].detail


def test_serving_features_name_the_family_parsers() -> None:
    """Issue 14: Llama 3.1 Instruct -> llama3_json (vLLM docs "Tool Calling")."""
    from vllmkit.doctor.modelchecks import check_serving_features

    tools_template = "{% if tools %}{{ tools | tojson }}{% endif %}{% for m in messages %}...{% endfor %}"
    m = meta("meta-llama/Llama-3.1-8B-Instruct", tokenizer_config={"chat_template": tools_template})
    c = check_serving_features(m, "0.32.0")
    assert c.status == "ok" and c.data["tool_call_parser"] == "llama3_json" and c.data["reasoning_parser"] is None
    assert "--tool-call-parser llama3_json" in c.detail


def test_serving_features_warn_when_the_template_ignores_tools() -> None:
    from vllmkit.doctor.modelchecks import check_serving_features

    m = meta("meta-llama/Llama-3.1-8B-Instruct", tokenizer_config={"chat_template": "{% for m in messages %}{% endfor %}"})
    c = check_serving_features(m, "0.32.0")
    assert c.status == "warn" and "never mentions `tools`" in c.detail
    assert "examples/tool_chat_template_llama3.1_json.jinja" in (c.fix or "")
    base = check_serving_features(meta("meta-llama/Meta-Llama-3-8B"), "0.32.0")
    assert base.status == "ok" and "no tool-call / reasoning preset" in base.detail
