"""`vllmkit capacity` and `vllmkit plan` with a workload through the CLI: JSON keys, human view,
exit 3 for an SLO no configuration meets, bad input, and the k8s export with its autoscaler.

Offline: HF_HUB_OFFLINE=1 makes the auto source fall back to the bundled catalog."""

from __future__ import annotations

import json

import pytest
import yaml
from tests.clirun import invoke


@pytest.fixture
def env(tmp_path, monkeypatch):
    values = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"), "VLLMKIT_NO_CALIBRATION": "1"}
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    return values


CAP = ["capacity", "Qwen/Qwen3-8B", "--gpu", "h100", "--qps", "20", "--input-len", "1024", "--output-len", "256"]


def test_capacity_json_keys(env) -> None:
    res = invoke([*CAP, "--tpot-p99", "50ms", "--gpu-price", "2.50", "--json"])
    assert res.exit_code == 0, res.stderr
    d = json.loads(res.stdout)["data"]
    for key in ("replicas", "gpus_per_replica", "gpus_total", "per_replica", "headroom", "cost", "candidates", "source"):
        assert key in d
    for key in ("precision", "tensor_parallel_size", "pipeline_parallel_size", "max_num_seqs", "goodput_rps",
                "output_tokens_per_s", "ttft_ms_p99", "tpot_ms_p99", "serve_command"):
        assert key in d["per_replica"]
    assert d["gpus_total"] == d["replicas"] * d["gpus_per_replica"]
    assert d["cost"]["per_hour"] == pytest.approx(2.5 * d["gpus_total"])
    assert d["per_replica"]["serve_command"][:2] == ["vllm", "serve"]
    assert "--max-num-seqs" in d["per_replica"]["serve_command"]


def test_capacity_human_view(env) -> None:
    res = invoke([*CAP, "--tpot-p99", "50ms"])
    assert res.exit_code == 0, res.stderr
    out = res.stdout
    assert "replicas x" in out and "goodput" in out and "at peak" in out and "vllm serve" in out


def test_impossible_slo_exits_3_with_the_floor(env) -> None:
    # below the decode floor of every option searched, the AWQ sibling's at TP 8 (~0.18 ms) included
    res = invoke([*CAP, "--tpot-p99", "0.05ms"])
    assert res.exit_code == 3
    assert "TPOT" in res.stderr and "physically impossible" in res.stderr and "Traceback" not in res.stderr
    js = invoke([*CAP, "--tpot-p99", "0.05ms", "--json"])
    doc = json.loads(js.stdout)
    assert js.exit_code == 3 and doc["errors"][0]["code"] == "slo-impossible"


PHI4_L4 = ["capacity", "microsoft/phi-4", "--gpu", "l4", "--qps", "5", "--workload", "chat", "--tpot-p99", "60ms"]


def test_online_fp8_is_offered_and_sized_when_16_bit_weights_miss_the_tpot(env) -> None:
    # phi-4 (14.7B, 29.3 GB in BF16, no quantized sibling in the catalog; 10 KV heads: TP 2 at most in powers of
    # two) on L4s (300 GB/s): a TP=2 rank reads 14.7 GB per decode step, 49 ms at the datasheet bandwidth, so a
    # 60 ms p99 TPOT is out of reach with step overheads; vLLM's online FP8 halves those bytes (24.5 ms)
    res = invoke(PHI4_L4)
    assert res.exit_code == 3, res.stderr
    assert "--quantization fp8" in res.stderr
    res = invoke([*PHI4_L4, "--quantization", "fp8", "--json"])
    assert res.exit_code == 0, res.stderr
    d = json.loads(res.stdout)["data"]["per_replica"]
    assert d["precision"] == "fp8" and d["tpot_ms_p99"] <= 60
    cmd = d["serve_command"]
    assert cmd[cmd.index("--quantization") + 1] == "fp8"


@pytest.mark.parametrize("bad", [["--qps", "0"], ["--headroom", "1.5"], ["--tpot-p99", "soon"],
                                 ["--redundancy", "many"], ["--export", "helm"], ["--quantization", "awq"]])
