"""How benchmarks/perf_accuracy.py replays public runs: the model and workload each run is scored on.
Checked against what the publishers and model cards state, not against the replay's own arithmetic."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(BENCH))

import perf_accuracy as pa  # noqa: E402

from vllmkit.hardware.profiles import load_profiles  # noqa: E402


@pytest.fixture(scope="module")
def cases() -> dict[str, pa.Case]:
    wanted = {"gpustack-deepseek-r1-h200-sharegpt-c4-L404", "mushfiq-rtx4090-mistral7b-256-128-c8",
              "dstack-mi300x-405b-bf16-tp8-sonnet80-n8", "gpustack-gpt-oss-20b-h100-rand2000-100-L313"}
    profiles = load_profiles(include_user_config=False)
    out = {r["id"]: pa.build_case(r, profiles) for r in pa.load_rows() if r["id"] in wanted}
    assert set(out) == wanted and all(out.values())
    return out


def test_an_fp8_checkpoint_is_not_quantized_again(cases) -> None:
    """DeepSeek-R1-0528 is published in FP8 (block 128x128): 673 GB of tensors without the MTP layer
    vLLM skips (catalog note), i.e. ~84 GB on each of 8 GPUs, and 37 B parameters activated per token
    (the model card). Treating the run's "fp8" as --quantization fp8 on a 16-bit checkpoint halved it."""
    m = cases["gpustack-deepseek-r1-h200-sharegpt-c4-L404"].perf.model
    assert m.tp == 8
    per_rank = m.dense_bytes + m.expert_bytes
    assert 80e9 < per_rank < 88e9
    assert m.active_params == pytest.approx(37e9, rel=0.05)


def test_random_prompts_that_stop_at_eos_spread_below_max_tokens(cases) -> None:
    """The blog prints 377 output tok/s at 3.78 req/s for a 128-token cap: 99.7 tokens a request."""
    wl = cases["mushfiq-rtx4090-mistral7b-256-128-c8"].workload
    assert wl.output_len == pytest.approx(377 / 3.78) and wl.output_cap == 128 and wl.concurrency == 8
    # GPUStack prints the totals: 100 prompts, <100 tokens each on average under a 100-token cap
    gs = cases["gpustack-gpt-oss-20b-h100-rand2000-100-L313"].workload
    assert gs.output_cap == 100 and 90 < gs.output_len < 100


def test_sonnet_prompts_keep_one_length(cases) -> None:
    """dstack's sonnet prompts ask for a fixed number of lines: ~60 of 150 tokens in every run, so the
    completions are not spread down from the cap."""
    wl = cases["dstack-mi300x-405b-bf16-tp8-sonnet80-n8"].workload
    assert wl.output_cap is None and wl.output_len < 100
