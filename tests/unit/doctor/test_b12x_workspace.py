"""An out-of-memory start whose traceback runs through FlashInfer's b12x NVFP4 MoE workspace (vLLM's
`--moe-backend flashinfer_b12x` on SM12x GPUs) gets the fix the public reports found: the Marlin MoE backend.

vllm#49476 (benchmarks/data/collected-startup-logs-56.jsonl): on two RTX 5070 Ti the same server ran out of memory in
the profile run with flashinfer_b12x (`torch.OutOfMemoryError` raised from FlashInfer's
`allocate_sm120_dynamic_workspace`, called from `B12xMoEWrapper.__init__`) and started with `--moe-backend marlin`;
on an RTX PRO 6000 the b12x server had 11.47 GiB less KV cache than the Marlin one. The flag is checked against the
real vLLM parser in tests/e2e/test_engine_args_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

from vllmkit.doctor.diagnose import diagnose_log

DATA = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "collected-startup-logs-56.jsonl"
ROW = "r56-vllm49476-2xrtx5070ti-pp2-qwen36-35b-a3b-nvfp4-b12x-fp8kv-len180224-util092-v0251-profile-run-oom-fail"

# a b12x traceback as vLLM prints it (frames of vllm#47982's quote, the OOM line of torch's message)
B12X_LOG = """\
(EngineCore pid=135) ERROR 07-08 09:40:55 [core.py:1231]     self._wrapper = B12xMoEWrapper(
(EngineCore pid=135) ERROR 07-08 09:40:55 [core.py:1231]     self._allocate_buffers()
(EngineCore pid=135) ERROR 07-08 09:40:55 [core.py:1231]   File "/usr/local/lib/python3.12/dist-packages/flashinfer/fused_moe/cute_dsl/b12x_moe.py", line 410, in _allocate_buffers
(EngineCore pid=135) ERROR 07-08 09:40:55 [core.py:1231]     self._static_workspace = allocate_sm120_moe_workspace(
(EngineCore pid=135) ERROR 07-08 09:40:55 [core.py:1231] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.50 GiB. GPU 0 has a total capacity of 31.36 GiB of which 1.02 GiB is free.
"""


def _oom(text: str):
    errors = [d for d in diagnose_log(text).diagnoses if d.severity == "error"]
    assert errors and errors[0].code == "cuda-oom", errors
    return errors[0]


def test_the_public_b12x_oom_is_told_the_marlin_backend() -> None:
    row = next(r for r in map(json.loads, DATA.read_text().splitlines()) if r["id"] == ROW)
    d = _oom(row["quote"])
    assert d.alternatives and d.alternatives[0].flags == ["--moe-backend", "marlin"]
    # vLLM builds the b12x wrapper on the MoE layer's first forward: the profile run, as the report says
    assert d.details["phase"] == "profiling" and "profiling run" in d.title


def test_a_b12x_traceback_is_told_the_marlin_backend_first() -> None:
    d = _oom(B12X_LOG)
    assert d.alternatives[0].flags == ["--moe-backend", "marlin"]
    assert d.details["phase"] == "profiling"
    assert "b12x" in d.alternatives[0].effect


def test_an_oom_without_b12x_frames_is_not() -> None:
    plain = B12X_LOG.replace("B12xMoEWrapper", "FusedMoE").replace("allocate_sm120_moe_workspace", "torch.empty")
    d = _oom(plain)
    assert all("--moe-backend" not in a.flags for a in d.alternatives)