def test_bad_input_is_a_usage_error(env, bad) -> None:
    args = list(CAP)
    if bad[0] in args:
        args[args.index(bad[0]) + 1] = bad[1]
    else:
        args += bad
    res = invoke(args)
    assert res.exit_code == 2 and res.stderr.startswith("error:"), res.stderr


def test_export_k8s_sets_replicas_and_an_hpa(env) -> None:
    res = invoke([*CAP, "--export", "k8s"])
    assert res.exit_code == 0, res.stderr
    docs = [d for d in yaml.safe_load_all(res.stdout) if d]
    kinds = [d["kind"] for d in docs]
    assert kinds.count("Deployment") == 1 and kinds.count("Service") == 1 and kinds.count("HorizontalPodAutoscaler") == 1
    deployment = docs[kinds.index("Deployment")]
    hpa = docs[kinds.index("HorizontalPodAutoscaler")]
    cap = json.loads(invoke([*CAP, "--json"]).stdout)["data"]
    assert deployment["spec"]["replicas"] == cap["replicas"]
    assert hpa["spec"]["maxReplicas"] == cap["replicas"]
    assert hpa["spec"]["minReplicas"] <= cap["replicas"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    # --json with --export: the envelope carries the same manifests (they used to be dropped)
    doc = json.loads(invoke([*CAP, "--export", "k8s", "--json"]).stdout)["data"]
    assert doc["export"]["format"] == "k8s" and doc["export"]["content"] == res.stdout


def test_plan_with_a_workload_has_performance(env) -> None:
    res = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--input-len", "1024", "--output-len", "256",
                  "--concurrency", "16", "--json"])
    assert res.exit_code == 0, res.stderr
    perf = json.loads(res.stdout)["data"]["performance"]
    for key in ("source", "workload", "output_tokens_per_s", "total_tokens_per_s", "requests_per_s", "ttft_ms",
                "tpot_ms", "itl_ms", "e2e_latency_s", "batch", "kv_usage", "bound", "assumptions"):
        assert key in perf
    assert perf["source"] == "estimated" and perf["bound"] in ("bandwidth", "compute", "kv-capacity", "max-num-seqs")
    for key in ("mean", "p99"):
        assert perf["ttft_ms"][key] > 0 and perf["tpot_ms"][key] > 0
    # 16 clients: throughput is about 16 x output tokens / e2e latency (Little's law)
    little = 16 * 256 / perf["e2e_latency_s"]["mean"]
    assert perf["output_tokens_per_s"] == pytest.approx(little, rel=0.15)
    assert perf["tpot_ms"]["p99"] >= perf["tpot_floor_ms"]


def test_plan_workload_preset_and_human_view(env) -> None:
    res = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--workload", "chat", "--request-rate", "4"])
    assert res.exit_code == 0, res.stderr
    assert "Performance (estimated)" in res.stdout and "out tok/s" in res.stdout


def test_plan_without_a_workload_has_no_performance(env) -> None:
    res = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--json"])
    assert json.loads(res.stdout)["data"]["performance"] is None


@pytest.mark.parametrize("bad", [["--input-len", "100"], ["--workload", "poetry"],
                                 ["--workload", "chat", "--concurrency", "4", "--request-rate", "2"],
                                 ["--workload", "chat", "--request-rate", "-1"]])
def test_plan_bad_workload_is_a_usage_error(env, bad) -> None:
    res = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", *bad])
    assert res.exit_code == 2 and "error:" in res.stderr, res.stderr


