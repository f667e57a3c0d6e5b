"""Sweep: every architecture both transformers and vLLM implement, as a tiny random model, against the real vLLM.

Usage: .venv/bin/python benchmarks/oracle_sweep.py [--only mt1,mt2] [--skip mt1,...] [--out FILE] [--timeout 180]

For each model_type whose transformers causal-LM class vLLM registers natively, build a tiny random-weight model
from the config class's defaults with small sizes written over the keys the class has (hidden 128, 4 layers,
2 heads / 1 KV head of 64, 4 experts ...), start the installed vLLM (the CPU build here) with
--kv-cache-memory-bytes 1 GiB and --max-model-len 2048, read its capacity line, and compare it with
`vllmkit plan DIR --device cpu` for the same budget. A family vLLM's CPU build cannot load or run is reported
as such, not as a mismatch. The oracle test (tests/e2e/test_oracle.py) keeps the families found to run; this
sweep is how new ones are found. One line of JSON per family goes to --out; a table to stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GIB = 1 << 30
SMALL = {
    "hidden_size": 128, "n_embd": 128, "d_model": 128, "num_hidden_layers": 4, "n_layer": 4, "num_layers": 4,
    "num_attention_heads": 2, "n_head": 2, "num_key_value_heads": 1, "head_dim": 64, "intermediate_size": 256,
    "n_inner": 256, "ffn_hidden_size": 256, "vocab_size": 512, "max_position_embeddings": 4096,
    "num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4, "moe_num_experts": 4,
    "num_experts_per_tok": 2, "moe_topk": 2, "moe_intermediate_size": 64, "shared_expert_intermediate_size": 64,
    "n_shared_experts": 1, "num_shared_experts": 1, "n_group": 1, "topk_group": 1, "first_k_dense_replace": 1,
    "kv_lora_rank": 64, "q_lora_rank": 64, "qk_rope_head_dim": 32, "qk_nope_head_dim": 32, "v_head_dim": 32,
    "sliding_window": 256, "attention_chunk_size": 256, "tie_word_embeddings": False,
    "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 32, "linear_value_head_dim": 32,
    "mamba_n_heads": 4, "mamba_d_head": 64, "mamba_d_ssm": 256, "mamba_d_state": 16, "mamba_num_heads": 4,
    "mamba_head_dim": 64, "ssm_state_size": 16, "n_groups": 1, "mamba_n_groups": 1, "num_heads": 4,
    "state_size": 16, "conv_dim": 128, "block_dim": 128, "global_head_dim": 64, "index_head_dim": 32,
    "index_n_heads": 2, "index_topk": 64, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
}
# keys vLLM 0.32's model code reads from config.json (config.X, no default) that transformers' config class for the
# family does not keep, so a config saved from it fails to load; set at the small sizes above. None of them sizes
# the KV cache except MiMo-V2's attention shapes.
PATCHES: dict[str, dict] = {
    "glm4_moe": {"head_dim": 64},  # glm4_moe.py config.head_dim
    "glm4_moe_lite": {"first_k_dense_replace": 1},  # glm4_moe_lite.py (DeepSeek-V2 layout)
    "deepseek_v3": {"topk_method": "noaux_tc"},  # deepseek_v2.py: the router's e_score_correction_bias
    "afmoe": {"score_func": "sigmoid", "route_norm": True, "n_group": 1, "topk_group": 1},  # afmoe.py
    "hy_v3": {"first_k_dense_replace": 1, "expert_hidden_dim": 64, "route_norm": True, "qk_norm": True},  # hy_v3.py
    # minimax_m2.py (MiniMax-M2: rotary 64 of 128; sigmoid routing with a correction bias, but the CPU build's fused
    # MoE asserts softmax routing, and the router does not touch the cache)
    "minimax_m2": {"rotary_dim": 32, "scoring_func": "softmax", "use_routing_bias": True},
    # zamba2.py: transformers derives attention_hidden_size (2 x hidden), attention_head_dim and mamba_headdim from
    # the sizes at construction; the small ones, and two hybrid (mamba + shared attention) layers of four
    "zamba2": {"attention_hidden_size": 256, "attention_head_dim": 128, "mamba_headdim": 32, "kv_channels": 64,
               "num_key_value_heads": 2,  # vLLM builds the shared attention multi-head (K and V for every head)
               "layers_block_type": ["linear_attention", "hybrid", "linear_attention", "hybrid"], "hybrid_layer_ids": [1, 3]},
    # falcon.py sizes the MLP 4 x hidden_size whatever ffn_hidden_size says (Falcon's own 4x); num_kv_heads keeps the
    # class default of 71, which a multi-query (Falcon-7B) model ignores: one KV head
    "falcon": {"ffn_hidden_size": 512},
    "ernie4_5_moe": {"moe_k": 2},
    # LFM2-MoE: the class has no layer_types default (LFM2-8B-A1B's config lists them); two dense layers, then MoE
    "lfm2_moe": {"layer_types": ["conv", "conv", "full_attention", "conv"], "num_dense_layers": 2},
    # GPT-2's context is n_positions (1024 by default, below the sweep's --max-model-len 2048)
    "gpt2": {"n_positions": 4096},
    "gpt-sw3": {"n_positions": 4096},
    # LongCat-Flash: the class keeps 2048-wide routed experts and 256 zero experts at any hidden size
    # (longcat_flash.py reads them as intermediate_size / moe_intermediate_size, and the MLA scales and zero-expert type)
    "longcat_flash": {"expert_ffn_hidden_size": 64, "zero_expert_num": 2, "intermediate_size": 256,
                      "moe_intermediate_size": 64, "mla_scale_q_lora": True, "mla_scale_kv_lora": True,
                      "zero_expert_type": "identity"},  # the class default routes 6 of 64 experts; here 2 of the small 4
    # mimo_v2.py: hybrid_layer_pattern (1 = sliding window), SWA layers with their own heads and window
    # (MiMo-V2-Flash: 8 KV heads against the full layers' 4, sliding_window_size 128), moe_layer_freq (0 = dense).
    # Kept to what transformers' model builds: its layer_types (full at 0 and every sixth), twice the KV heads
    # on sliding layers, one head_dim / v_head_dim (64 / 32 here: a value head narrower than the key's)
    "mimo_v2_flash": {"hybrid_layer_pattern": [0, 1, 1, 1], "moe_layer_freq": [0, 1, 1, 1], "layernorm_epsilon": 1e-5,
                      "swa_num_attention_heads": 2, "swa_num_key_value_heads": 2, "swa_head_dim": 64,
                      "swa_v_head_dim": 32, "sliding_window_size": 256},
}
LINE = re.compile(r"KV cache size: ([\d,]+) tokens, Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")


def candidates() -> list[tuple[str, str]]:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from vllm.model_executor.models.registry import _TEXT_GENERATION_MODELS

    return sorted((mt, cls) for mt, cls in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.items() if cls in _TEXT_GENERATION_MODELS)


def build(model_type: str, dest: Path) -> None:
    import torch
    import transformers
    from tests.e2e.tiny import _tokenizer
    from transformers import CONFIG_MAPPING

    cfg = CONFIG_MAPPING[model_type]()
    have = cfg.to_dict()
    layers = have.get("num_hidden_layers")
    for key, value in SMALL.items():
        if key in have and not isinstance(have[key], list | dict):
            setattr(cfg, key, value)
    if isinstance(layers, int):
        # per-layer lists (mlp_layer_types, ...) follow the smaller layer count: their first four entries
        for key, value in have.items():
            if isinstance(value, list) and len(value) == layers and key != "layer_types":
                setattr(cfg, key, value[: SMALL["num_hidden_layers"]])
    # re-run the class's own derivations (layer_types from intervals, ...) on the small sizes
    rerun = {k: v for k, v in cfg.to_dict().items() if k not in ("layer_types", "transformers_version")}
    if "layer_types" in PATCHES.get(model_type, {}):
        rerun["layer_types"] = PATCHES[model_type]["layer_types"]
    cfg = type(cfg)(**rerun)
    for key, value in PATCHES.get(model_type, {}).items():
        setattr(cfg, key, value)
    cfg.torch_dtype = "bfloat16"
    with torch.device("meta"):  # count first: a nested config (text_config) keeps its full size
        size = sum(p.numel() for p in transformers.AutoModelForCausalLM.from_config(cfg).parameters())
    if size > 50_000_000:
        raise ValueError(f"the small sizes did not reach this config ({size / 1e6:.0f} M parameters)")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
    model.save_pretrained(dest, safe_serialization=True)
    _tokenizer(dest, True)


def run_vllm(model_dir: Path, timeout: int) -> tuple[str, tuple[int, float] | None, str]:
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
           "--kv-cache-memory-bytes", str(GIB), "--max-model-len", "2048", "--port", "8499", "--trust-remote-code"]
    log = model_dir / "vllm.log"
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, cwd=model_dir)
        t0 = time.time()
        found = None
        while time.time() - t0 < timeout and proc.poll() is None:
            time.sleep(2)
            m = LINE.search(log.read_text(errors="replace"))
            if m:
                found = (int(m.group(1).replace(",", "")), float(m.group(3)))
                break
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the API server and its engine / worker processes
        except ProcessLookupError:
            pass
        proc.wait()
    text = log.read_text(errors="replace")
    if found:
        return "ran", found, ""
    errors = [ln for ln in text.splitlines() if re.search(r"(Error|Exception|error):", ln) and "ulimit" not in ln
              and "Engine core initialization failed" not in ln and "Worker failed with error" not in ln]
    return ("timeout" if proc.returncode in (None, -9) and not errors else "failed"), None, (errors[0][-300:] if errors else "")


def run_plan(model_dir: Path) -> tuple[int, float] | str:
    out = subprocess.run([str(Path(sys.executable).with_name("vllmkit")), "plan", str(model_dir), "--device", "cpu",
                          "--kv-cache-memory-bytes", str(GIB), "--max-model-len", "2048", "--json"],
                         capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, check=False)
    try:
        data = json.loads(out.stdout)
        kv = data["data"]["kv_cache"]
        return int(kv["tokens"]), float(kv["max_concurrency"])
    except Exception:
        return (out.stdout or out.stderr)[-300:]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--skip", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--timeout", type=int, default=180)
    args = ap.parse_args()
    only = {s for s in args.only.split(",") if s}
    skip = {s for s in args.skip.split(",") if s}
    rows = []
    for mt, cls in candidates():
        if (only and mt not in only) or mt in skip:
            continue
        with tempfile.TemporaryDirectory(prefix=f"sweep-{mt}-") as tmp:
            d = Path(tmp)
            row: dict = {"model_type": mt, "class": cls}
            try:
                build(mt, d)
            except Exception as exc:
                row.update(status="no-tiny-model", detail=str(exc)[-200:])
            else:
                status, got, detail = run_vllm(d, args.timeout)
                row.update(status=status, detail=detail)
                if got:
                    pred = run_plan(d)
                    row.update(vllm_tokens=got[0], vllm_x=got[1])
                    if isinstance(pred, tuple):
                        row.update(plan_tokens=pred[0], plan_x=round(pred[1], 2),
                                   match=pred[0] == got[0] and abs(pred[1] - got[1]) < 0.006)
                    else:
                        row.update(match=False, plan_error=pred)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
    print("| model_type | vLLM CPU | vLLM tokens / x | plan tokens / x | match |")
    print("|---|---|---|---|---|")
    for r in rows:
        v = f"{r.get('vllm_tokens', '-')} / {r.get('vllm_x', '-')}"
        p = f"{r.get('plan_tokens', '-')} / {r.get('plan_x', '-')}"
        print(f"| {r['model_type']} | {r['status']} | {v} | {p} | {r.get('match', '-')} |")
    return 0 if all(r.get("match", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
