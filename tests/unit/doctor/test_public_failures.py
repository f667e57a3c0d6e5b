"""`vllmkit doctor --log` on every failed start in the public startup logs (benchmarks/data/*startup-logs*.jsonl,
`startup_ok: false`): each quote that holds vLLM's own failure text gets that failure's code, not the generic
"startup-failed" or nothing.

The expected code of each row is read from its id and quote by hand (the rows' own `*-fail` / `-oom` names and
the error lines they quote); NO_ERROR_TEXT lists the rows whose quote holds no vLLM error line (a table cell, a
paraphrase, a traceback cut before the exception), each with what the quote shows instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllmkit.doctor.diagnose import diagnose_log

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data"

EXPECTED = {
    # round 33 (collected-startup-logs-27): a start that failed after sizing its KV cache, not for memory
    # ("TypeError: type 'array.array' is not subscriptable"), and one refused for free memory at start
    "h100-qwen36-27b-fp8-len4096-seqs32-util088-eager-v0271-fail-after-kv": "startup-failed",
    "rtx4080-llava15-7b-awq-fp16-len4096-util085-v0102-fail-free-memory": "insufficient-free-memory",
    # split or reworded "To serve at least one request ..." quotes (round 26: joined, "(" optional)
    "flosa-vllm-bench-l4-qwen25-7b-awq-util035-len32768-v0280-kv-fail": "kv-cache-too-small",
    "sparkdocker-396-2xdgxspark-minimax-m27-awq-tp2-util08-fail": "kv-cache-too-small",
    "aihpi-litellm-h100-llama33-70b-fp8-kvfp8-util095-len131072-fail": "kv-cache-too-small",
    # cut before "No available memory for the cache blocks": the negative budget vLLM raises it on
    "vllm-23278-gpt-oss-120b-h100-fail": "no-kv-memory",  # Available KV cache memory: -2.14 GiB
    "vllm-13882-rtx4060-8gb-qwen25-7b-util070-len4096-fail": "no-kv-memory",  # ... KV Cache is -1.05GiB
    # collected-startup-logs-13 (round 26)
    "langx101-gb10-qwen25-15b-instruct-util004-len4096-eager-v0201dev-cotenant-growth-kv-fail": "no-kv-memory",
    # collected-startup-logs-14 (round 29): "Available KV cache memory: -14.28 GiB" then the ValueError
    "wcsdgpu-a100-80gb-qwen25-vl-7b-util022-len128000-v0230-kv-fail": "no-kv-memory",
    # quoted whole
    "vllm-34076-qwen3-coder-30b-fp8-pp2-5070ti-5090d-fail": "kv-cache-too-small",
    "recipes-12-qwen3-coder-480b-fp8-8xh20-dp8-ep-util090-fail": "kv-cache-too-small",
    "recipes-12-qwen3-coder-480b-fp8-8xh20-dp8-ep-util095-fail": "kv-cache-too-small",
    "vllm-10517-rtx3090-llama31-8b-len29000-fail": "kv-cache-too-small",
    "vllm-14452-2x5090-qwq32b-bnb4-pp2-len60000-fail": "kv-cache-too-small",
    "offload-profiles-rtx3090-llama31-8b-util070-len8192-v0171-kv-fail": "kv-cache-too-small",
    "vllm-13061-r1-distill-qwen14b-2x4090": "kv-cache-too-small",
    "vllm-11230-qwen25-72b-gptq-int4-48gb": "kv-cache-too-small",
    "vllm-17238-qwen25-32b-w8a16-2x3090-tp2-eager-fail": "no-kv-memory",
    "llmdbench-h100-llama33-70b-fp8dyn-tp1-len16000-nokv-fail": "no-kv-memory",
    "vllama-rtx4090-qwen25-7b-instruct-util050-len32768-v0110-fail": "no-kv-memory",
    "vllama-rtx4090-mistral-7b-instruct-v03-util050-len32768-v0110-fail": "no-kv-memory",
    "offload-profiles-rtx3090-qwen25-7b-util060-len8192-v0171-fail": "no-kv-memory",
    "awssamples-4xl40s-qwen3-coder-next-tp4-len16384-mamba-fail": "mamba-cache-blocks",
    "llmdplanner-4xh100-llama4-scout-tp4-util095-free-mem-fail": "insufficient-free-memory",
    "llmdplanner-2xh100-codellama-34b-hf-tp2-len8192-util095-fail": "insufficient-free-memory",
    # collected-startup-logs-18 (round 30): LLaVA-1.6-Mistral-7B on a 16 GB card, negative KV budgets
    "wsl-rtx5080-llava16-mistral7b-bf16-len4096-seqs1-util085-v0110-fail": "no-kv-memory",
    "wsl-rtx5080-llava16-mistral7b-fp16-eager-len2048-seqs1-util075-v0110-fail": "no-kv-memory",
    # collected-startup-logs-16 (round 30): a WSL2 laptop whose display stack holds 1.2 GiB
    "llmso-rtx4080laptop-qwen25-15b-instruct-len4096-seqs64-util090-v0230-freemem-fail": "insufficient-free-memory",
    "kubesimplify-2xrtxpro6000-qwen3-235b-2507-fp8-tp2-weight-load-oom-fail-v0271": "cuda-oom",
    "kubesimplify-2xrtxpro6000-qwen3-235b-2507-fp8-tp2-load-oom": "cuda-oom",
    "vllm-16712-llama4-scout-2xh100nvl-oom": "cuda-oom",
    "blog-rtx5090-qwen38-27b-nvfp4-cudagraph-oom": "cuda-oom",
    "qwen3-1387-qwen3-30b-a3b-4xa10-tp4-util070-capture-oom": "cuda-oom",
    "llmdplanner-h100-gpt-oss-20b-tp1-util095-sampler-oom": "cuda-oom",
    "llmdplanner-2xh100-gpt-oss-20b-tp2-util095-sampler-oom": "cuda-oom",
    "vllm-15598-deepseek-r1-32xl40s-tp8-pp4-util098-capture-oom": "cuda-oom",
    "offload-profiles-rtx3090-llama31-8b-util090-len8192-v0171-sampler-oom-fail": "cuda-oom",
    # collected-startup-logs-43 (round 41): the sampler warm-up's torch.OutOfMemoryError after graph capture, and
    # a reporter quoting vLLM's "No available memory for the cache blocks." as one of the two errors they got
    "r43-vllm27782-4xrtx4090-qwen3-30b-a3b-tp4-v0110-sampler-oom-after-capture-fail": "cuda-oom",
    "r43-vllm41695-rtx5090-qwen3-coder-30b-a3b-instruct-fp8-len16384-util095-fail": "no-kv-memory",
    # collected-startup-logs-44 (round 42): the "To serve at least one request" check of a 180k context on one RTX
    # 3090, V0's 33.75 GiB MambaCacheManager allocation (Nemotron-Nano-9B-v2), and the hybrid models' "max_num_seqs
    # exceeds available Mamba cache blocks" on an H100 and on two RX 7900 XT
    "r44-club3090-35-rtx3090-qwen36-27b-autoround-int4-long-text-len180000-util093-kv-check-fail": "kv-cache-too-small",
    "r44-vllm23230-l40s-nemotron-nano-9b-v2-v0101-defaults-oom-after-load-fail": "cuda-oom",
    "r44-vllm49064-h100-qwen38-27b-len132000-util090-seqs1024-mamba-blocks-969-v0280-fail": "mamba-cache-blocks",
    "r44-vllm49064-2xrx7900xt-rocm-qwen38-27b-tp2-len122633-util085-seqs256-mamba-blocks-161-v0231-fail":
        "mamba-cache-blocks",
    # HIP out of memory warming up the sampler on 2 x Radeon AI PRO R9700 at utilization 0.98 (-34)
    "r9700x2-gpt-oss-20b-mxfp4-tp2-len32768-seqs64-util098-v0130rc2dev112-rocmattn-sampler-oom-fail": "cuda-oom",
    "r9700x2-qwen3-14b-fp8dyn-tp2-len32000-seqs64-util098-v0130rc2dev112-rocmattn-sampler-oom-fail": "cuda-oom",
    # collected-startup-logs-20 (round 31): a GH200 pair's "To serve at least one request" quoted whole; an A800
    # start whose excerpt cuts the traceback, its ValueError quoted from the title in the row
    "vllm44376-gh200x2-deepseek-v4-flash-tp2-ep-kvfp8-bs256-len30000-util095-v022-fail": "kv-cache-too-small",
    "vllm17431-a800-qwen3-8b-util040-v085-v1-fail": "no-kv-memory",
    # collected-startup-logs-21 (round 31): a GB10 start at utilization 0.15, "Available KV cache memory: -1.30 GiB"
    "gb10-qwen25-14b-instruct-fp8dyn-kvfp8-len32768-util015-v0130nv2601-fail": "no-kv-memory",
    # collected-startup-logs-23 (round 32): a 6 GB laptop GPU, "the rest of the memory reserved for KV Cache is
    # -0.94GiB" and the run's JSON quoting "No available memory for the cache blocks"
    "rtx3050laptop-6gb-wsl2-qwen25-7b-instruct-1m-bnb4-eager-len4200-util090-v073-v0-fail": "no-kv-memory",
    # collected-startup-logs-29 / -30 (round 34): "Available KV cache memory: -2.14 GiB" then the ValueError; a second
    # service on the same GPU leaving 1.87 GiB where 3.0 were needed; the same service refused for free memory; and
    # vllm#57475's capture OOM quoted without the message's head ("Tried to allocate 136.00 MiB. GPU 0 has a total
    # capacity of 22.36 GiB of which 120.88 MiB is free")
    "rtx3050-6gb-wsl-qwen25-vl-3b-instruct-awq-fp16-len4096-util070-v0230-fail-negative-kv": "no-kv-memory",
    "rtx3090-qwen25-14b-instruct-awq-fp16-len16384-seqs8-util090-v0151-cotenant-kv-fail": "kv-cache-too-small",
    "rtx3090-qwen25-14b-instruct-awq-fp16-len16384-seqs8-util090-v0151-free-memory-refusal-fail":
        "insufficient-free-memory",
    "rtx5090laptop-qwen38-27b-nvfp4-kvnvfp4-len124000-seqs1-util098-v0291dev-capture-oom-fail": "cuda-oom",
    # round 36 (collected-startup-logs-36)
    "offload-profiles-rtx3090-qwen25-7b-util065-len8192-v0171-kv-fail": "kv-cache-too-small",
    "tokenflow-router-2xa100-80gb-qwen25-72b-instruct-tp2-len32768-kv-fail": "kv-cache-too-small",
    "kaito-nc80adis-2xh100-nvl-mistral-small-4-119b-2603-fp8-tp2-len1048576-util084-v0221-kv-fail":
        "kv-cache-too-small",
    # hard-wrapped by the terminal inside a word ("... GiB KV cach" / "e is needed"): joined without a space
    "b70-cookbook-arc-pro-b70-qwen38-27b-gptq-int4-mtp4-kvfp8-kvbytes425-len100000-v0272rc1-kv-fail":
        "kv-cache-too-small",
    "vllm-6746-8xh100-llama31-405b-instruct-fp8-tp8-len131072-v0-kv-fail": "kv-cache-too-small",
    "vllm-29360-8xh20-qwen3-coder-480b-fp8-tp8-ep-len131072-util098-eager-v0111-deepgemm-warmup-oom-fail": "cuda-oom",
    "vllm-33920-2xrtx4090-glm-47-flash-tp2-util090-v0150rc2-sampler-oom-fail": "cuda-oom",
    # round 37 (collected-startup-logs-37)
    "r37-recipes810-rtx5090-qwen38-27b-nvfp4-inferact-len32768-kvfp8-util080-cudagraph-oom-fail": "cuda-oom",
    "r37-recipes810-rtx5090-qwen38-27b-nvfp4-inferact-len32768-kvfp8-util093-cudagraph-oom-fail": "cuda-oom",
    "r37-recipes831-rtxpro6000maxq-qwen38-27b-fp8-tp1-utildefault-seqs1024-mamba-blocks-fail": "mamba-cache-blocks",
    "r37-recipes831-rtxpro6000maxq-qwen38-27b-nvfp4-tp1-utildefault-seqs1024-mamba-blocks-fail": "mamba-cache-blocks",
    "r37-recipes831-rtxpro6000maxq-qwen38-27b-bf16-tp1-util095-seqs1024-mamba-blocks-fail": "mamba-cache-blocks",
    "r37-recipes551-h100-qwen36-27b-fp8-util095-seqs1024-mamba-blocks-fail": "mamba-cache-blocks",
    "r37-gpustack1800-rtx3090-qwen25-vl-7b-len8192-v084-v0-kv-fail": "kv-cache-too-small",
    # round 37 (collected-startup-logs-38)
    "r38-rusteze-rtx5080-qwen25-coder-7b-util070-len32768-v0130-inductor-oom-fail": "cuda-oom",
    "r38-kvcached110-a100-80gb-llama31-8b-util090-v092-second-instance-free-mem-fail": "insufficient-free-memory",
    "r38-subgraphrag19-rtx3090-llama31-8b-default-len131072-v055-kv-fail": "kv-cache-too-small",
    "r38-newblog-advopt-a10g-qwen25-14b-tp1-len4096-util090-seqs128-v0271-weight-load-oom-fail": "cuda-oom",
    "r38-newblog-advopt-l4-qwen25-14b-tp1-len4096-util090-seqs128-v0280-weight-load-oom-fail": "cuda-oom",
    # round 38 (collected-startup-logs-39)
    "r39-lambo-4xrtx3090-qwen35-9b-tp4-len32768-v0190-graph-oom-fail": "cuda-oom",
    "r39-agentichealth-t4-qwen25-7b-util085-len4096-v0191-inductor-oom-fail": "cuda-oom",
    "r39-medqa-4xh100-qwen35-122b-a10b-tp4-v0230-free-mem-fail": "insufficient-free-memory",
    # round 39 (collected-startup-logs-42)
    "r42-vllm26612-a800-80gb-qwen3-vl-30b-a3b-instruct-v011x-kv-check-fail": "startup-failed",
    "r42-qwen3vl1489-8xa100-80gb-qwen3-vl-235b-a22b-instruct-tp8-v0102-load-model-oom-fail": "startup-failed",
    "r42-vllm14376-l40s-tinyllama-11b-chat-util020-len1024-v1-second-instance-no-cache-blocks-fail": "no-kv-memory",
    "r42-vllm14376-l40s-tinyllama-11b-chat-util030-len1024-v1-second-instance-after-030-fail": "no-kv-memory",
    "r42-gpustack2076-4xh20-3e-qwen3-32b-tp4-util060-second-instance-no-cache-blocks-fail": "no-kv-memory",
    # round 44 (collected-startup-logs-47): V0's KV check and "No available memory" quoted whole, and an OOM raised
    # from torch's capture_end (CUDA-graph capture)
    "r47-vllm16199-a10-gemma3-27b-int4awq-fp16-len4096-util098-v083-v0-kv-fail": "kv-cache-too-small",
    "r47-vllm16199-a10-gemma3-27b-int4awq-fp16-len128-util098-v083-v0-graph-capture-oom": "cuda-oom",
    "r47-vllm7028-t4-vistral7b-awq-eager-util010-no-cache-blocks-fail": "no-kv-memory",
    "r47-qwen3-12-v100-32gb-qwen15-14b-chat-fp16-util095-no-cache-blocks-fail": "no-kv-memory",
    "r47-qanything302-rtx3090-qwen7b-qanything-bf16-len4096-gpu-blocks-0-fail": "no-kv-memory",
    "r47-qanything289-rtx4090-qanything-7b-len4096-kv3792-fail": "kv-cache-too-small",
    "r47-wildguard-pr2-rtx3090-wildguard-7b-default-len32768-kv30448-fail": "kv-cache-too-small",
    # round 45 (collected-startup-logs-48): the sampler warm-up's own OOM message, OOMs quoted whole, the free-memory
    # refusal of co-tenant GPUs, and 0.1.0's negative block count ('# GPU blocks: -1', then the cache tensor fails)
    "r48-llmd787-2xh100-qwen3-32b-bf16-tp2-util095-v0110-sampler-warmup-oom-fail": "cuda-oom",
    "r48-dsv3-205-32xrtx4090-deepseek-v3-fp8-tp8-pp4-len128-util098-eager-v066-sampler-oom-fail": "cuda-oom",
    "r48-vllm14726-16xl40-2node-deepseek-v3-fp8-tp8-pp2-kvfp8-seqs1-util1-half-mla-load-oom-fail": "cuda-oom",
    "r48-vllm12539-4xl4-r1-distill-qwen-1.5b-tp4-len32768-eager-v070-oom-fail": "cuda-oom",
    "r48-vllm23192-8xh100-mixtral-8x7b-instruct-fp8-tp8-v091-free-mem-531-of-7918-cotenant-fail":
    "insufficient-free-memory",
    "r48-vllmomni276-2xa100-80gb-qwen3-omni-30b-a3b-omni-util06-free-mem-049-of-7932-fail": "insufficient-free-memory",
    "r48-vllm184-t4-g4dn-xlarge-vicuna-7b-v13-fp16-defaults-v010-gpu-blocks-neg1-fail": "no-kv-memory",
    # round 46 (collected-startup-logs-50): a load OOM with vLLM's own advice, a quoted KV refusal, and a V0 log cut
    # after "Maximum concurrency for 131072 tokens per request: 0.22x" (below one request: V0 raises next)
    "r50-vllm40291-rtx5090-gemma4-31b-it-nvfp4-modelopt-kvfp8-len8192-v0191-load-oom-fail": "cuda-oom",
    "r50-syvai39-rtx3090-inferred-qwen38-27b-w4a16-autoround-len65536-runai-streamer-v0280-kvcheck-fail":
    "kv-cache-too-small",
    "r50-orpheus109-12gb-unnamed-orpheus-3b-ft-bf16-len131072-util090-v073-inferred-v0-kvcheck-fail":
    "kv-cache-too-small",
    # V0's KV check cut after its first words in an issue's title ("ValueError: The model's max seq len (32768)
    # [...]"): only raise_if_cache_size_invalid starts that way (round 48)
    "r51-functionary128-rtx3090-functionary-small-v22-auto-tp1-len32768-default-util090-v0-kvcheck-fail":
    "kv-cache-too-small",
    # round 48 (collected-startup-logs-52): the sampler warm-up's OOM after sizing, and three load OOMs quoted whole
    "r52-vllm19445-rtx2080ti-llama31-8b-instruct-awq-int4-len10000-util090assumed-v0130-sampler-warmup-oom-fail":
    "cuda-oom",
    "r52-vllm16343-rtx3090-phi4-bf16-len4096-util080-v083-load-oom-inferred-fail": "cuda-oom",
    "r52-vllm2140-rtx2080ti22gb-modded-qwen2-7b-instruct-fp32-len512-eager-v040post1-load-oom-fail": "cuda-oom",
    "r52-vllm188-rtx2080ti-mistral-7b-v01-fp16-len4096-util080-v021assumed-load-oom-fail": "cuda-oom",
    # round 49 (collected-startup-logs-53): a Triton kernel's shape check failing in the first FULL graph capture
    "r53-kyuz0-r9700x2-qwen3-next-80b-a3b-awq4-tp2-len16384-seqs32-util098-v0130rc2dev112-rocmattn-graphcapture-fail":
    "graph-capture-failed",
    # round 49 (collected-startup-logs-54): a worker that fails while loading, its exception not quoted
    "r54-vllm31936-8xrtxpro6000-deepseek-v32-tp8-ep-len512-util090-v0130-cutlassmla-load-fail": "startup-failed",
    # round 51 (collected-startup-logs-56): two refusals for memory other processes held, an OOM in CUDA-graph capture
    # after sizing (torch.AcceleratorError in capture_end), FlashInfer's b12x MoE workspace in the profile run, and a
    # load OOM of a torch build that held 23 GiB before the weights
    "r56-hyouinschoolacc1-h100nvl-qwen3-14b-lora-r64-len4096-util080-v0102-free-mem-1601-of-930-fail":
    "insufficient-free-memory",
    "r56-tradingagents-h100-80gb-qwen3-embedding-4b-pooling-util090-v0110-free-mem-592-of-7919-fail":
    "insufficient-free-memory",
    "r56-pforoutan-151b-unnamed-le24gib-qwen3-4b-thinking-2507-lora-len4096-util080-v0191-graph-capture-oom-fail":
    "cuda-oom",
    "r56-vllm49476-2xrtx5070ti-pp2-qwen36-35b-a3b-nvfp4-b12x-fp8kv-len180224-util092-v0251-profile-run-oom-fail":
    "cuda-oom",
    "r56-vllm42049-rtx4090-gemma4-31b-it-tp1-defaults-v0201-torch211-cu130-oom-before-load-fail": "cuda-oom",
    # round 51 (collected-startup-logs-57): the sampler warm-up's OOM after sizing and graph capture, quoted whole
    "r57-idx29156490496-4xrtxpro6000-maxq-glm47-nvfp4-tp4-util090-v0151-sampler-warmup-oom-fail": "cuda-oom",
    # collected-startup-logs-58: a negative KV budget at utilization 0.45 ("Available KV cache memory: -1.1 GiB")
    "r58-idx53295442762-a100pcie-qwen35-35b-a3b-fp8-len2048-util045-v0190-negative-kv-fail": "no-kv-memory",
    # collected-startup-logs-59: one hybrid model on an L40S, first too little KV for 131,072 tokens, then 184 Mamba
    # cache blocks for the default 256 sequences
    "r59-idx61942353725-l40s-qwen38-27b-fp8-len131072-util086-v0260-kv704-fail": "kv-cache-too-small",
    "r59-idx61942353725-l40s-qwen38-27b-fp8-len131072-util090-seqs256-v0260-kv882-mamba-blocks-fail":
    "mamba-cache-blocks",
    # collected-startup-logs-61 (round 53): vLLM's negative KV line (quoted as printed, with the author's arrows);
    # a Red Hat report's table cell quoting vLLM's "-1.49 GiB" and "No available memory for the cache blocks";
    # a sleep-mode start whose cumem allocator ran out of memory after sizing ("torch.OutOfMemoryError")
    "r61-idx55890839373-t4-timesliced-llama32-3b-fp16-util044-est048-kvneg093-fail": "no-kv-memory",
    "r61-idx66923849123-4xl40s-nebius-qwen35-122b-a10b-fp8dyn-tp4-len1010000-util090-seqs4-mnbt65536-eager-lmonly-"
    "rhai341-kvneg149-fail": "no-kv-memory",
    "r61-idx62020956495-a10-modal-gemma4-12b-qat-sleepmode-len16384-util092-kv1377-cumem-oom-fail": "cuda-oom",
    # collected-startup-logs-62 (round 53): three negative KV budgets ("Available KV cache memory: -1.75 / -3.05 /
    # -3.93 GiB" quoted as printed or in backticks)
    "r62-idx59857492256-gb10-dgxspark-qwen36-35b-a3b-nvfp4-fp8kv-mtp3-len262144-util040-v0280-kvneg175-fail":
        "no-kv-memory",
    "r62-idx16479753280-2xh100-e2e-qwen25-72b-bf16-tp2-util090assumed-kvneg305-fail": "no-kv-memory",
    "r62-idx52727416083-2xgb10-dgxspark-ray-qwen35-397b-a17b-int4-autoround-fp8kv-tp2-len262144-memgb100-v0181rc1-"
    "kvneg393-fail": "no-kv-memory",
}

NO_ERROR_TEXT = {
    "club3090-617-rtx5090-qwen36-27b-nvfp4-mtp-len100352-util085-fail": "the error's text is cut from the excerpt "
    "after the KV and graph lines (collected-startup-logs-33.md)",
    "wsl2-rtx4090-08vllm-script-gpt-oss-20b-util095-free-memory-refusal-fail": "the error sits in '#' comments of a "
    "shell script (a leading comment block is commentary to the reader)",
    "homelab-96g-qwen3-vl-4b-fp8-len32768-fail": "a sentence quoting a fragment ('4.5 GiB KV cache is needed')",
    "blog-rtx5090-qwen38-27b-nvfp4-eager-len204800-fail": "a paraphrase: '(204800 needs 6.56 GiB)'",
    "vllm-31903-deepseek-v32-tp8-pp4-ray-fail": "Ray's 'Error executing method initialize_from_config', cause cut",
    "vllm-16570-qwen25-vl-72b-4xa100-40g-pcie-tp4-fail": "an OOM the issue describes in words, not quoted",
    "llmdbench-h100-qwen3-32b-tp1-len32000-util090-fail": "a results table ('FAILED', 'No KV cache room')",
    "llmdbench-h100-deepseek-r1-tp1-load-oom": "a summary of the OOM in the report's own words",
    "rtx5090-qwen3-32b-awq-len8192-util070-v0280-kv-fail": "the error's sentence with '...' in its middle",
    "vllm-27508-gpt-oss-120b-h100-util095-fail": "'EngineCore failed to start' right after a positive KV budget",
    "vllm-17469-qwen3-30b-a3b-4xa10-tp4": "a traceback through capture_model cut before its exception",
    "blog-5070ti-qwen3-30b-a3b-nvfp4-fail": "a table cell (no space)",
    "aiinfralab-rtx5090-qwen3-4b-instruct-2507-len262144-util092-v0290-kv-fail": "a paraphrase ('roughly 36 GiB' "
    "needed, 'about 18.96 GiB' available)",
    "l20x2-qwen3-32b-bf16-tp2-len16384-util090-v084-v1-oom-after-kv-sizing-fail": "the OOM in the reporter's words "
    "('end with cuda oom'); the worker's traceback is cut before its exception",
    "inferencex-8xh100-kimi-k25-int4-tp8-kvfp8-len262144-util095-v0202-kv-fail": "the KV-cache failure in the "
    "reporter's words ('requires 8.58 GiB of KV cache') and the launch script",
    "vllm-pr48601-4xh100-qwen36-27b-fp8-tp4-mrv2-util092-kernel-warmup-oom-fail": "the memory summary before the "
    "failure; the OOM at kernel warm-up is stated in words ('We will encounter an OOM at kernel warmup')",
    "vllm-recipes-pr893-8xh200-glm-53-fp8-tp8-kvfp8-len1048576-v0280-kv-fail": "a validation note in words "
    "('--max-model-len is required on 8xH200', 25.94 GiB of KV per rank)",
    "r37-vllm18124-a100-80g-qwen25-vl-3b-util03-no-cache-blocks-fail": "the error's words only in the issue's "
    "title, a '#' heading line (commentary to the reader), and no log line",
    "r42-rocmvllm375-8xmi300x-deepseek-r1-fp8-tp8-kvfp8-len128000-v067dev215-fp8-padding-assert-fail": "the "
    "AssertionError only in the issue's title, a '#' heading line",
    "r42-djl3055-4xl4-llama3-8b-instruct-tp4-seqs256-util092-v0230-graph-capture-oom-fail": "the OOM in the PR "
    "author's words and a results table",
    "r42-djl3055-4xl4-llama3-8b-instruct-tp4-seqs256-util092-lmi27-v0231-graph-capture-oom-fail": "the OOM in the "
    "PR author's words and a results table",
    "r42-vllm7593-8xl4-gemma2-9b-it-tp8-v05x-v0-cudagraph-capture-oom-fail": "a traceback through capture_model "
    "cut before its exception",
    "r42-qwen3vl1493-8xh20-qwen3-vl-235b-a22b-instruct-fp8online-tp8-ep-util070-len8192-transformers-backend-oom-fail":
    "the OOM in the reporter's words ('I met an OOM error')",
    "r42-lmcache1435-8xh200-qwen3-coder-480b-a35b-fp8-dp8-ep-len131072-util075-v01011-lmcache-fail": "an API "
    "server's traceback cut before its exception",
    "r42-vllm21361-8xh20-qwen3-235b-a22b-tp8-llm-sdk-default-len40960-v083-oom-fail": "the workers' SystemExit at "
    "shutdown; the OOM only in the reporter's words",
    "r42-vllm10797-rtx4080-llama32-3b-util100-v064-fail": "the failure only in the issue's title",
    "r43-vllm33155-h100-gpt-oss-120b-len5120-seqs1-util097-O3-v0141-oom-fail": "a log cut after torch.compile; the "
    "OOM only in the title and the reporter's words",
    "r43-vllm15092-4xrtx4090-qwen25-32b-instruct-tp4-defaults-v080-not-enough-memory-fail": "the failure only in "
    "the reporter's words ('it will prompt that there is not enough memory')",
    "r44-vllm15664-l40s-nemotron-super-49b-gptq-4bit-len32768-v1-v083-oom-fail": "the failure only in the issue's "
    "title ('VLLM 0.8.2 OOM error') and the reporters' words",
    "r44-vllm49064-2xrx7900xt-rocm-qwen38-27b-tp2-len132000-util085-kv-check-v0231-fail": "the KV check only "
    "paraphrased ('first failed on KV capacity (estimated maximum model length is 123872)') inside the comment it "
    "shares with two mamba-block failures",
    "r45-aiguru-aiservices-rtxpro6000-qwen36-35b-a3b-bf16-len1048576-yarn-util095-v0190-fail": "the failure only in "
    "the README's words ('Crashes in a restart loop on 96 GB GPU ... leaving insufficient VRAM for 1M-token KV cache')",
    "r47-vllm5248-2xt4-deepseek-coder-6.7b-instruct-fp16-tp2-gpu-blocks-507-fail": "the worker's error line cut in "
    "its first words ('Error execut') after a positive block count",
    "r48-vllm4429-2xl40-deepseek-coder-33b-instruct-fp16-tp2-v041-kv-check-fail": "the worker's traceback from "
    "initialize_cache cut before its exception",
    "r48-syvai1-wsl2-rtx3090-qwen38-27b-w4a16-autoround-kvfp8-len10000-util093-mtp1-marlin-repack-oom-fail": "the "
    "EngineCore traceback cut in marlin.py before its exception; the OOM only in the reporter's words",
    "r50-club3090-1134-wsl2-2xrtx3090-qwen38-27b-dual-fast-tp2-util090-cotenant-17-20gib-fail": "the maintainer's "
    "diagnosis (17.0 / 19.6 GiB held at idle by other software) and the repository's preflight error; vLLM's own "
    "error is not quoted",
    "r52-qwen3vl1204-rtx4060ti16gb-qwen25-vl-7b-instruct-fp16-util080-v085inferred-load-oom-fail": "the EngineCore "
    "traceback cut inside the model's construction (ParallelLMHead.__init__) before its exception; the OOM only in "
    "the reporter's words",
    "r54-minimaxm25-issue30-16xh100-4nodes-minimax-m25-fp8-tp4-pp4-ray-v018inferred-kvsetup-keyerror-fail": "a Ray "
    "worker's RayTaskError(KeyError) without its message, and no engine failure line quoted",
    "r54-vllm30017-24gpu-3nodes-nv8-deepseek-v31-terminus-bf16-tp8-pp3-ray-eager-util095-v0120-initkv-fail": "the "
    "EngineCore traceback through initialize_from_config cut before its exception",
    "r54-glmv89-2xt4-glm41v-9b-tp2-fp16-len65536-util090default-v092-v0fallback-mmprofile-fail": "the exception only "
    "in the issue's title, not a log line ('Attempted to assign 100 = 100 multimodal tokens to 30000 placeholders')",
    "r54-dgxsparkplaybooks63-2xgb10-minimax-m2-awq-tp2-ray-len128000-util070-v0161rc1-raycluster-fail": "the error "
    "only in the issue's title ('Tensor parallel size (2) exceeds available GPUs (1)'); the quoted log is the "
    "command and the banner",
    "r55-vllm20726-rtx5060ti-16gb-qwen25-7b-base-bf16-len1024-util085-v092-kvcheck-fail": "the EngineCore "
    "traceback cut in check_enough_kv_cache_memory before its exception (which of its two KV errors is not quoted)",
    "r56-vllm47982-rtx5090-qwen36-35b-a3b-nvfp4-b12x-1gpu-mnbt8192-util096-v024x-b12x-workspace-oom-fail": "the "
    "EngineCore traceback cut inside FlashInfer's B12xMoEWrapper._allocate_buffers before its exception; the OOM only "
    "in the reporter's words",
    "r57-idx59827454839-rtx5080-wsl2-qwen25-3b-instruct-default-util092-v0260-free-mem-refusal-fail": "the refusal "
    "for free memory in the author's words ('the server refuses to start'), vLLM's message not quoted",
    "r59-idx53648447805-rtx4070super-mistral7b-v03-fp8-len32768-util085-v0151-kv241-fail": "a table cell in the "
    "author's words ('ERROR: ValueError — Insufficient KV cache. Required 4.0 GiB, available 2.41 GiB'), not vLLM's "
    "message",
}


def failed_rows() -> list[dict]:
    rows = []
    for path in sorted(DATA.glob("*startup-logs*.jsonl")):
        rows += [r for r in map(json.loads, path.read_text().splitlines()) if r.get("startup_ok") is False]
    return rows


def test_every_failed_row_is_listed() -> None:
    """A failed row added to the data later must be classified here (expected code, or why there is none)."""
    ids = {r["id"] for r in failed_rows()}
    assert ids == set(EXPECTED) | set(NO_ERROR_TEXT), sorted(ids ^ (set(EXPECTED) | set(NO_ERROR_TEXT)))


@pytest.mark.parametrize("row_id", sorted(EXPECTED))
def test_public_failure_gets_its_code(row_id: str) -> None:
    row = next(r for r in failed_rows() if r["id"] == row_id)
    codes = [d.code for d in diagnose_log(row["quote"]).diagnoses if d.severity == "error"]
    assert codes and codes[0] == EXPECTED[row_id], codes


def test_negative_budget_fix_names_the_flags() -> None:
    # vllm#23278: gpt-oss-120b on one H100 with vLLM 0.10.1 defaults: 65.97 GiB of weights, -2.14 GiB for KV
    row = next(r for r in failed_rows() if r["id"] == "vllm-23278-gpt-oss-120b-h100-fail")
    diag = next(d for d in diagnose_log(row["quote"]).diagnoses if d.code == "no-kv-memory")
    assert "-2.14 GiB" in diag.evidence
    assert diag.alternatives and diag.alternatives[0].flags == ["--tensor-parallel-size", "2"]


def test_zero_blocks_of_a_start_that_did_not_fail_is_not_a_diagnosis() -> None:
    # an attention-free model prints "# GPU blocks: 0" on V0 and starts (worker.py raise_if_cache_size_invalid
    # raises at 0 blocks only for models with attention)
    text = "INFO 01-13 11:35:23 gpu_executor.py:76] # GPU blocks: 0, # CPU blocks: 2048\n"
    assert not [d for d in diagnose_log(text).diagnoses if d.code == "no-kv-memory"]
    failed = text + "ValueError: something else went wrong\n"
    assert [d.code for d in diagnose_log(failed).diagnoses if d.code == "no-kv-memory"] == ["no-kv-memory"]


def test_a_negative_block_count_is_no_kv_memory_by_itself() -> None:
    # vllm#184 (vLLM 0.1.0 on a 16 GB T4, vicuna-7b): the block count came out negative and the cache tensor
    # could not be built; the reporter's quote runs the error into the same line, so only the count is a line
    text = "INFO 06-21 10:00:18 llm_engine.py:128] # GPU blocks: -1, # CPU blocks: 512\n"
    assert [d.code for d in diagnose_log(text).diagnoses if d.severity == "error"] == ["no-kv-memory"]


def test_concurrency_below_one_in_a_cut_log_is_kv_too_small() -> None:
    # Orpheus-TTS#109 (V0 0.7.3 on a 12 GB card): the log stops after the capacity lines; V0 prints
    # num_gpu_blocks x block_size / max_model_len = 1797 x 16 / 131072 = 0.219 -> "0.22x", then raises because
    # max_model_len > 1797 x 16 = 28,752 tokens (worker.py raise_if_cache_size_invalid)
    text = ("INFO 04-07 08:59:33 executor_base.py:111] # cuda blocks: 1797, # CPU blocks: 2340\n"
            "INFO 04-07 08:59:33 executor_base.py:116] Maximum concurrency for 131072 tokens per request: 0.22x\n")
    diag = next(d for d in diagnose_log(text).diagnoses if d.severity == "error")
    assert diag.code == "kv-cache-too-small"
    assert diag.suggested_flags == ["--max-model-len", "28752"]
    # without a block count, the least the printed ratio allows: "0.22x" is 0.215 or more, 0.215 x 131072 =
    # 28,180.5 -> 28,180 (0.22 x 131072 = 28,835 would be over the 28,752 the cache held)
    alone = diagnose_log(text.split("\n", 1)[1]).diagnoses
    assert [d.suggested_flags for d in alone if d.severity == "error"] == [["--max-model-len", "28180"]]
    # a start that reached the API server is not a failure, and 1.00x and above is one request or more
    started = text + "INFO 04-07 09:00:01 launcher.py:29] Uvicorn running on http://0.0.0.0:8000\n"
    assert not [d for d in diagnose_log(started).diagnoses if d.code == "kv-cache-too-small"]
    assert not [d for d in diagnose_log(text.replace("0.22x", "1.37x")).diagnoses if d.code == "kv-cache-too-small"]


def test_a_cut_v0_kv_check_is_kv_too_small_without_a_count() -> None:
    """V0's raise_if_cache_size_invalid: "The model's max seq len (%d) is larger than the maximum number of tokens
    that can be stored in KV cache (%d). ..." Cut after its first figure the failure is known and the count is not:
    no --max-model-len figure is made up; whole, or split over two lines, the count gives the flag."""
    cut = "ValueError: The model's max seq len (32768) [...]\n"
    diag = next(d for d in diagnose_log(cut).diagnoses if d.severity == "error")
    assert diag.code == "kv-cache-too-small"
    assert diag.suggested_flags == [] and "32768" in diag.title
    assert [d.code for d in diagnose_log("ValueError: The model's max seq len (32768)\n").diagnoses
            if d.severity == "error"] == ["kv-cache-too-small"]
    whole = ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
             "stored in KV cache (13024). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
             "initializing the engine.\n")
    split = whole.replace("(32768) is", "(32768)\nis")
    for text in (whole, split):
        diag = next(d for d in diagnose_log(text).diagnoses if d.severity == "error")
        assert (diag.code, diag.suggested_flags) == ("kv-cache-too-small", ["--max-model-len", "13024"])
    # V1's own sentence ("... with the model's max seq len (N) ...") is not the V0 check's start
    assert not [d for d in diagnose_log("To serve at least one request with the model's max seq len (32768)\n")
                .diagnoses if d.code == "kv-cache-too-small" and not d.suggested_flags and "cut" in d.title]


def test_a_worker_exception_in_graph_capture_is_not_called_memory() -> None:
    """kyuz0's 2x R9700 Qwen3-Next-80B AWQ start on 0.13.0rc2 (collected-startup-logs-53): weights and KV cache
    done, the PIECEWISE graphs captured, then the first FULL decode capture raises a Triton shape check
    ('arange's range must be a power of 2') in a worker, which vLLM logs as 'WorkerProc hit an exception.'
    (v1/executor/multiproc_executor.py). Doctor names the capture and the cudagraph_mode fix, not memory."""
    log = "\n".join([
        "(Worker_TP0 pid=1) INFO 12-19 17:12:34 [gpu_model_runner.py:3659] Model loading took 23.5020 GiB memory "
        "and 35.701153 seconds",
        "(Worker_TP0 pid=1) INFO 12-19 17:12:44 [gpu_worker.py:375] Available KV cache memory: 7.09 GiB",
        "(EngineCore_DP0 pid=2) INFO 12-19 17:12:45 [kv_cache_utils.py:1291] GPU KV cache size: 154,496 tokens",
        "(Worker_TP0 pid=1) Capturing CUDA graphs (decode, FULL):   0%|          | 0/7 [00:00<?, ?it/s]",
        "(Worker_TP1 pid=3) ERROR 12-19 17:12:51 [multiproc_executor.py:826] WorkerProc hit an exception.",
        "(Worker_TP1 pid=3) ERROR 12-19 17:12:51 [multiproc_executor.py:826] Traceback (most recent call last):",
        '(Worker_TP1 pid=3) ERROR 12-19 17:12:51 [multiproc_executor.py:826]   File "/x/vllm/v1/worker/'
        'gpu_worker.py", line 400, in compile_or_warm_up_model',
        "(Worker_TP1 pid=3) ERROR 12-19 17:12:51 [multiproc_executor.py:826] ValueError: arange's range must be "
        "a power of 2",
    ])
    errors = [d for d in diagnose_log(log).diagnoses if d.severity == "error"]
    assert [d.code for d in errors] == ["graph-capture-failed"]
    assert "arange's range must be a power of 2" in errors[0].evidence
    assert "cudagraph_mode" in errors[0].fix and "--enforce-eager" in errors[0].fix
    # the same worker exception before any capture began stays a start-up failure of unknown cause
    before = "\n".join(line for line in log.splitlines() if "Capturing" not in line)
    assert [d.code for d in diagnose_log(before).diagnoses if d.severity == "error"] == ["startup-failed"]