def test_a_shared_system_prompt_is_computed_once(env) -> None:
    """--shared-prefix-len: the leading tokens every request shares are prefix-cache hits after the first
    request (vLLM's prefix caching, on by default): TTFT falls and the plan says what it assumed."""
    base = ["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--input-len", "2048", "--output-len", "128",
            "--concurrency", "32", "--json"]
    plain = json.loads(invoke(base).stdout)["data"]["performance"]
    shared = json.loads(invoke([*base, "--shared-prefix-len", "1792"]).stdout)["data"]["performance"]
    assert shared["workload"]["shared_prefix_len"] == 1792 and plain["workload"]["shared_prefix_len"] == 0
    assert shared["ttft_ms"]["mean"] < 0.6 * plain["ttft_ms"]["mean"]
    assert any("1,792 prompt tokens are shared" in a for a in shared["assumptions"])
    cap = json.loads(invoke([*CAP, "--shared-prefix-len", "768", "--json"]).stdout)["data"]
    free = json.loads(invoke([*CAP, "--json"]).stdout)["data"]
    assert cap["per_replica"]["goodput_rps"] >= free["per_replica"]["goodput_rps"]


@pytest.mark.parametrize("bad", [["--shared-prefix-len", "-1"], ["--shared-prefix-len", "4096"]])
def test_a_shared_prefix_outside_the_prompt_is_refused(env, bad) -> None:
    for cmd in (["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--input-len", "2048", "--output-len", "128"], CAP):
        res = invoke([*cmd, *bad, "--json"])
        assert res.exit_code == 2, res.stdout
        assert "--shared-prefix-len" in json.loads(res.stdout)["errors"][0]["message"]


def test_plan_at_a_rate_above_what_the_replica_completes_says_it_is_overloaded(env) -> None:
    # Qwen3-8B on one L4 with 8000-token prompts: the KV cache holds a few requests at a time, each
    # living tens of seconds, so 20 req/s is far beyond what it completes; the TTFT printed is then only
    # that of the simulated run (the queue grows while traffic lasts), which the plan must say
    args = ["plan", "Qwen/Qwen3-8B", "--gpu", "l4", "--input-len", "8000", "--output-len", "2000",
            "--request-rate", "20"]
    res = invoke([*args, "--json"])
    assert res.exit_code == 0, res.stderr
    perf = json.loads(res.stdout)["data"]["performance"]
    assert perf["overloaded"] is True and perf["requests_per_s"] < 0.9 * 20
    text = invoke(args)
    assert text.exit_code == 0
    assert "overloaded" in text.stdout and "vllmkit capacity" in text.stdout
    # within its means the same replica is not
    ok = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "l4", "--input-len", "1024", "--output-len", "128",
                 "--request-rate", "0.5", "--json"])
    assert json.loads(ok.stdout)["data"]["performance"]["overloaded"] is False


def test_capacity_workload_preset_is_the_presets_lengths(env) -> None:
    # docs/performance.md's table: chat = 1024 in / 256 out, the lengths CAP spells out
    preset = invoke(["capacity", "Qwen/Qwen3-8B", "--gpu", "h100", "--qps", "20", "--workload", "chat", "--json"])
    explicit = invoke([*CAP, "--json"])
    assert preset.exit_code == 0 and explicit.exit_code == 0, preset.stderr
    a, b = json.loads(preset.stdout)["data"], json.loads(explicit.stdout)["data"]
    assert (a["input_len"], a["output_len"], a["workload"]) == (1024, 256, "chat")
    assert b["workload"] is None
    for key in ("replicas", "gpus_total", "per_replica"):
        assert a[key] == b[key]
    human = invoke(["capacity", "Qwen/Qwen3-8B", "--gpu", "h100", "--qps", "20", "--workload", "chat"])
    assert "1024 in / 256 out tokens (chat preset)" in human.stdout


def test_capacity_explicit_length_overrides_the_preset(env) -> None:
    res = invoke(["capacity", "Qwen/Qwen3-8B", "--gpu", "h100", "--qps", "20", "--workload", "rag",
                  "--output-len", "64", "--json"])
    assert res.exit_code == 0, res.stderr
    d = json.loads(res.stdout)["data"]
    assert (d["input_len"], d["output_len"]) == (4096, 64)  # rag's prompt, the given completion


