"""Repositories the integration tests serve: real small safetensors files (hand-written to the
format spec, and one written by the `safetensors` package itself), configs and index files.

Expected numbers in the tests are hand arithmetic over the tensor tables below, not what
vllmkit prints.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field

# Bits per element, from the safetensors format spec (README "Format"); kept independent of
# vllmkit.hub.safetensors on purpose.
BITS = {"BF16": 16, "F16": 16, "F32": 32, "I32": 32, "I64": 64, "F8_E4M3": 8, "U8": 8, "I8": 8, "BOOL": 8}

COMMIT_MAIN = "a" * 40
COMMIT_V2 = "b" * 40


def safetensors_bytes(
    tensors: dict[str, tuple[str, list[int]]], metadata: dict[str, str] | None = None, *, fill: int = 0x5A
) -> bytes:
    """A valid safetensors file: 8-byte LE length, JSON header padded with spaces to 8 bytes
    (as the safetensors library writes it), then the tensor data (filled with `fill`)."""
    header: dict[str, object] = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    offset = 0
    for name, (dtype, shape) in tensors.items():
        nbytes = math.prod(shape) * BITS[dtype] // 8
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    return struct.pack("<Q", len(raw)) + raw + bytes([fill]) * offset


def data_start(blob: bytes) -> int:
    """Where the weights begin: 8 + the declared header length."""
    return 8 + struct.unpack("<Q", blob[:8])[0]


def numpy_shard() -> bytes:
    """Shard 2 of acme/tiny-llama, written by the safetensors package (numpy backend)."""
    import numpy as np
    from safetensors.numpy import save

    return save(
        {
            "model.layers.1.mlp.down_proj.weight": np.ones((64, 128), dtype=np.float16),
            "model.norm.weight": np.ones((64,), dtype=np.float32),
            "lm_head.weight": np.ones((256, 64), dtype=np.float16),
            "model.layers.1.mlp.g_idx": np.arange(128, dtype=np.int32),
        },
        metadata={"format": "pt"},
    )


TINY_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 2048,
    "torch_dtype": "bfloat16",
}

SHARD1_TENSORS: dict[str, tuple[str, list[int]]] = {
    "model.embed_tokens.weight": ("BF16", [256, 64]),  # 16384 params
    "model.layers.0.self_attn.q_proj.weight": ("BF16", [64, 64]),  # 4096
    "model.layers.0.input_layernorm.weight": ("F32", [64]),  # 64
}
SHARD2_NAMES = [
    "model.layers.1.mlp.down_proj.weight",  # F16 [64,128] = 8192
    "model.norm.weight",  # F32 [64] = 64
    "lm_head.weight",  # F16 [256,64] = 16384
    "model.layers.1.mlp.g_idx",  # I32 [128] = 128
]
# Hand arithmetic: BF16 16384+4096; F16 8192+16384; F32 64+64; I32 128.
TINY_PARAMS = {"BF16": 20480, "F16": 24576, "F32": 128, "I32": 128}
# bytes: 20480*2 + 24576*2 + 128*4 + 128*4
TINY_TENSOR_BYTES = 40960 + 49152 + 512 + 512  # = 91136


@dataclass
class Repo:
    id: str
    files: dict[str, bytes]
    sha: str = COMMIT_MAIN
    branches: dict[str, dict[str, bytes]] = field(default_factory=dict)  # other revisions' files
    # ok | gated | rate_limited | server_error | slow | malformed | flaky | norange, and the hostile ones
    # of hubserver.py: huge_error | trickle | huge_json | deep_json | hostile_text
    behaviour: str = "ok"
    token: str | None = None  # accepted token for gated repos
    downloads: int = 0
    slow_s: float = 0.0
    fail_first: int = 0  # flaky: this many 503s before answering
    huge_bytes: int = 300 << 20  # huge_error / huge_json: body size


def _json(doc: object) -> bytes:
    return json.dumps(doc, indent=1).encode()


def tiny_llama(repo_id: str = "acme/tiny-llama") -> Repo:
    shard1 = safetensors_bytes(SHARD1_TENSORS, {"format": "pt"})
    shard2 = numpy_shard()
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    weight_map = {n: names[0] for n in SHARD1_TENSORS} | {n: names[1] for n in SHARD2_NAMES}
    files = {
        "config.json": _json(TINY_CONFIG),
        "generation_config.json": _json({"temperature": 0.6, "top_p": 0.95}),
        "tokenizer_config.json": _json({"chat_template": "{{ messages }}", "model_max_length": 2048}),
        "model.safetensors.index.json": _json({"metadata": {"total_size": TINY_TENSOR_BYTES}, "weight_map": weight_map}),
        names[0]: shard1,
        names[1]: shard2,
        "README.md": b"# tiny llama\n",
        # not loaded by vLLM (sub-folder); must not be range-read
        "original/model.safetensors": safetensors_bytes({"x": ("F32", [4])}),
    }
    v2 = dict(files)
    v2["config.json"] = _json({**TINY_CONFIG, "num_hidden_layers": 3})
    return Repo(id=repo_id, files=files, branches={"v2": v2}, downloads=1000)


def single_file(repo_id: str, tensors: dict[str, tuple[str, list[int]]], **kw: object) -> Repo:
    files = {"config.json": _json(TINY_CONFIG), "model.safetensors": safetensors_bytes(tensors)}
    return Repo(id=repo_id, files=files, **kw)  # type: ignore[arg-type]


def big_header_tensors() -> dict[str, tuple[str, list[int]]]:
    """A header longer than the 64 KiB first read (1500 entries of ~110 bytes), no index, and
    300 kB of weights after it."""
    tensors: dict[str, tuple[str, list[int]]] = {
        f"model.layers.{i // 60}.mlp.experts.{i % 60}.a_rather_long_projection_name_for_padding.weight": ("F32", [2])
        for i in range(1500)
    }
    tensors["model.embed_tokens.weight"] = ("U8", [300_000])
    return tensors


def gguf_bytes() -> bytes:
    """A minimal GGUF v3 header: 0 tensors, 2 KV pairs (general.architecture, general.file_type=15)."""

    def string(s: str) -> bytes:
        return struct.pack("<Q", len(s)) + s.encode()

    body = b"GGUF" + struct.pack("<I", 3) + struct.pack("<Q", 0) + struct.pack("<Q", 2)
    body += string("general.architecture") + struct.pack("<I", 8) + string("llama")
    body += string("general.file_type") + struct.pack("<I", 4) + struct.pack("<I", 15)  # 15 = Q4_K_M
    return body + b"\0" * 1024


def all_repos() -> dict[str, Repo]:
    repos: list[Repo] = [
        tiny_llama(),
        single_file("acme/big-header", big_header_tensors()),
        # a server that ignores Range and always sends the whole file (HTTP 200)
        single_file("acme/norange", big_header_tensors(), behaviour="norange"),
        single_file("acme/gated", {"w": ("BF16", [8, 8])}, behaviour="gated", token="hf_secret_token"),
        single_file("acme/ratelimited", {"w": ("BF16", [8, 8])}, behaviour="rate_limited"),
        single_file("acme/broken", {"w": ("BF16", [8, 8])}, behaviour="server_error"),
        single_file("acme/slow", {"w": ("BF16", [8, 8])}, behaviour="slow", slow_s=3.0),
        single_file("acme/malformed", {"w": ("BF16", [8, 8])}, behaviour="malformed"),
        single_file("acme/flaky", {"w": ("BF16", [8, 8])}, behaviour="flaky", fail_first=1),
        single_file("acme/huge-error", {"w": ("BF16", [8, 8])}, behaviour="huge_error"),
        single_file("acme/trickle", {"w": ("BF16", [8, 8])}, behaviour="trickle", slow_s=0.5),
        single_file("acme/huge-json", {"w": ("BF16", [8, 8])}, behaviour="huge_json", huge_bytes=40 << 20),
        single_file("acme/deep-json", {"w": ("BF16", [8, 8])}, behaviour="deep_json"),
        single_file("acme/hostile", {"w": ("BF16", [8, 8])}, behaviour="hostile_text"),
        # siblings of acme/tiny-llama
        single_file("acme/tiny-llama-FP8", {"w": ("F8_E4M3", [256, 64]), "s": ("F32", [1])}, downloads=500),
        single_file("acme/tiny-llama-AWQ", {"qweight": ("I32", [64, 8]), "scales": ("F16", [1, 64])}, downloads=400),
        single_file("RedHatAI/tiny-llama-FP8-dynamic", {"w": ("F8_E4M3", [256, 64])}, downloads=900),
        single_file("RedHatAI/tiny-llama-quantized.w4a16", {"w": ("I32", [256, 8])}, downloads=300),
        single_file("randomuser/tiny-llama-GPTQ-Int4", {"w": ("I32", [256, 8])}, downloads=5000),
        single_file("acme/tiny-llama-Instruct-FP8", {"w": ("F8_E4M3", [256, 64])}, downloads=800),
        Repo(id="TheBloke/tiny-llama-GGUF", files={"tiny-llama.Q4_K_M.gguf": gguf_bytes()}, downloads=700),
    ]
    # an NVIDIA ModelOpt < 0.31 checkpoint: quantization only in hf_quant_config.json (published file of
    # nvidia/Llama-3.1-70B-Instruct-FP8, aiconfigurator snapshot), FP8 weights with scalar F32 scales
    repos.append(Repo(id="modelopt-org/small-llama-mo-fp8", files={
        "config.json": _json(TINY_CONFIG),
        "hf_quant_config.json": _json({"producer": {"name": "modelopt", "version": "0.23.0"},
                                       "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8",
                                                        "exclude_modules": ["lm_head"]}}),
        "model.safetensors": safetensors_bytes({"model.layers.0.mlp.down_proj.weight": ("F8_E4M3", [64, 128]),
                                                "model.layers.0.mlp.down_proj.weight_scale": ("F32", []),
                                                "lm_head.weight": ("BF16", [256, 64])}),
    }))
    hostile_config = {**TINY_CONFIG, "architectures": ["\x1b]0;owned\x07\x1b[2J[link=http://evil.example]Evil[/link]"],
                      "num_hidden_layers": 10**9}
    repos.append(Repo(id="acme/hostile-config", files={"config.json": _json(hostile_config)}))
    absurd = struct.pack("<Q", 10**12) + b"{}" + b"\0" * 200
    truncated = struct.pack("<Q", 5000) + b'{"w":{"dtype":"F32"'
    repos.append(Repo(id="acme/absurd", files={"config.json": _json(TINY_CONFIG), "model.safetensors": absurd}))
    repos.append(Repo(id="acme/truncated", files={"config.json": _json(TINY_CONFIG), "model.safetensors": truncated}))
    repos.append(
        Repo(id="acme/badconfig", files={"config.json": b'{"model_type": "llama",', "model.safetensors": truncated})
    )
    return {r.id: r for r in repos}
