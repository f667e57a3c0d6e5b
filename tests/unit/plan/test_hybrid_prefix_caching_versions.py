"""Prefix caching on hybrid (mamba / linear-attention) models by vLLM release, read in the wheels.

- ModelConfig.is_prefix_caching_supported: False for hybrids ("Hybrid models do not support prefix caching since
  the feature is still experimental") in 0.15.1, 0.17.0, 0.19.0, 0.23.0, 0.24.0 and 0.25.0; True ("Generative
  hybrid models support prefix caching") in 0.26.0, 0.29.0 and 0.32.0. So the default is off before 0.26.
- models/config.py MambaModelConfig: with prefix caching on, 0.15+ use the mamba "align" mode (two state blocks
  a request); 0.13 / 0.14 have no such mode and switch an explicit --enable-prefix-caching off for a model class
  without SupportsMambaPrefixCaching ("Hybrid or mamba-based model detected without support for prefix caching:
  disabling."), which Qwen3-Next and Qwen3.5 lack.

Public logs: a vLLM 0.23.0 Qwen3.5-4B start on an RTX 4090 D (collected-startup-logs-14) printed 235,706 tokens
from 10.21 GiB with blocks of 528 tokens: 235,706 / 4,096 = 57.5 requests of 11 blocks (8 attention blocks and
one state block per GDN group), not the 14 blocks of the align mode. A vLLM 0.13.0 Qwen3-Next start on 2x L40S
(collected-startup-logs-15) asked for prefix caching and printed the "disabling" line.
"""

from __future__ import annotations

import pytest

from vllmkit.engine.versions import rules_for
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan

ENV = {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"}
GIB = 1 << 30


@pytest.mark.parametrize(("version", "default_on"), [("0.15.1", False), ("0.23.0", False), ("0.25.0", False),
                                                     ("0.26.0", True), ("0.32.0", True)])
def test_the_default_by_release(version: str, default_on: bool) -> None:
    assert rules_for(version).hybrid_prefix_caching is default_on


def _blocks_per_request(version: str, **kw) -> float:
    plan = build_plan(PlanRequest(model="Qwen/Qwen3.5-4B", source="catalog", gpu="rtx-4090", max_model_len=4096,
                                  gpu_memory_utilization=0.9, vllm_version=version, **kw), ENV)
    kv = plan.kv_cache
    return kv.num_blocks / kv.max_concurrency


def test_the_public_0_23_start_holds_one_state_block_per_group() -> None:
    # 8 attention blocks of 528 tokens for 4,096 + one per GDN group (3) = 11, as the log's 235,706 tokens say
    assert _blocks_per_request("0.23.0") == pytest.approx(11, abs=0.01)
    # the same release with the flag given: the align mode's two state blocks per group, 8 + 6 = 14
    assert _blocks_per_request("0.23.0", enable_prefix_caching=True) == pytest.approx(14, abs=0.01)
    assert _blocks_per_request("0.32.0") == pytest.approx(14, abs=0.01)  # on by default from 0.26


def test_before_the_align_mode_an_explicit_flag_is_switched_off() -> None:
    assert _blocks_per_request("0.13.0", enable_prefix_caching=True) == pytest.approx(11, abs=0.01)
    assert not rules_for("0.14.0").mamba_align_mode and rules_for("0.15.1").mamba_align_mode


@pytest.mark.parametrize(
    ("version", "flag", "says"),
    [
        ("0.23.0", None, "--enable-prefix-caching turns it on in the mamba 'align' mode"),  # default off, on request
        ("0.13.0", True, "even when asked for"),  # switched off although asked for
    ],
)
def test_the_serving_note_says_why_it_is_off(version: str, flag: bool | None, says: str) -> None:
    from vllmkit.launch.presets import plan_features

    req = PlanRequest(model="Qwen/Qwen3-Next-80B-A3B-Instruct", source="catalog", gpu="h100", max_model_len=4096,
                      vllm_version=version, enable_prefix_caching=flag)
    plan = build_plan(req, ENV)
    note = plan_features(plan, req, registry=None).prefix_caching
    assert note.detail.startswith("off (") and says in note.detail
