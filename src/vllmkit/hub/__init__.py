"""Model sources: Hugging Face Hub, ModelScope, local folders and the bundled catalog.

Entry points:
- resolve.resolve_model(spec, source=, revision=, refresh=, env=, cache_dir=) -> ModelMetadata
- siblings.find_siblings(base_id, source=, env=, cache_dir=, refresh=) -> list[Sibling]
Modules: local (folders), hf (huggingface_hub), modelscope (REST API), remote (shared fetch and
range-read policy), safetensors (header parser), gguf, weights (which files vLLM loads), cache
(on-disk metadata cache), offline (hub-client caches), errors (failures -> ModelSourceError),
settings (env mapping -> HubSettings), catalog (bundled snapshots).
"""
