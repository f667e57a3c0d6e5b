"""A hostile or broken config.json: every size is bounded (docs/limits.md), the field is named, and the
planner's time is bounded for anything read_arch accepts.

Property tests (hypothesis) draw configs with extreme and hostile values: 0, negatives, 2**64, floats,
NaN/inf, strings, lists, and the largest values the limits allow."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vllmkit.arch import read_arch
from vllmkit.arch.reader import CONFIG_LIMITS, MAX_LAYERS
from vllmkit.errors import ConfigError, VllmkitError

BASE = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "vocab_size": 128256, "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}


@pytest.mark.parametrize(("field", "value"), [
    ("num_hidden_layers", 10**9),  # the config that used to hang the planner
    ("num_hidden_layers", MAX_LAYERS + 1),
    ("hidden_size", 1 << 30),
    ("num_attention_heads", 0),  # with head_dim set this used to plan "FITS"
    ("num_attention_heads", 1 << 20),
    ("num_key_value_heads", 1 << 20),
    ("vocab_size", 0),
    ("vocab_size", 1 << 40),
    ("max_position_embeddings", 0),  # used to plan "FITS" with a context of 0
    ("max_position_embeddings", 1 << 40),
    ("intermediate_size", 1 << 40),
    ("head_dim", 1 << 20),
])
def test_out_of_bounds_field_is_named(field: str, value: int) -> None:
    with pytest.raises(ConfigError) as err:
        read_arch({**BASE, "head_dim": 128, field: value})
    assert f"`{field}`" in err.value.message
    assert err.value.exit_code == 4


@pytest.mark.parametrize("value", [math.inf, math.nan, 1e400, -1, 32.5, "32", [32], True])
def test_non_integer_layer_counts_are_config_errors(value: object) -> None:
    with pytest.raises(ConfigError) as err:
        read_arch({**BASE, "num_hidden_layers": value})
    assert "num_hidden_layers" in err.value.message


def test_largest_published_models_are_inside_the_limits() -> None:
    # the catalog's maxima (reader.py comment) are each at least 16x below their limit
    for field, largest in (("num_hidden_layers", 126), ("hidden_size", 16384), ("num_attention_heads", 128),
                           ("vocab_size", 262208), ("max_position_embeddings", 10485760), ("intermediate_size", 53248)):
        assert CONFIG_LIMITS[field] >= 16 * largest, field


def test_unknown_architecture_warns() -> None:
    arch = read_arch({**BASE, "architectures": ["TotallyNewForCausalLM"]})
    assert any("TotallyNewForCausalLM is not one vLLM 0.32.0 implements natively" in w for w in arch.warnings)
    assert not any("natively" in w for w in read_arch(BASE).warnings)


def test_tokenizer_sentinel_length_is_ignored() -> None:
    cfg = {k: v for k, v in BASE.items() if k != "max_position_embeddings"}
    arch = read_arch(cfg, tokenizer_config={"model_max_length": 1000000000000000019884624838656})
    assert arch.native_max_model_len == 2048  # vLLM's default when the config has no length key


HOSTILE_INT = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([0, 1, 2, 3, 7, 4096, 4097, 1 << 18, (1 << 18) + 1, 1 << 28, 10**9]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5), st.none(), st.booleans(), st.lists(st.integers(), max_size=3),
)
FIELDS = ["num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "vocab_size",
          "max_position_embeddings", "intermediate_size", "sliding_window", "num_experts", "num_experts_per_tok",
          "kv_lora_rank", "attention_chunk_size"]
HOSTILE_CONFIG = st.fixed_dictionaries(
    {"model_type": st.sampled_from(["llama", "qwen3", "mistral", "deepseek_v3", "gemma3_text", "llama4_text", "x"])},
    optional={f: HOSTILE_INT for f in FIELDS} | {
        "layer_types": st.lists(st.sampled_from(["full_attention", "sliding_attention", "linear_attention", "?"]),
                                max_size=4),
        "architectures": st.lists(st.text(max_size=8), max_size=2)},
).map(lambda hostile: {**BASE, **hostile})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(HOSTILE_CONFIG)
def test_read_arch_accepts_only_bounded_architectures(config: dict) -> None:
    try:
        arch = read_arch(config)
    except ConfigError as exc:
        assert exc.message and exc.exit_code == 4
        return
    assert 1 <= arch.num_hidden_layers <= MAX_LAYERS
    assert len(arch.layer_kinds) == arch.num_hidden_layers
    assert 1 <= arch.num_attention_heads <= CONFIG_LIMITS["num_attention_heads"]
    assert 1 <= arch.head_dim <= CONFIG_LIMITS["head_dim"]
    assert 1 <= arch.vocab_size <= CONFIG_LIMITS["vocab_size"]
    assert 1 <= arch.native_max_model_len <= CONFIG_LIMITS["max_position_embeddings"]


EXTREME_ACCEPTED = st.fixed_dictionaries({
    "num_hidden_layers": st.sampled_from([1, 2, 61, MAX_LAYERS]),
    "num_attention_heads": st.sampled_from([1, 3, 64, 4096]),
    "hidden_size": st.sampled_from([1, 64, 1 << 18]),
    "vocab_size": st.sampled_from([1, 32000, 1 << 24]),
    "max_position_embeddings": st.sampled_from([1, 2048, 1 << 28]),
    "head_dim": st.sampled_from([1, 128, 8192]),
    "sliding_window": st.sampled_from([None, 1, 4096, 1 << 28]),
    "model_type": st.sampled_from(["llama", "mistral", "gemma3_text"]),
}).map(lambda c: {**BASE, **{k: v for k, v in c.items() if v is not None}, "num_key_value_heads": 1})


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(EXTREME_ACCEPTED)
def test_planning_an_extreme_config_is_bounded(tmp_path_factory: pytest.TempPathFactory, config: dict) -> None:
    """Whatever read_arch accepts, a whole plan (candidates x fit search) ends in seconds with a result
    or a domain error: the per-layer work is computed once per candidate, not once per fit step."""
    from vllmkit.plan.models import PlanRequest
    from vllmkit.plan.service import build_plan

    folder = tmp_path_factory.mktemp("cfg")
    Path(folder, "config.json").write_text(json.dumps(config))
    env = {"HOME": str(folder), "VLLMKIT_NO_CALIBRATION": "1", "HF_HUB_OFFLINE": "1"}
    started = time.monotonic()
    try:
        plan = build_plan(PlanRequest(model=str(folder), gpu="h100", gpu_count=8), env)
        assert plan.settings.max_model_len >= 1
    except VllmkitError as exc:
        assert exc.exit_code in (2, 3, 4, 5)
    assert time.monotonic() - started < 20.0