@pytest.mark.parametrize("cmd", [["capacity", "Qwen/Qwen3-8B", "--gpu", "h100", "--qps", "20"],
                                 ["plan", "Qwen/Qwen3-8B", "--gpu", "h100"]])
@pytest.mark.parametrize("bad", [["--workload", "chat", "--input-len", "0"],
                                 ["--workload", "chat", "--output-len", "0"],
                                 ["--workload", "essay"]])
def test_zero_length_with_a_preset_is_refused_not_replaced(env, cmd, bad) -> None:
    # an explicit 0 used to be swallowed by the preset's length (`0 or 1024`)
    res = invoke([*cmd, *bad])
    assert res.exit_code == 2 and res.stderr.startswith("error:"), res.stderr
    assert "Traceback" not in res.stderr


def test_capacity_needs_lengths_or_a_preset(env) -> None:
    res = invoke(["capacity", "Qwen/Qwen3-8B", "--gpu", "h100", "--qps", "20", "--input-len", "512"])
    assert res.exit_code == 2 and "--workload" in res.stderr, res.stderr



def test_capacity_carries_the_replica_plans_warnings(env) -> None:
    # a V100 fleet sized for a release whose wheels hold no sm_70 kernels (plan/candidates.py platform_warning)
    # is sized, and says so first, in people's view and in --json's data.warnings
    args = ["capacity", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "v100-sxm2-32gb", "--qps", "5",
            "--input-len", "512", "--output-len", "256", "--vllm-version", "0.26.0"]
    res = invoke([*args, "--json"])
    assert res.exit_code == 0, res.stderr
    warnings = json.loads(res.stdout)["data"]["warnings"]
    assert any("compute capability 7.0" in w for w in warnings), warnings
    human = invoke(args)
    assert human.exit_code == 0 and "warning: vLLM 0.26.0's published wheels" in human.stdout
    older = invoke([*args[:-1], "0.19.0", "--json"])
    assert not any("compute capability 7.0" in w for w in json.loads(older.stdout)["data"]["warnings"])


SPEC = ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}']


def test_speculative_decoding_is_modelled_at_the_acceptance_rate_given(env) -> None:
    """--spec-acceptance: the share of draft tokens the target accepts (what vLLM logs as 'Avg Draft acceptance
    rate'). n-gram drafts cost the GPU nothing; at 0.5 with 3 draft tokens each step emits 2.5 tokens a request, so
    the time per output token falls well below the plan's without it, and the plan says what it assumed."""
    base = ["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--input-len", "1000", "--output-len", "200",
            "--concurrency", "8", *SPEC, "--json"]
    plain = json.loads(invoke(base).stdout)["data"]["performance"]
    spec = json.loads(invoke([*base, "--spec-acceptance", "0.5"]).stdout)["data"]["performance"]
    assert spec["tpot_ms"]["mean"] < 0.5 * plain["tpot_ms"]["mean"]
    assert any("at a 50% acceptance rate (--spec-acceptance): each decode step verifies 4 tokens a request and emits "
               "2.50 on average" in a for a in spec["assumptions"])
    assert any("is not modelled" in a and "--spec-acceptance" in a for a in plain["assumptions"])
    # vLLM's rate counts drafted tokens only, and n-gram steps without a match draft none: the plan says which rate
    assert any("accepted tokens over k x all decode steps" in a for a in spec["assumptions"])


@pytest.mark.parametrize("bad, says", [
    (["--spec-acceptance", "1.5", *SPEC], "between 0 and 1"),
    (["--spec-acceptance", "-0.1", *SPEC], "between 0 and 1"),
    (["--spec-acceptance", "nan", *SPEC], "between 0 and 1"),
    (["--spec-acceptance", "0.5"], "the plan has none"),
])
def test_a_bad_acceptance_rate_is_refused(env, bad, says) -> None:
    res = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--input-len", "1000", "--output-len", "200", *bad, "--json"])
    assert res.exit_code == 2, res.stdout
    err = json.loads(res.stdout)["errors"][0]
    assert says in err["message"] and err["hint"]
