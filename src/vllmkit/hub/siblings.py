"""Quantized siblings: the official FP8 / AWQ / GPTQ / INT8 / NVFP4 variants of a model, with
their real weight sizes, so a plan can say "use Qwen/Qwen3-32B-FP8 (33 GB)".

Search: the model's own organisation first, then well-known quantizers (KNOWN_QUANTIZERS), on the
same hub. A candidate must be named `<base name><sep><quant tag>` where every token of the tag is
quantization vocabulary: `Meta-Llama-3.1-8B-Instruct-FP8` is a sibling of `...-8B-Instruct`, but
not of the base `Meta-Llama-3.1-8B`. GGUF / MLX / ONNX / EXL2 repos are skipped (not vLLM's
default loaders). One candidate per precision, the best ranked.

Requests: 2 searches plus 1 listing per chosen candidate; the result is cached like metadata.
Siblings are advice: hub failures give an empty list, never an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from vllmkit.errors import ModelSourceError
from vllmkit.hub import cache
from vllmkit.hub.base import FileInfo, SourceName
from vllmkit.hub.settings import HubSettings
from vllmkit.hub.weights import loaded_weight_files

# Publishers of vLLM-ready quantized checkpoints, best first.
KNOWN_QUANTIZERS = (
    "RedHatAI",
    "neuralmagic",
    "nvidia",
    "hugging-quants",
    "Qwen",
    "unsloth",
    "TheBloke",
    "casperhansen",
)

_TAG_VOCAB = {
    "fp8", "dynamic", "static", "block", "awq", "gptq", "int4", "int8", "w4a16", "w8a8", "w4a8", "w8a16",
    "quantized", "bnb", "4bit", "8bit", "nvfp4", "fp4", "mxfp4", "unsloth", "marlin", "g128", "g32",
    "g64", "act", "order", "sym", "asym", "v2", "compressed", "tensors", "kv", "fp8kv", "int", "4", "8",
}
_SKIP_FORMATS = re.compile(r"gguf|mlx|onnx|exl2|openvino|ggml|coreml", re.IGNORECASE)
_QUANT_SUFFIX = re.compile(
    r"[-_.](?:fp8|awq|gptq|int4|int8|w4a16|w8a8|quantized|bnb|nvfp4|fp4|mxfp4)(?:[-_.][\w]+)*$", re.IGNORECASE
)

PRECISION_ORDER = ("fp8", "nvfp4", "awq", "gptq-int4", "gptq-int8", "int4", "int8", "bnb-4bit")


class Sibling(BaseModel):
    id: str
    source: SourceName
    precision: str  # one of PRECISION_ORDER
    weight_files_bytes: int | None = None  # sum of the weight files vLLM loads (hub listing)
    same_org: bool = False
    publisher: str = ""


def root_name(name: str) -> str:
    """'Qwen3-32B-FP8' -> 'Qwen3-32B' (strip an existing quant tag)."""
    return _QUANT_SUFFIX.sub("", name)


def classify_tag(tag: str) -> str | None:
    """The precision of a name suffix like 'FP8-dynamic' or 'quantized.w4a16', or None."""
    tokens = [t for t in re.split(r"[-_.]", tag.lower()) if t]
    if not tokens or not all(t in _TAG_VOCAB for t in tokens):
        return None
    joined = "-".join(tokens)
    if "nvfp4" in tokens or "fp4" in tokens or "mxfp4" in tokens:
        return "nvfp4"
    if "fp8" in tokens:
        return "fp8"
    if "awq" in tokens:
        return "awq"
    if "gptq" in tokens:
        return "gptq-int8" if ("int8" in tokens or "8bit" in tokens or "w8a16" in tokens) else "gptq-int4"
    if "bnb" in tokens:
        return "bnb-4bit" if "8bit" not in tokens else "int8"
    if "w4a16" in tokens or "int4" in tokens or "w4a8" in tokens or joined.endswith("4bit"):
        return "int4"
    if "w8a8" in tokens or "int8" in tokens or "w8a16" in tokens:
        return "int8"
    return None


def match_candidate(base_id: str, candidate: str) -> str | None:
    """Precision if `candidate` is a quantized variant of `base_id`, else None."""
    if candidate == base_id or _SKIP_FORMATS.search(candidate):
        return None
    base_root = root_name(base_id.split("/")[-1]).lower()
    name = candidate.split("/")[-1]
    lowered = name.lower()
    if not lowered.startswith(base_root) or len(lowered) == len(base_root):
        return None
    if lowered[len(base_root)] not in "-_.":
        return None
    return classify_tag(name[len(base_root) + 1 :])


def rank(base_id: str, candidate: str) -> int | None:
    org = base_id.split("/")[0] if "/" in base_id else ""
    cand_org = candidate.split("/")[0] if "/" in candidate else ""
    if org and cand_org == org:
        return 0
    if cand_org in KNOWN_QUANTIZERS:
        return 1 + KNOWN_QUANTIZERS.index(cand_org)
    return None  # unknown uploaders are not recommended


def pick(base_id: str, candidates: list[str]) -> list[tuple[str, str]]:
    """(candidate, precision): the best-ranked candidate for each precision, in PRECISION_ORDER."""
    best: dict[str, tuple[int, int, str]] = {}
    for position, cand in enumerate(dict.fromkeys(candidates)):
        precision = match_candidate(base_id, cand)
        score = rank(base_id, cand)
        if precision is None or score is None:
            continue
        key = (score, position, cand)
        if precision not in best or key < best[precision]:
            best[precision] = key
    return [(best[p][2], p) for p in PRECISION_ORDER if p in best]


def _weight_bytes(files: list[FileInfo]) -> int | None:
    loaded = loaded_weight_files([f.name for f in files], None)
    sizes = {f.name: f.size for f in files}
    if not loaded or any(sizes.get(n) is None for n in loaded):
        return None
    return sum(int(sizes[n] or 0) for n in loaded)


def find_siblings(
    base_id: str,
    *,
    source: str = "hf",
    env: Mapping[str, str] | None = None,
    cache_dir: Path | None = None,
    refresh: bool = False,
) -> list[Sibling]:
    """Quantized variants of `base_id` on `source` ("hf" or "modelscope"), with real sizes."""
    settings = HubSettings.from_env(env, cache_dir=cache_dir)
    if source not in ("hf", "modelscope"):
        return []
    if source == "hf" and settings.hf_offline:
        return []
    endpoint = settings.hf_endpoint if source == "hf" else settings.ms_endpoint
    if not refresh:
        cached = cache.load_json(settings.cache_dir, "siblings", source, base_id, endpoint=endpoint)
        if isinstance(cached, list):
            try:
                return [Sibling.model_validate(s) for s in cached]
            except ValueError:
                pass
    try:
        siblings = _search(base_id, source, settings)
    except (ModelSourceError, Exception):  # advice only: any hub failure means "none found"
        return []
    cache.store_json(settings.cache_dir, "siblings", source, base_id,
                     [s.model_dump(mode="json") for s in siblings], endpoint=endpoint)
    return siblings


def _search(base_id: str, source: str, settings: HubSettings) -> list[Sibling]:
    org = base_id.split("/")[0] if "/" in base_id else None
    query = root_name(base_id.split("/")[-1])
    if source == "hf":
        from vllmkit.hub.hf import search_models as hf_search

        candidates = (hf_search(settings, query, author=org, limit=100) if org else []) + hf_search(
            settings, query, limit=100
        )
    else:
        from vllmkit.hub.modelscope import search_models as ms_search

        candidates = (ms_search(settings, query, owner=org, limit=100) if org else []) + ms_search(
            settings, query, limit=100
        )
    out: list[Sibling] = []
    for cand, precision in pick(base_id, candidates):
        files = _list_files(cand, source, settings)
        if files is None:
            continue
        publisher = cand.split("/")[0] if "/" in cand else ""
        out.append(
            Sibling(
                id=cand,
                source=source,  # type: ignore[arg-type]
                precision=precision,
                weight_files_bytes=_weight_bytes(files),
                same_org=bool(org) and publisher == org,
                publisher=publisher,
            )
        )
    return out


def _list_files(repo_id: str, source: str, settings: HubSettings) -> list[FileInfo] | None:
    try:
        if source == "hf":
            from vllmkit.hub.hf import _HfRepo

            files, _ = _HfRepo(settings, repo_id, None).list_files()
        else:
            from vllmkit.hub.modelscope import _MsRepo, make_session

            with make_session(settings) as session:
                files, _ = _MsRepo(settings, repo_id, None, session).list_files()
    except ModelSourceError:
        return None  # gated or gone: skip this candidate
    return files
