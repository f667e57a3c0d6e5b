"""How benchmarks/perf_accuracy.py replays public runs: the model and workload each run is scored on.
Checked against what the publishers and model cards state, not against the replay's own arithmetic."""

from __future__ import annotations

import sys
from dataclasses import replace
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


# --------------------------------------------------------------------------- held-out runs (round 8)


@pytest.fixture(scope="module")
def held() -> dict[str, dict]:
    return {r["id"]: r for r in pa.load_rows(pa.HELD_OUT_FILES)}


# held-out files collected after a rule below was chosen: scored blind by benchmarks/perf_accuracy.py (README table,
# the file's .md), left out of the tests that check a rule on its own evidence. collected-bench-results-44 (ids
# "b44-"): one publisher's four MI100s running GPTQ checkpoints on a community 0.20 dev build, decoding 43.5 % slower
# than modelled at the median, a fixed per-step cost of that machine the model lacks
# ... collected-bench-results-59 ("b59-", round 52): Sequrity's gpt-oss-20b on one H100 through a client that times only
# the answer's chunks; blind, the fitted MXFP4 upcast rate replays it better than the dense rate on every metric, by less
# on TTFT (30.4 -> 29.3 %) than on the runs the rate was chosen on
LATER_FILES = {"collected-bench-results-44.jsonl": "b44-", "collected-bench-results-59.jsonl": "b59-"}


def chosen_on(cases: list) -> list:
    return [c for c in cases if not c.row["id"].startswith(tuple(LATER_FILES.values()))]


@pytest.fixture(scope="module")
def held_out_scored() -> tuple[list[tuple[pa.Case, dict, dict]], list[str]]:
    """Every held-out file scored with the shipped parameters, once for the tests that read it (read only)."""
    return pa.score_held_out(list(pa.HELD_OUT_FILES), load_profiles(include_user_config=False))


def median_errors(runs: list[pa.Case], eff=pa.FITTED_EFFICIENCY) -> dict[str, float]:
    """The runs' replay errors under `eff`, median by metric: abs ("tpot") and signed ("tpot_signed"); the upper
    middle of an even count."""
    errs = [pa.errors(pa.model_prediction(c, eff), c.measured) for c in runs]
    out: dict[str, float] = {}
    for metric in ("throughput", "tpot", "ttft"):
        signed = sorted(e[metric][1] for e in errs if metric in e)
        if signed:
            out[metric + "_signed"] = signed[len(signed) // 2]
            out[metric] = sorted(abs(x) for x in signed)[len(signed) // 2]
    return out


def median_errors_without(runs: list[pa.Case], monkeypatch, constant: str) -> tuple[dict[str, float], dict[str, float]]:
    """The runs' median errors with the shipped model, then with the rule that `constant` (a factor of
    estimate/perf.py) sizes switched off (set to 1)."""
    from vllmkit.estimate import perf

    shipped = median_errors(runs)
    monkeypatch.setattr(perf, constant, 1.0)
    return shipped, median_errors(runs)


def test_a_stated_kv_budget_is_the_cache_the_replay_runs_with(held) -> None:
    """dennislee's test 7 serves Qwen2.5-32B on one A100 80GB with "Available KV cache memory: 9.70
    GiB" (section title). Qwen2.5-32B caches 64 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes =
    262,144 B a token, so 9.70 GiB hold 9.70 x 2^30 / 262,144 = 39,731 tokens, whole 16-token blocks:
    39,728. Without the figure the replay would size the cache for utilisation 0.9 (~3x larger)."""
    profiles = load_profiles(include_user_config=False)
    case = pa.build_case(held["dennislee-a100-qwen25-32b-tp1-kv97-rand1024-1024-n100"], profiles)
    assert case is not None
    assert 39_728 - 16 <= case.perf.limits.kv_capacity_tokens <= 39_728 + 16


def test_the_serve_line_utilisation_reaches_the_replay(held) -> None:
    """Qwen2-7B at --gpu-memory-utilization 0.25 on an 80 GB A100 leaves ~5 GiB of KV (the log says
    5.01 GiB: ~93,800 tokens at 57,344 B a token); at 0.5 about 25 GiB (24.83: ~465,000)."""
    profiles = load_profiles(include_user_config=False)
    low = pa.build_case(held["dennislee-a100-qwen2-7b-tp1-util025-rand1024-1024-n100"], profiles)
    half = pa.build_case(held["dennislee-a100-qwen2-7b-tp1-util05-rand1024-1024-n100"], profiles)
    assert low is not None and half is not None
    # both rows also carry the stated figure; the figure wins, and it is the util the row says
    assert low.perf.limits.kv_capacity_tokens == pytest.approx(5.01 * 2**30 / 57_344, rel=0.01)
    assert half.perf.limits.kv_capacity_tokens == pytest.approx(24.83 * 2**30 / 57_344, rel=0.01)
    row = dict(held["dennislee-a100-qwen2-7b-tp1-util025-rand1024-1024-n100"])
    row.pop("available_kv_gib")
    est = pa.build_case(row, profiles)
    assert est is not None  # from the flag alone: 0.25 x 79.25 GiB - 14.2 GiB weights - ~1.5 GiB others
    assert 2.5 * 2**30 / 57_344 < est.perf.limits.kv_capacity_tokens < 5.5 * 2**30 / 57_344


def test_tp_across_pods_is_skipped_with_its_reason(held, held_out_scored) -> None:
    profiles = load_profiles(include_user_config=False)
    row = held["dennislee-a100-qwen2-7b-tp2-util025-rand1024-1024-n100"]
    assert pa.build_case(row, profiles) is None
    assert "pods" in pa.skip_reason(row, profiles)
    _, skipped = held_out_scored
    assert sum("pods" in s and s.startswith("dennislee") for s in skipped) == 35


def test_gpu_names_resolve_through_the_product() -> None:
    profiles = load_profiles(include_user_config=False)
    assert pa.gpu_profile_name({"gpu": "NVIDIA H100 80GB HBM3"}, profiles) == "h100-sxm"
    assert pa.gpu_profile_name({"gpu": "NVIDIA GeForce RTX 5070 Ti (WSL2)"}, profiles) == "rtx-5070-ti"
    assert pa.gpu_profile_name({"gpu": "a TPU v5e"}, profiles) is None


def test_held_out_runs_beat_the_naive_roofline_twice_over(held_out_scored) -> None:
    """The runs gathered after the fit (publishers the parameters never saw), scored with the shipped
    parameters: issue #11 asks for at least 2x lower median error than the naive roofline on the same
    runs (its 15 / 15 / 30 % goals are not met on these runs: README)."""
    scored, _ = held_out_scored
    summary = pa.summarize(scored)
    assert summary["throughput"]["n"] >= 40
    for fam in ("throughput", "tpot", "ttft"):
        assert summary[fam]["model_median"] * 2 <= summary[fam]["naive_median"]



def test_fp8_moe_runs_of_publishers_the_fit_never_saw_decode_at_the_fitted_expert_stream() -> None:
    """The FP8 fused-MoE expert stream (estimate/perf.py `fp8_moe_stream`) is fitted on the bundled runs
    only (GPUStack's DeepSeek-R1 / GLM-4.6 / Qwen3-235B FP8 and a vLLM PR's Qwen3-235B FP8 on B200). The
    held-out files hold 30 FP8-MoE runs of six other publishers (DeepSeek-R1 on H200 and MI300X, GLM-4.6 FP8
    on RTX PRO 6000, MiniMax-M2 on H20, Qwen3.6 / Nemotron-3 FP8 on a GB10 and an H200). (Their slow decode
    was seen while looking for the cause, so they are evidence for the value, not a blind test of it.)"""
    from dataclasses import replace

    from vllmkit.estimate.perf import expert_stream

    profiles = load_profiles(include_user_config=False)
    # the files this was written on; collected-bench-results-8's Qwen3.5-122B-A10B-FP8 runs on an MI300X
    # decode 24-39 % slower than modelled even without async scheduling's overlap, on kernels their
    # publisher reports as untuned for the model's shapes (README, round 23)
    # collected-bench-results-12 (round 26) came later and is a different case: its Nemotron-3-Nano FP8 runs on
    # two B200s (Vultr, a hybrid Mamba MoE) replay slightly better at the dense rate (median |TPOT error| 3 %
    # against 4 % shipped; the c=32 point breaks its own curve). The value is what these files' runs show, not
    # a rule for every GPU and model (README, round 26)
    # collected-bench-results-21 (round 33) neither: its DeepSeek-V3 FP8 runs are vLLM 0.6.6's initial support over
    # two 8x H100 nodes (no MLA, multi-step scheduling), 4 - 45x slower than planned at any expert stream
    files = [p for p in pa.HELD_OUT_FILES
             if p.name not in ("collected-bench-results-8.jsonl", "collected-bench-results-12.jsonl",
                               "collected-bench-results-21.jsonl")]
    scored, _ = pa.score_held_out(files, profiles)
    moe = [c for c, _, _ in scored if expert_stream(c.perf.model, pa.FITTED_EFFICIENCY) < 1.0]
    assert len(moe) >= 25 and len({c.source for c in moe}) >= 5

    def medians(eff) -> dict[str, float]:
        errs: dict[str, list[float]] = {}
        for c in moe:
            for fam, (_, err) in pa.errors(pa.model_prediction(c, eff), c.measured).items():
                errs.setdefault(fam, []).append(abs(err))
        return {fam: sorted(v)[len(v) // 2] for fam, v in errs.items()}

    shipped = medians(pa.FITTED_EFFICIENCY)
    dense_rate = medians(replace(pa.FITTED_EFFICIENCY, fp8_moe_stream=1.0))
    # round 39: ROCm's per-kernel cost (ROCM_KERNEL_COST_FACTOR) slows the MI300X / MI355X FP8-MoE runs at a few
    # clients by itself, which narrowed the gap (dense rate 29 -> 23 % TPOT); the fitted stream still wins by a fifth
    for fam in ("throughput", "tpot"):
        assert shipped[fam] < 0.2 and shipped[fam] < 0.8 * dense_rate[fam]

def test_weight_only_4bit_runs_replay_at_the_fitted_kernel_rate(held_out_scored) -> None:
    """The W4A16 (Marlin) compute rate (`Efficiency.w4a16_compute`), fitted on the bundled W4A16 runs: GPUStack's
    gpt-oss MXFP4 and Qwen3 AWQ on A100 and RTX 4090. At the Marlin-figure prior of 0.6 they replay 13 % slower
    than measured at the median, and 24 of 31 slower (26 of 31 before round 48's pool below; 20 % and 29 of 31
    before round 41 counted the LM head at a prompt's last position only: gpt-oss's 201k-token vocabulary is a
    sixth of its active parameters); at the fitted rate they fall on both sides. Since round 48 the gpt-oss-120b bursts hold as many requests at once as
    they decoded (the sliding-window pool a running scheduler has, plan/performance.py hybrid_kv_pool: 155 on the
    H100 against 157 measured), and their steps at that batch are 20 - 30 % too quick, so these runs come out
    fast (median 19 %); on the held-out W4A16 runs of other publishers (15 of them, never fitted on) the fitted
    rate is within the issue's 15 % (refitted on the bundled runs with the new pool, 0.76, it is worse there)."""
    from dataclasses import replace

    eff = pa.FITTED_EFFICIENCY
    profiles = load_profiles(include_user_config=False)
    runs = [c for c in (pa.build_case(r, profiles) for r in pa.load_rows()) if c is not None
            and c.perf.model.weight_kernel == "w4a16"]
    assert len(runs) >= 25

    def tokens_errors(eff) -> list[float]:
        return sorted(pa.errors(pa.model_prediction(c, eff), c.measured)["throughput"][1] for c in runs)

    shipped = tokens_errors(eff)
    assert 0.25 < sum(e < 0 for e in shipped) / len(shipped) < 0.75
    old = tokens_errors(replace(eff, w4a16_compute=pa.PRIORS["w4a16_compute"]))
    assert old[len(old) // 2] < -0.10 and sum(e < 0 for e in old) / len(old) > 0.7
    held_out = [abs(e["throughput"][1]) for c, e, _ in held_out_scored[0]
                if c.perf.model.weight_kernel == "w4a16" and "throughput" in e]
    assert len(held_out) >= 100 and sorted(held_out)[len(held_out) // 2] < 0.15

def test_held_out_weight_only_4bit_runs_keep_the_shipped_kernel_rate(held_out_scored) -> None:
    """Round 41's LM-head rule made the bundled W4A16 runs prefill faster, and `--fit-one w4a16_compute` on them
    then gives 0.747 instead of the shipped 0.839. The 4-bit runs of the held-out files (other publishers: AWQ,
    GPTQ and MXFP4 on RTX 30 / 40 / 50, A100, L4, L40S, Jetson) replay better at the shipped rate, so it stays."""
    from dataclasses import replace

    runs = chosen_on([c for c, _, _ in held_out_scored[0] if c.perf.model.weight_kernel == "w4a16"])
    assert len(runs) >= 80 and len({c.source for c in runs}) >= 5

    def tpot_median(eff) -> float:
        errs = sorted(abs(e["tpot"][1]) for e in (pa.errors(pa.model_prediction(c, eff), c.measured) for c in runs)
                      if "tpot" in e)
        return errs[len(errs) // 2]

    assert tpot_median(pa.FITTED_EFFICIENCY) < 0.9 * tpot_median(replace(pa.FITTED_EFFICIENCY, w4a16_compute=0.747))


def test_held_out_hopper_mxfp4_runs_prefill_at_the_fitted_upcast_rate(held_out_scored) -> None:
    """`mxfp4_upcast_compute` was fitted alone on GPUStack's bundled gpt-oss runs on H100 (0.705). The Hopper
    gpt-oss runs of the held-out files come from two other publishers (Anyscale's H100 TP 2 / 8 at 5,000-token
    prompts on 0.11, a single-H100 gpt-oss-120b sweep on 0.17.1); with the dense BF16 rate their prefill is
    modelled far too fast (median TTFT error about -30 %), at the fitted rate their TTFT and tokens/s replay
    better (37 runs: TTFT 41.0 -> 33.5 %, tokens/s 14.2 -> 13.4 % median abs error), while their TPOT, most of
    it Anyscale's long prompts interleaved with decodes that the model already makes too slow, moves 18.0 -> 20.4 %."""
    from dataclasses import replace

    every = [c for c, _, _ in held_out_scored[0] if pa.mxfp4_upcast(c.perf.model)]
    runs = chosen_on(every)
    assert len(runs) >= 30 and len({c.source for c in runs}) >= 2
    dense = replace(pa.FITTED_EFFICIENCY, mxfp4_upcast_compute=1.0)
    assert pa.FITTED_EFFICIENCY.mxfp4_upcast_compute < 0.8

    without, fitted = median_errors(runs, dense), median_errors(runs)
    assert without["ttft_signed"] < -0.2
    assert fitted["ttft"] < 0.85 * without["ttft"]
    assert fitted["throughput"] <= without["throughput"]
    assert fitted["tpot"] < without["tpot"] + 0.03
    # the runs collected after it (LATER_FILES), blind: no metric worse at the fitted rate
    later = [c for c in every if c not in runs]
    assert later
    without, fitted = median_errors(later, dense), median_errors(later)
    assert all(fitted[m] <= without[m] for m in ("ttft", "throughput", "tpot"))


def test_held_out_rocm_fp8_runs_prefill_slower_than_the_h200_fp8_rate(held_out_scored, monkeypatch) -> None:
    """ROCM_FP8_COMPUTE_FACTOR was chosen on these runs, leaving each publisher out in turn (0.6 - 0.7 in every
    fold): the held-out W8A8 FP8 runs on AMD GPUs under V1 (MI300X, MI355X, R9700; 11 publishers). Without it their
    TTFT is modelled far too fast at the median; with it the median TTFT error falls by a fifth or more, and the
    tokens/s does not get worse."""
    from vllmkit.estimate import perf

    # selected with the engine the replay passes to efficiency_for (model_prediction: the limits' v0_engine)
    runs = [c for c, _, _ in held_out_scored[0]
            if perf.rocm_fp8_gemms(c.perf.gpu, c.perf.model, v0=c.perf.limits.v0_engine)]
    assert len(runs) >= 60 and len({c.source for c in runs}) >= 8

    shipped, without = median_errors_without(runs, monkeypatch, "ROCM_FP8_COMPUTE_FACTOR")
    assert without["ttft_signed"] < -0.15
    assert shipped["ttft"] < 0.8 * without["ttft"]
    assert shipped["throughput"] <= without["throughput"]


def test_held_out_rocm_w4a16_runs_decode_slower_than_marlins_weight_stream(held_out_scored, monkeypatch) -> None:
    """ROCM_W4A16_STREAM (0.5) was chosen on these runs, leaving each of the two publishers out (README, round 47):
    the held-out GPTQ / AWQ runs on AMD GPUs (kyuz0's R9700, btbtyler09's 4x MI100). With the CUDA (Marlin) weight
    stream their decode is modelled far too fast at the median; with the rule the median TPOT and tokens/s errors
    fall by a fifth or more, and the TTFT does not get worse by more than two points."""
    from vllmkit.estimate import perf

    runs = [c for c, _, _ in held_out_scored[0] if perf.rocm_w4a16_weights(c.perf.gpu, c.perf.model)]
    assert len(runs) >= 40 and len({c.source for c in runs}) >= 2

    shipped, without = median_errors_without(runs, monkeypatch, "ROCM_W4A16_STREAM")
    assert without["tpot_signed"] < -0.3
    assert shipped["tpot"] < 0.8 * without["tpot"]
    assert shipped["throughput"] < 0.8 * without["throughput"]
    assert shipped["ttft"] < without["ttft"] + 0.02


def test_held_out_ampere_runs_decode_at_the_ampere_bandwidth_factor(held_out_scored, monkeypatch) -> None:
    """AMPERE_BANDWIDTH_FACTOR (0.9) was chosen on these runs, leaving each of the 21 held-out publishers with Ampere
    runs (A100 / A800 HBM2e, A10G / A40 / RTX 3090 GDDR) out in turn: without it their decode is modelled too fast
    at the median; with it the median abs TPOT and tokens/s errors fall by a fifth or more, and the TTFT moves by
    less than two points (README, round 43)."""
    from vllmkit.estimate import perf

    runs = [c for c, _, _ in held_out_scored[0] if c.perf.gpu.family == "ampere"]
    assert len(runs) >= 250 and len({c.source for c in runs}) >= 20

    shipped = median_errors(runs)
    monkeypatch.setitem(perf.FAMILY_PRIORS, "ampere", (1.0, *perf.FAMILY_PRIORS["ampere"][1:]))
    without = median_errors(runs)
    assert without["tpot_signed"] < -0.04
    assert shipped["tpot"] < 0.8 * without["tpot"]
    assert shipped["throughput"] < 0.8 * without["throughput"]
    assert shipped["ttft"] < without["ttft"] + 0.02


def test_enforce_eager_adds_the_launch_cost_per_layer(held) -> None:
    """vllm#20469 serves Qwen3-14B-AWQ (40 layers) with --enforce-eager, one request at a time: median
    TPOT 20.94 ms, against ~9.8 ms the replay gives with CUDA graphs. The dispatch cost per layer was
    taken from this run (estimate/perf.py EAGER_DISPATCH_PER_LAYER_S), so the replay lands on it."""
    profiles = load_profiles(include_user_config=False)
    case = pa.build_case(held["vllmissue20469-a100-80gb-qwen3-14b-awq-rand16000-200-c1"], profiles)
    assert case is not None and case.eager and case.perf.model.layers == 40
    graphs = pa.model_prediction(pa.replace(case, eager=False), pa.FITTED_EFFICIENCY)
    eager = pa.model_prediction(case, pa.FITTED_EFFICIENCY)
    assert graphs["tpot_ms_median"] < 10.0
    assert eager["tpot_ms_median"] == pytest.approx(20.94, rel=0.02)


def test_eager_dispatch_overlaps_long_layers(held) -> None:
    """cssnoeasy's Qwen3-32B on an A100 PCIe with --enforce-eager (held out): BF16 layers stream 1 GB of
    weights each (~0.6 ms), longer than their dispatch, so eager costs them far less than the 0.43 ms a
    layer an additive charge would; 512 / 256 at concurrency 4 measured 79.43 output tok/s."""
    profiles = load_profiles(include_user_config=False)
    case = pa.build_case(held["cssnoeasy-a100pcie-qwen3-32b-bf16-eager-rand512-256-c4"], profiles)
    assert case is not None and case.eager
    got = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["output_tok_s"]
    assert got == pytest.approx(79.43, rel=0.10)


def test_repeated_runs_on_one_server_replay_their_cached_prompts(held) -> None:
    """cssnoeasy's TP1 vs TP2 report runs each workload three times on one server with --seed 0 (the same
    random prompts) and vLLM 0.19's default prefix caching. Its request rates show it: run r2 of the
    512 in / 256 out workload at concurrency 8 served 2.63 req/s at a median TTFT of 69 ms. With the
    synchronous step loop a replay reached that rate only with the prompts already cached; since round 23
    (async scheduling's host work overlapping the GPU's, vLLM >= 0.14) both replays decode faster than this
    A100 PCIe did (9.3 ms a token cached against a measured p99 of 11.3), so the rate alone no longer
    separates them, and the test holds the cached replay to the measurement within 25 %. The
    three-run means are replayed as one uncached run and two cached ones, averaged."""
    profiles = load_profiles(include_user_config=False)
    r2 = pa.build_case(held["cssnoeasy-a100pcie-qwen25-7b-fp16-tp1-rand512-256-c8-r2"], profiles)
    assert r2 is not None and r2.workload.shared_prefix == int(r2.workload.input_len) == 512
    from dataclasses import replace

    cached = pa.model_prediction(r2, pa.FITTED_EFFICIENCY)["request_throughput_rps"]
    cold = pa.model_prediction(replace(r2, workload=replace(r2.workload, shared_prefix=0)),
                               pa.FITTED_EFFICIENCY)["request_throughput_rps"]
    assert abs(cached / 2.63 - 1) < 0.25 and cached > cold
    mean3 = pa.build_case(held["cssnoeasy-a100pcie-qwen25-7b-fp16-tp1-rand2048-128-c16-mean3"], profiles)
    assert mean3 is not None and mean3.runs_cached == (False, True, True)
    runs = [pa.model_prediction(replace(mean3, runs_cached=(), workload=replace(mean3.workload, shared_prefix=s)),
                                pa.FITTED_EFFICIENCY)["ttft_ms_median"] for s in (0, 2048, 2048)]
    assert pa.model_prediction(mean3, pa.FITTED_EFFICIENCY)["ttft_ms_median"] == pytest.approx(sum(runs) / 3)
    assert runs[1] < runs[0] / 5  # a cached 2048-token prompt skips its prefill


def test_the_ttft_floor_is_the_prompts_prefill_at_the_gpus_peak() -> None:
    """Hand-worked: Llama-3.1-8B (8.03e9 parameters; without its 128,256 x 4,096 embedding and LM head
    6.979e9 in linear layers; the model's active parameters count the LM head once: 7.505e9) on an A40 (149.7 dense BF16 TFLOP/s, x 1.1 margin = 164.67e12): one
    100-token prompt needs 2 x 6.979e9 x 100 / 164.67e12 = 8.477 ms. A burst of 50 whose first prompt
    the warm-up cached: the mean waits 49 x 50 / 2 prefills over 50 requests = 207.7 ms, the median
    (25th request) 24 prefills = 203.4 ms; a closed loop's prompts each need their own."""
    from types import SimpleNamespace

    from vllmkit.estimate.serving import Workload

    perf = SimpleNamespace(model=SimpleNamespace(active_params=7.505e9, tp=1, pp=1, compute_precision="bf16"),
                           gpu=SimpleNamespace(peak_flops=lambda precision: 149.7e12))
    arch = SimpleNamespace(vocab_size=128_256, hidden_size=4_096)
    burst = Workload(100, 443, concurrency=50, num_requests=50, dataset="fixed", warmup_first_prompt=True)
    floor = pa.ttft_floor_ms(burst, perf, arch)
    assert floor is not None
    assert floor["ttft_ms_mean"] == pytest.approx(207.7, abs=0.2)
    assert floor["ttft_ms_median"] == pytest.approx(203.4, abs=0.2)
    loop = Workload(100, 443, concurrency=8, num_requests=100, dataset="fixed", warmup_first_prompt=True)
    assert pa.ttft_floor_ms(loop, perf, arch)["ttft_ms_median"] == pytest.approx(8.477, abs=0.01)
    # prompts of many lengths, or shared, have no single floor
    assert pa.ttft_floor_ms(Workload(100, 443, concurrency=8, dataset="sharegpt"), perf, arch) is None
    assert pa.ttft_floor_ms(Workload(100, 443, concurrency=8, dataset="fixed", shared_prefix=100), perf, arch) is None


def test_a_ttft_below_the_floor_is_not_scored_but_the_rest_of_the_run_is(held) -> None:
    """dennislee's Qwen2-7B burst of 30 x 1,023-token prompts on one A100 (util 0.5) printed a mean TTFT of
    242 ms; the prompts' linear layers alone need 2 x 6.53e9 x 1,023 / (312e12 x 1.1) = 38.9 ms each, and
    the 29 not cached by the warm-up wait on average for 15 of them: 29 x 30 / 2 x 38.9 / 30 = 564 ms. An earlier run on the same
    server had left them in the prefix cache; the replay cannot know how many."""
    profiles = load_profiles(include_user_config=False)
    case = pa.build_case(held["dennislee-a100-qwen2-7b-tp1-util05-rand1024-1024-n30"], profiles)
    assert case is not None and "below" in case.ttft_unphysical
    errs = pa.errors(pa.model_prediction(case, pa.FITTED_EFFICIENCY), case.measured)
    assert "ttft" not in errs and "throughput" in errs and "tpot" in errs
    slower = pa.build_case(held["dennislee-a100-qwen2-7b-tp1-util05-rand1024-1024-n100"], profiles)
    assert slower is not None and slower.ttft_unphysical == ""


def test_leave_file_out_never_fits_on_the_file_it_scores(monkeypatch) -> None:
    """`--leave-file-out` scores each held-out file with a fit on the bundled runs and the other
    held-out files. The fit is replaced by a recorder (the real one takes minutes): the fold for a file
    must see no run of that file and every other file's runs, and that fold's parameters score it."""
    seen: dict[frozenset, list] = {}

    def recording_fit(cases, iters, per_source=12):
        files = frozenset(c.row.get("_file") for c in cases)
        seen[files] = cases
        # a distinct bandwidth per fold, so the scores show which fold's parameters were used
        return pa.replace(pa.FITTED_EFFICIENCY, bandwidth=0.3 + 0.1 * len(seen))

    monkeypatch.setattr(pa, "fit", recording_fit)
    profiles = load_profiles(include_user_config=False)
    paths = list(pa.HELD_OUT_FILES[:2])
    out = pa.leave_file_out(paths, profiles, iters=1, per_source=1, jobs=1)
    assert [name for name, _, _ in out] == [p.name for p in paths]
    bundled = {p.name for p in pa.DATA_FILES if p.exists()}
    assert set(seen) == {frozenset(bundled | {paths[1].name}), frozenset(bundled | {paths[0].name})}
    for name, eff, scored in out:
        assert scored and all(c.row["_file"] == name for c, _, _ in scored)
        other = next(p.name for p in paths if p.name != name)
        fold = next(k for k in seen if other in k)
        assert eff.bandwidth == pytest.approx(0.3 + 0.1 * (list(seen).index(fold) + 1))
        # the scores are that fold's: rescoring one run with its parameters gives the same errors
        c, e, _ = scored[0]
        assert e == pa.errors(pa.model_prediction(c, eff), c.measured)


def test_a_fit_keeps_the_prior_of_a_parameter_none_of_its_runs_exercises(cases) -> None:
    """`w4a16_compute` is fitted (in the fit's second stage) only when a training run has a 4-bit
    weight-only kernel: the leave-one-publisher-out fold without GPUStack (the only bundled publisher with
    such runs) must score GPUStack's W4A16 runs at the prior, not at a value fitted on them or one that
    wandered over a flat loss."""
    dense = [cases["mushfiq-rtx4090-mistral7b-256-128-c8"], cases["dstack-mi300x-405b-bf16-tp8-sonnet80-n8"]]
    assert all(c.perf.model.weight_kernel == "dense" for c in dense)
    assert pa.fit(dense, iters=8).w4a16_compute == pytest.approx(pa.PRIORS["w4a16_compute"], rel=1e-9)
    profiles = load_profiles(include_user_config=False)
    awq = [c for c in (pa.build_case(r, profiles) for r in pa.load_rows())
           if c is not None and c.row["id"] == "gpustack-quant-qwen3-8b-rtx4090-awq"]
    assert awq and awq[0].perf.model.weight_kernel == "w4a16"
    assert pa.fit(dense + awq, iters=8).w4a16_compute != pytest.approx(pa.PRIORS["w4a16_compute"], rel=1e-3)


def test_v0_prefill_first_keeps_closed_loop_waves_together() -> None:
    """France-Travail's closed loops on vLLM 0.4.3 (A100-40GB, Llama-3-8B, ~3,960-token prompts, 128
    tokens out, chunked prefill off by that release's default): measured mean TTFT 4.0 s at 22 clients and
    6.6 s at 38. The V0 scheduler runs waiting prompts before any decode (0.6.3.post1 core/scheduler.py
    `_schedule_default`: "Don't schedule decodes if prefills are scheduled"), so a wave of requests is
    prefilled in full, decodes in step and finishes together, and the next wave queues behind its own
    prefills. Replayed with V1's mixed steps, a new prompt joined the running decodes at once: TTFT came
    out 62-72 % short."""
    from dataclasses import replace

    profiles = load_profiles(include_user_config=False)
    ids = {"francetravail-a100-40g-llama3-8b-in4096-out128-c22", "francetravail-a100-40g-llama3-8b-in4096-out128-c38"}
    rows = [r for r in pa.load_rows(tuple(pa.HELD_OUT_FILES)) if r["id"] in ids]
    assert len(rows) == 2
    for row in rows:
        case = pa.build_case(row, profiles)
        assert case is not None and not case.perf.limits.mixed_batches and not case.perf.limits.chunked_prefill
        measured = row["measured"]["ttft_ms_mean"]
        v0 = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["ttft_ms_mean"]
        assert abs(v0 / measured - 1) < 0.2, (row["id"], v0, measured)
        mixed = replace(case, perf=replace(case.perf, limits=replace(case.perf.limits, chunked_prefill=True,
                                                                       mixed_batches=True)))
        assert pa.model_prediction(mixed, pa.FITTED_EFFICIENCY)["ttft_ms_mean"] < 0.5 * measured


def test_an_earlier_runs_prompts_are_cached_only_if_the_cache_holds_them_all() -> None:
    """tsho's sweep sends the same 1,000 random prompts (seed 0, 1,024 in / 256 out) at rising rates to
    one vLLM 0.19 server with prefix caching on. 1.28M tokens of prompts and outputs do not fit in that
    server's ~175K-token KV cache, and vLLM reuses the least recently freed blocks first
    (FreeKVCacheBlockQueue), so the rate-inf run finds every prompt evicted before it comes round. Its
    measured 737 output tok/s (mean TTFT 164 s: the queue of uncached prefills) is what an uncached replay
    gives; replayed as cached it came out 2.5x too fast. cssnoeasy's repeated runs (a few hundred short
    prompts in a 7B model's cache) stay cached (the test above)."""
    from dataclasses import replace

    profiles = load_profiles(include_user_config=False)
    rows = {r["id"]: r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-6.jsonl",))}
    row = rows["tsho-a100-80gb-x2-gemma-4-31b-it-tp2-short-1024-256-rate-inf"]
    assert row["prompts_cached_by_earlier_run"] and row["num_prompts"] == 1000
    case = pa.build_case(row, profiles)
    assert case is not None and case.workload.shared_prefix == 0
    measured = row["measured"]["output_tok_s"]
    cold = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["output_tok_s"]
    warm = pa.model_prediction(replace(case, workload=replace(case.workload, shared_prefix=1024)),
                               pa.FITTED_EFFICIENCY)["output_tok_s"]
    assert abs(cold / measured - 1) < 0.25 and warm / measured > 1.8


def _file7() -> dict[str, dict]:
    return {r["id"]: r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-7.jsonl",))}


def test_vllm_use_v1_0_replays_the_old_engine() -> None:
    """Livinfly's vLLM 0.9.1 server ran `VLLM_USE_V1=0 python -m vllm.entrypoints.openai.api_server ...`: the V0
    engine (prompts in steps of their own, the V0 per-sequence cost), which 0.9 still had behind that variable
    (engine/versions.py engine_is_v1). The replay had planned V1, the release's default."""
    profiles = load_profiles(include_user_config=False)
    row = _file7()["livinfly-a100pcie40-mistral7b-v0-sharegpt-inf-n1000"]
    assert row["server_cmd"].startswith("VLLM_USE_V1=0 ")
    v0 = pa.build_case(row, profiles)
    v1 = pa.build_case({**row, "server_cmd": row["server_cmd"].removeprefix("VLLM_USE_V1=0 ")}, profiles)
    assert v0 is not None and v1 is not None
    assert v0.perf.limits.mixed_batches is False and v1.perf.limits.mixed_batches is True


def test_flags_written_with_underscores_are_read() -> None:
    """vLLM's argparse accepts --gpu_memory_utilization for --gpu-memory-utilization (publishers write both):
    the replay reads the utilisation, and so the KV cache, from either spelling."""
    profiles = load_profiles(include_user_config=False)
    row = _file7()["lukallm-rtxpro6000ws-qwen3-32b-fp8-rand1024-1024-c512-n1000"]
    dashed = pa.build_case(row, profiles)
    underscored = pa.build_case({**row, "server_cmd": row["server_cmd"].replace("--gpu-memory-utilization",
                                                                                "--gpu_memory_utilization")}, profiles)
    default = pa.build_case({**row, "server_cmd": row["server_cmd"].replace("--gpu-memory-utilization 0.8", "")},
                            profiles)
    assert dashed is not None and underscored is not None and default is not None
    kv = [c.perf.limits.kv_capacity_tokens for c in (underscored, dashed, default)]
    assert kv[0] == kv[1] < kv[2]


def test_async_scheduling_hides_the_host_work_of_a_small_model() -> None:
    """pillaiharish's Qwen2.5-0.5B on one RTX 5070 Ti with vLLM 0.22 (async scheduling on by default from
    0.14) decodes at 2.0 ms a token at one client and 2.1 ms at 8 (collected-bench-results-8.jsonl, the
    printed `vllm bench serve` blocks): about 1.0 GB of weights at the card's 896 GB/s is ~1.1 ms, so most
    of the engine's per-step host work runs beside the GPU's. The synchronous loop (host work added to every
    step, the model before round 23) predicts about 4 ms -- twice the measurement; with the overlap it is
    within 25 %."""
    from dataclasses import replace

    profiles = load_profiles(include_user_config=False)
    rows = {r["id"]: r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-8.jsonl",))}
    for rid in ("pillaiharish-rtx5070ti-qwen25-05b-day06-rand128-64-c1-n64",
                "pillaiharish-rtx5070ti-qwen25-05b-day06-rand128-64-c8-n64"):
        row = rows[rid]
        case = pa.build_case(row, profiles)
        assert case is not None and case.perf.limits.async_scheduling
        measured = row["measured"]["tpot_ms_median"]
        overlapped = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["tpot_ms_median"]
        sync = pa.model_prediction(case, replace(pa.FITTED_EFFICIENCY, host_overlap=-1.0))["tpot_ms_median"]
        assert abs(overlapped / measured - 1) < 0.25, (rid, overlapped, measured)
        assert sync / measured > 1.7, (rid, sync, measured)


def test_a_sharegpt_runs_max_tokens_caps_its_completions() -> None:
    """AccelMark's runner passes its suite's output_tokens_max as every request's max_tokens (512 for the
    ShareGPT suites, collected-bench-results-9.jsonl): 100 prompts averaging ~345 output tokens finished in
    ~10 s offline. Uncapped, the replay's lognormal ShareGPT completions run to 2048 tokens less the prompt,
    and in an offline batch the longest completion sets the wall time: the replay came out 40-47 % slow;
    with the cap it is within 15 % on both GPUs' BF16 runs."""
    from dataclasses import replace

    from vllmkit.estimate.serving import request_lengths

    profiles = load_profiles(include_user_config=False)
    rows = {r["id"]: r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-9.jsonl",))}
    for rid in ("accelmark-a100sxm80-vllm0201-suiteA-llama3-8b-bf16-offline-n100",
                "accelmark-rtx5090-vllm0191dev-suiteC-llama31-8b-bf16-offline-n100"):
        row = rows[rid]
        assert row["max_tokens"] == 512
        case = pa.build_case(row, profiles)
        assert case is not None and case.workload.output_cap == 512
        _, outs = request_lengths(case.workload, 100)
        assert max(outs) <= 512 and abs(sum(outs) / 100 - case.workload.output_len) < 1
        measured = row["measured"]["output_tok_s"]
        capped = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["output_tok_s"]
        uncapped = pa.model_prediction(replace(case, workload=replace(case.workload, output_cap=None)),
                                       pa.FITTED_EFFICIENCY)["output_tok_s"]
        assert abs(capped / measured - 1) < 0.15 and uncapped / measured < 0.7, (rid, capped, uncapped, measured)


def test_an_eight_l40s_ring_decodes_at_the_speed_crusoe_measured() -> None:
    """Crusoe's cookbook (crusoecloud/crusoe-cookbook, vllm-l40s-fp8 results, vLLM 0.5.5): Llama-3.1-70B-Instruct
    BF16 at TP8 on 8x L40S (PCIe), sonnet 550/150 at 1 req/s: median TPOT 55.61 ms. A held-out run, never
    used to choose the NCCL-over-PCIe values; with the custom all-reduce's costs the replay said 39.6 ms."""
    rows = [r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-13.jsonl",))
            if r["id"] == "crusoe-cookbook-8xl40s-llama31-70b-bf16-tp8-vllm055-sonnet550-150-qps1"]
    case = pa.build_case(rows[0], load_profiles(include_user_config=False))
    assert case.perf.model.tp == 8 and case.perf.gpu.link_kind == "pcie"
    pred = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["tpot_ms_median"]
    assert pred == pytest.approx(55.61, rel=0.10)


def test_fp8_on_rocm_before_0_8_runs_at_the_unpenalised_rates() -> None:
    """AMD's dev-docker table for vLLM 0.6.6 on 8x MI300X (ROCm/vllm docs/dev-docker/README.md, held out in
    collected-bench-results-8): amd/Llama-3.1-70B-Instruct-FP8-KV, batch 1, 128 in / 2048 out: 19.09 s; the 405B
    FP8-KV checkpoint at batch 64: 81.09 s. The ROCm legacy factor was set by BF16 runs; with it these replayed
    38 % and 68 % slow. FP8 linear layers there are hipBLASLt FP8 GEMMs (estimate/perf.py rocm_legacy_applies)."""
    rows = {r["id"]: r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-8.jsonl",))}
    profiles = load_profiles(include_user_config=False)
    for rid, measured in (("rocm-vllm-devdocker-066-mi300x-x8-llama31-70b-fp8-latency-bs1-in128-out2048", 19.0886),
                          ("rocm-vllm-devdocker-066-mi300x-x8-llama31-405b-fp8-latency-bs64-in128-out2048", 81.0853)):
        case = pa.build_case(rows[rid], profiles)
        assert case.perf.gpu.vendor == "amd" and case.perf.model.compute_precision == "fp8"
        pred = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["e2e_latency_s_mean"]
        assert pred == pytest.approx(measured, rel=0.12), rid


def test_fp8_on_rocm_0_7_replays_as_the_rule_says_blind() -> None:
    """collected-bench-results-17, collected after the ROCm FP8 rule to test it: AMD's vLLM 0.7.3 dev-docker table
    (ROCm/vllm docs/dev-docker/README.md @4883d6b7), 8x MI300X, 128 in / 2048 out, batch 1: 17.654 s for
    amd/Llama-3.1-70B-Instruct-FP8-KV and 46.632 s for the 405B one. The legacy factor would have put them at
    roughly three times those."""
    rows = {r["id"]: r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-17.jsonl",))}
    profiles = load_profiles(include_user_config=False)
    for rid, measured in (("rocm-vllm-devdocker-073-mi300x-x8-llama31-70b-fp8-latency-bs1-in128-out2048", 17.654),
                          ("rocm-vllm-devdocker-073-mi300x-x8-llama31-405b-fp8-latency-bs1-in128-out2048", 46.632)):
        case = pa.build_case(rows[rid], profiles)
        pred = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["e2e_latency_s_mean"]
        assert pred == pytest.approx(measured, rel=0.12), rid


def test_gptq_checkpoints_replay_as_weight_only_kernels() -> None:
    """Neural Magic's llm-compressor example (vllm-project/llm-compressor examples/benchmarking/online_serving,
    held out in collected-bench-results-18): Llama-3-8B-Instruct on one A10G, ShareGPT at 1 QPS, mean TPOT 43 ms
    in fp16, 25 ms for a GPTQ 8-bit checkpoint, 15 ms for a GPTQ 4-bit one (gptq_marlin on sm 8.6). Replayed
    as 16-bit weights the two GPTQ runs came out +33 % and +122 %; as weight-only kernels reading one byte
    and ~half a byte a weight they follow the measured 1.7x / 2.9x speed-ups."""
    rows = {r["id"]: r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-18.jsonl",))}
    profiles = load_profiles(include_user_config=False)
    stem = "llmcompressor-a10g-llama3-8b-instruct-{}-tp1-vllm05x-sharegpt-rate1-n100"
    preds = {}
    for kind, kernel, measured in (("fp16", "dense", 42.52), ("gptq-int8", "w8a16", 25.0),
                                   ("gptq-int4", "w4a16", 15.0)):
        case = pa.build_case(rows[stem.format(kind)], profiles)
        assert case.perf.model.weight_kernel == kernel, kind
        preds[kind] = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["tpot_ms_mean"]
        assert preds[kind] == pytest.approx(measured, rel=0.25), kind
    assert preds["fp16"] / preds["gptq-int8"] > 1.4 and preds["fp16"] / preds["gptq-int4"] > 2.2


def test_a_steady_state_window_is_replayed_as_the_tester_measured_it() -> None:
    """TechBroMoho's load tester (collected-bench-results-26) ramps its closed-loop users up, warms up, then
    measures one window; the rows say so ("16 closed-loop users (ramp 8 s, warm-up 25 s, window 120 s)", ranges
    where runs differed). The replay starts the clients over the ramp and scores the requests sent in the
    window: (ramp, window start, window end) = (8, 8 + 25, 8 + 25 + 120)."""
    assert pa.steady_window({"concurrency_note": "16 closed-loop users (ramp 8 s, warm-up 25 s, window 120 s)"}) \
        == (8.0, 33.0, 153.0)
    assert pa.steady_window({"concurrency_note": "128 closed-loop users (ramp 15-23 s, warm-up 50 s, window 180 s "
                                                 "(225 s for some bf16 runs))"}) == (19.0, 69.0, 249.0)
    assert pa.steady_window({"concurrency_note": "closed loop of 8"}) is None
    profiles = load_profiles(include_user_config=False)
    row = next(r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-26.jsonl",))
               if r["id"] == "techbromoho-1xl40s-qwen3-8b-bf16-v0102-wikitext512-256-closedloop-c16")
    case = pa.build_case(row, profiles)
    assert case is not None
    assert (case.workload.concurrency, case.workload.ramp_s, case.workload.window_s) == (16, 8.0, (33.0, 153.0))
    # long enough to reach the window's end at the measured 2.183 requests/s: 16 + 1.5 x 2.183 x 153
    assert case.workload.num_requests >= 16 + 1.5 * 2.183 * 153


def test_mxfp4_moe_on_rocm_decodes_at_the_published_speed() -> None:
    """gpt-oss on GPUs without FP4 units under ROCm: the experts' stream rate (estimate/perf.py
    ROCM_MXFP4_EXPERT_STREAM) was chosen on one MI300X's runs (held-out files -2 and -13); the Radeon AI PRO R9700
    runs of another publisher (-27, RDNA 4) test it: their median TPOT error was 55 % with the dense stream rate."""
    profiles = load_profiles(include_user_config=False)
    errs = []
    for row in pa.load_rows((pa.DATA_DIR / "collected-bench-results-27.jsonl",)):
        if "gpt-oss" not in row["model"]:
            continue
        case = pa.build_case(row, profiles)
        assert case is not None
        e = pa.errors(pa.model_prediction(case, pa.FITTED_EFFICIENCY), case.measured)
        if "tpot" in e:
            errs.append(abs(e["tpot"][1]))
    assert len(errs) >= 5
    assert sorted(errs)[len(errs) // 2] < 0.25


def test_the_old_engine_run_by_choice_pays_its_per_sequence_output_work() -> None:
    """The V0 engine processes every running sequence's output in its step loop (`Efficiency.v0_seq_factor`),
    whichever release runs it: Wang Junjian's Qwen3-4B runs on a T4 under vLLM 0.8.4 with VLLM_USE_V1=0
    (collected-bench-results-34, 100-prompt bursts) decode at 90 - 106 ms a token; keyed to the release (< 0.8)
    the factor was left out and the modelled TPOT came out 24 - 47 % fast, keyed to the engine 15 - 37 %."""
    from dataclasses import replace

    from vllmkit.estimate.perf import efficiency_for

    profiles = load_profiles(include_user_config=False)
    path = BENCH / "data" / "collected-bench-results-34.jsonl"
    cases = [c for c in (pa.build_case(r, profiles) for r in pa.load_rows((path,))) if c is not None]
    assert len(cases) >= 10 and all(c.perf.limits.v0_engine for c in cases)

    def median_tpot_error(*, by_engine: bool) -> float:
        errs = []
        for c in cases:
            limits = c.perf.limits if by_engine else replace(c.perf.limits, v0_engine=False)
            case = replace(c, perf=replace(c.perf, limits=limits))
            errs.append(abs(pa.errors(pa.model_prediction(case, pa.FITTED_EFFICIENCY), c.measured)["tpot"][1]))
        return sorted(errs)[len(errs) // 2]

    assert median_tpot_error(by_engine=True) < median_tpot_error(by_engine=False) - 0.05
    # and the release's default engine is what an unspecified engine means
    c = cases[0]
    base = pa.FITTED_EFFICIENCY
    assert efficiency_for(base, c.perf.gpu, c.perf.model, (0, 7, 3)).per_seq_overhead_s == \
        efficiency_for(base, c.perf.gpu, c.perf.model, (0, 8, 4), v0_engine=True).per_seq_overhead_s > \
        efficiency_for(base, c.perf.gpu, c.perf.model, (0, 8, 4)).per_seq_overhead_s


def test_chunked_long_prompts_on_rocm_v0_pay_the_prefix_prefill_kernel(monkeypatch) -> None:
    """The old engine on ROCm runs every prompt chunk after the first through the Triton prefix-prefill kernel
    (estimate/perf.py ROCM_V0_PREFIX_ATTENTION). dstack's single requests of 10k - 128k tokens to Llama-3.1-405B on
    8x MI300X under 0.6.3 (its default 128k context chunks prompts) grow like a + b L^2 with b ~10x the attention
    FLOPs at the GEMM rate: at the GEMM rate the TTFT came out 33 - 78 % fast, longer prompts worse. The measured
    TTFTs are the publisher's; the model must land within 12 % of each, and without the rule (prefill attention at
    the GEMM rate) at least 30 % fast."""
    from vllmkit.estimate import perf

    profiles = load_profiles(include_user_config=False)
    ids = {f"dstack-mi300x-405b-bf16-tp8-sonnet{n}k-single" for n in (16, 32, 64, 128)}
    ids.add("dstack-mi300x-405b-bf16-tp8-sonnet10k-n1")
    cases = [pa.build_case(r, profiles) for r in pa.load_rows() if r["id"] in ids]
    assert len(cases) == 5 and all(c is not None and c.perf.limits.chunked_prefill for c in cases)
    for c in cases:
        ttft = pa.errors(pa.model_prediction(c, pa.FITTED_EFFICIENCY), c.measured)["ttft"][1]
        assert abs(ttft) < 0.12, (c.row["id"], ttft)
    monkeypatch.setattr(perf, "ROCM_V0_PREFIX_ATTENTION", 1.0)
    for c in cases:
        assert pa.errors(pa.model_prediction(c, pa.FITTED_EFFICIENCY), c.measured)["ttft"][1] < -0.3


def test_the_prefix_prefill_rate_is_rocm_v0_only() -> None:
    """The slow prefix-prefill attention is the ROCm V0 backend's: CUDA's V0 backend reads the paged cache in
    flash-attention, and V1 on either vendor runs other kernels."""
    from vllmkit.estimate.perf import ROCM_V0_PREFIX_ATTENTION, efficiency_for

    profiles = load_profiles(include_user_config=False)
    case = next(pa.build_case(r, profiles) for r in pa.load_rows()
                if r["id"] == "dstack-mi300x-405b-bf16-tp8-sonnet10k-n1")
    nvidia = next(pa.build_case(r, profiles) for r in pa.load_rows()
                  if r["id"] == "gpustack-deepseek-r1-h200-sharegpt-c4-L404")
    base = pa.FITTED_EFFICIENCY
    amd, model = case.perf.gpu, case.perf.model
    assert efficiency_for(base, amd, model, (0, 6, 3), chunked_prefill=True).prefill_attention == \
        ROCM_V0_PREFIX_ATTENTION < 1
    assert efficiency_for(base, amd, model, (0, 6, 3), chunked_prefill=False).prefill_attention == 1
    assert efficiency_for(base, amd, model, (0, 9, 2), chunked_prefill=True).prefill_attention == 1
    assert efficiency_for(base, amd, model, (0, 9, 2), v0_engine=True, chunked_prefill=True).prefill_attention == \
        ROCM_V0_PREFIX_ATTENTION
    assert efficiency_for(base, nvidia.perf.gpu, model, (0, 6, 3), chunked_prefill=True).prefill_attention == 1


def test_rocm_v1_decode_at_a_few_clients_pays_hip_kernel_costs(monkeypatch) -> None:
    """Every ROCm publisher of vLLM 0.8+ in the held-out files decodes slower at one to sixteen clients than CUDA's
    per-kernel costs allow (estimate/perf.py ROCM_KERNEL_COST_FACTOR, chosen leaving each publisher out in turn).
    The measured TPOTs are the publishers'; with the factor their median error must be under 20 %, without it over
    30 % and fast (the model had them 40 % fast), and NVIDIA runs must not move."""
    from vllmkit.estimate import perf

    profiles = load_profiles(include_user_config=False)
    amd, nvidia = [], []
    for row in pa.load_rows([p for p in pa.HELD_OUT_FILES if p.name not in LATER_FILES]):
        clients = row.get("concurrency") or 0
        if not 1 <= clients <= 16:
            continue
        case = pa.build_case(row, profiles)
        if case is None or case.perf.limits.v0_engine:
            continue
        (amd if case.perf.gpu.vendor == "amd" else nvidia).append(case)
    assert len(amd) >= 15 and len(nvidia) >= 50

    def tpot_errors(cases: list) -> list[float]:
        errs = [pa.errors(pa.model_prediction(c, pa.FITTED_EFFICIENCY), c.measured).get("tpot") for c in cases]
        return sorted(e[1] for e in errs if e)

    def median(xs: list[float]) -> float:
        return xs[len(xs) // 2]

    with_factor, nv_with = tpot_errors(amd), tpot_errors(nvidia)
    assert median([abs(e) for e in with_factor]) < 0.2
    monkeypatch.setattr(perf, "ROCM_KERNEL_COST_FACTOR", 1.0)
    without = tpot_errors(amd)
    assert median([abs(e) for e in without]) > 0.3 and median(without) < -0.3
    assert tpot_errors(nvidia) == nv_with


def test_multi_step_scheduling_pays_the_host_work_once_per_round(monkeypatch) -> None:
    """dstack's Llama-3.1-405B FP8-KV runs on 4 and 8 MI300X (vLLM 0.6.4, bundled) served with
    `--num-scheduler-steps 15`, which the CSV's settings columns record (the rows' notes): the old engine schedules
    and processes outputs once per 15 forward passes (estimate/perf.py with_multi_step). Their measured TPOTs (the
    publisher's) replay within 25 % at the median; paying the host work every step, 40 % or more too slow."""
    profiles = load_profiles(include_user_config=False)
    ids = {f"dstack-mi300xx{n}-405b-fp8kv-amd-sharegpt-qps{q}" for n in (4, 8) for q in (16, 32, 1000)}
    cases = [pa.build_case(r, profiles) for r in pa.load_rows() if r["id"] in ids]
    assert len(cases) == 6 and all(c is not None and pa.scheduler_steps(c.row) == 15 for c in cases)

    def median_tpot() -> float:
        errs = sorted(abs(pa.errors(pa.model_prediction(c, pa.FITTED_EFFICIENCY), c.measured)["tpot"][1])
                      for c in cases)
        return (errs[2] + errs[3]) / 2

    assert median_tpot() < 0.25
    monkeypatch.setattr(pa, "scheduler_steps", lambda row: 1)
    assert median_tpot() > 0.4


def test_a_sliding_window_model_decodes_as_many_requests_as_the_public_run(held) -> None:
    """djangodevreng's GB10 serving Gemma-4-31B (vLLM 0.26, FP8 KV, --max-num-batched-tokens 8192 with async
    scheduling, Poisson traffic at 0.3 req/s of ~4,000-token prompts, 200 requests) decoded at 57.05 output
    tokens/s with a mean TPOT of 1,212.77 ms: 57.05 x 1.21277 = 69.2 requests decoding at a time on average (the
    row's own figures, Little's law). The replay decodes as many: its pool (plan/performance.py hybrid_kv_pool)
    charges a running request its window in each sliding-window group, as vLLM's scheduler frees the rest
    (checked on the real vLLM, tests/e2e/test_kv_pool_e2e.py). vLLM's start-up charge, the window plus 16,384
    tokens in flight in every sliding group, had the replay decode 24 at a time, TPOT -52 % and TTFT +161 %.
    (Not every public run agrees: tsho's A100 pair on vLLM 0.19.1, same model, decoded 48 of its 9,000-token
    requests at a time where this pool holds 107, and 83 of its 1,280-token ones, fewer than any rule gives.)"""
    from vllmkit.estimate.perf import efficiency_for
    from vllmkit.estimate.serving import predict

    profiles = load_profiles(include_user_config=False)
    case = pa.build_case(held["djangodevreng-gb10-gemma-4-31b-it-bf16-07-office-baseline"], profiles)
    assert case is not None and case.perf.kv_pool is not None
    m = case.measured
    decoding = m["output_tok_s"] * m["tpot_ms_mean"] / 1000.0
    assert decoding == pytest.approx(69.2, abs=0.1)
    p = case.perf
    final = efficiency_for(pa.FITTED_EFFICIENCY, p.gpu, p.model, pa.rules_version(case), v0_engine=p.limits.v0_engine,
                           chunked_prefill=p.limits.chunked_prefill)
    pred = predict(p.model, p.gpu, final, p.limits_for(case.workload), case.workload, steady=False,
                   efficiency_is_final=True)
    assert pred.bound == "kv-capacity"
    assert pred.batch == pytest.approx(decoding, rel=0.1)


def test_geforce_blackwell_tensor_parallel_runs_replay_better_without_peer_to_peer(held_out_scored) -> None:
    """The held-out RTX 50 runs at TP 2 / 4 (hholtmann's 5060 Ti / 5070 Ti / 5090 pairs, CloudRift's four 5090s,
    pegainfer's 5090 pair; three publishers) decoded slower than modelled with vLLM's custom all-reduce over
    PCIe: TPOT -16 .. -48 % at the median of each card. GeForce cards have no peer-to-peer access, so NCCL bounces
    the all-reduces through host memory (plan/performance.py gpu_perf); with that, their tokens/s and TPOT
    replay better. Their TTFT does not (a 256-token chat burst on two 5060 Ti prefills in 0.55 s, modelled 1.0 s
    now): the host-bounced bus rate for large prefill messages is the one fitted on 4090s, not measured here."""
    from dataclasses import replace

    runs = [c for c, _, _ in held_out_scored[0]
            if c.perf.gpu.family == "blackwell-geforce" and c.perf.model.tp > 1]
    assert len(runs) >= 25 and len({c.source for c in runs}) >= 3
    assert {c.perf.gpu.link_kind for c in runs} == {"pcie-host"}
    with_p2p = [replace(c, perf=replace(c.perf, gpu=replace(c.perf.gpu, link_kind="pcie"))) for c in runs]
    now, before = median_errors(runs), median_errors(with_p2p)
    # round 49 (attention at the 16-bit rate, which moved hholtmann's NVFP4 runs): the median TPOT bias goes from
    # -19 % with the custom all-reduce to -7 % host-bounced, tokens/s from +22 % to -3 % (abs 22.6 -> 18.8 %);
    # the abs TPOT median is level (19.5 / 20.2 %): the runs' spread now straddles zero
    assert abs(now["tpot_signed"]) < abs(before["tpot_signed"]) - 0.10
    assert abs(now["throughput_signed"]) < abs(before["throughput_signed"]) - 0.10
    assert now["throughput"] < before["throughput"] - 0.03


def test_pipeline_parallel_under_async_scheduling_runs_one_batch_through_the_stages() -> None:
    """Scicom's 2x L40S runs on vLLM 0.19.0 (collected-bench-results-50.jsonl, the printed `vllm bench serve`
    blocks): the same two models at PP 2 and at TP 2, 10 - 200 clients. At PP 2 the servers produced 0.58 -
    0.73 of the TP 2 runs' output tokens/s at every load, where pp micro-batches in flight would have put PP
    near TP once the batch is large. 0.19 runs async scheduling by default (from 0.14; with PP from 0.15) on
    Model Runner V1, whose scheduler schedules a request again while its last step is in flight (0.19.1
    v1/core/sched/scheduler.py: `num_output_placeholders` counts the token being made), so every batch holds
    every running request and waits for the previous one's sampled tokens: the stages work one after another.
    Replayed that way, the PP / TP tokens/s ratio of each pair at 50+ clients comes out within 20 % of the
    measured one (median 12 %); with micro-batches (the rule for synchronous scheduling) every pair's ratio
    is above the measured one, by 7 - 64 % (median 24 %). The file was scored blind before this rule (PP 2
    runs +20 ... +89 % tokens/s) and chose it, so these runs are in-sample for it."""
    import statistics
    from dataclasses import replace

    profiles = load_profiles(include_user_config=False)
    rows = {r["id"]: r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-50.jsonl",))}
    serial_err: list[float] = []
    micro_err: list[float] = []
    for pp_id, pp_row in rows.items():
        if "-pp2-" not in pp_id or pp_row["concurrency"] < 50:
            continue
        tp_row = rows.get(pp_id.replace("-pp2-", "-tp2-"))
        if tp_row is None:
            continue
        pp_case, tp_case = pa.build_case(pp_row, profiles), pa.build_case(tp_row, profiles)
        assert pp_case.perf.limits.async_scheduling and pp_case.perf.model.pp_serial
        assert not tp_case.perf.model.pp_serial
        measured = pp_row["measured"]["output_tok_s"] / tp_row["measured"]["output_tok_s"]
        tp_pred = pa.model_prediction(tp_case, pa.FITTED_EFFICIENCY)["output_tok_s"]
        serial = pa.model_prediction(pp_case, pa.FITTED_EFFICIENCY)["output_tok_s"] / tp_pred
        pp_case.perf.model = replace(pp_case.perf.model, pp_serial=False)
        micro = pa.model_prediction(pp_case, pa.FITTED_EFFICIENCY)["output_tok_s"] / tp_pred
        assert serial == pytest.approx(measured, rel=0.20), (pp_id, serial, measured)
        assert micro / measured > 1.05, (pp_id, micro, measured)
        serial_err.append(abs(serial / measured - 1))
        micro_err.append(abs(micro / measured - 1))
    assert len(serial_err) >= 8
    assert statistics.median(micro_err) > 1.5 * statistics.median(serial_err)


def test_data_parallel_fleets_replay_as_engines_sharing_the_clients() -> None:
    """Scicom's 8-GPU servers run `vllm serve --tensor-parallel-size 4 --data-parallel-size 2` (vLLM 0.15; held out
    in collected-bench-results-14 / -38, skipped as "data parallel" before round 50): Qwen3-32B BF16 on H100 and
    H200 at 100 clients, 1,024 + 128 tokens, 3,342 and 4,166 output tokens/s; Llama-3.1-70B on H100 at 200 clients,
    128 + 128, 6,968. Two engines of half the clients each replay them within 15 %; one engine of all the clients
    (what the plan predicted for --data-parallel-size before) makes 35 - 45 % too few tokens/s."""
    wanted = {"scicom-benchmaq-runpod-8xh100sxm-qwen3-32b-bf16-tp4dp2-vllm015-random1024-128-c100": 3341.86,
              "scicom-benchmaq-runpod-8xh200sxm-qwen3-32b-bf16-tp4dp2-vllm015-random1024-128-c100": 4166.23,
              "b38-scicom-8xh100-llama31-70b-instruct-bf16-tp4dp2-v015-rand128-128-c200-n1000": 6968.45}
    files = (pa.DATA_DIR / "collected-bench-results-14.jsonl", pa.DATA_DIR / "collected-bench-results-38.jsonl")
    profiles = load_profiles(include_user_config=False)
    rows = [r for r in pa.load_rows(files) if r["id"] in wanted]
    assert len(rows) == 3
    for row in rows:
        case = pa.build_case(row, profiles)
        assert case is not None and case.perf.replicas == 2 and case.perf.model.tp == 4
        assert case.perf.api_servers == 2 and case.perf.model.moe_dp == 1  # 0.15 starts an API server per engine
        measured = wanted[row["id"]]
        assert case.measured["output_tok_s"] == pytest.approx(measured, abs=0.01)
        assert pa.model_prediction(case, pa.FITTED_EFFICIENCY)["output_tok_s"] == pytest.approx(measured, rel=0.15)
        one = replace(case, perf=replace(case.perf, replicas=1, api_servers=1))
        assert pa.model_prediction(one, pa.FITTED_EFFICIENCY)["output_tok_s"] < 0.7 * measured


def test_separate_servers_behind_a_load_balancer_are_independent_engines() -> None:
    """CloudRift's harness starts one vLLM container per replica behind nginx (its rows' server command has no
    --data-parallel-size): eight single-GPU GLM-4.5-Air AWQ servers on an H200 node are eight whole copies whose
    MoE layers never meet, each with its own API server."""
    rows = [r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-29.jsonl",))
            if r["id"] == "cloudrift-h200x8-glm45-air-awq4-dp8-tp1-len8192-random1000-1000-c400-n1200"]
    case = pa.build_case(rows[0], load_profiles(include_user_config=False))
    assert case.perf.replicas == 8 and case.perf.api_servers == 8 and case.perf.model.moe_dp == 1
    single = pa.build_case({**rows[0], "dp": 1}, load_profiles(include_user_config=False))
    assert case.perf.model.expert_bytes == single.perf.model.expert_bytes  # a whole copy of the experts each


def test_speculative_decoding_replays_at_the_printed_acceptance_rate() -> None:
    """vLLM's GLM-5 recipe (vllm-project/recipes GLM/GLM5.md, held out in collected-bench-results-2): GLM-5.1-FP8 at TP 8
    on eight H200s with MTP, 3 draft tokens a step, random 8,000 + 1,024 tokens at 10 req/s: median TPOT 34.58 ms,
    and vLLM printed a 21.33 % draft acceptance rate (acceptance length 1.64). Replayed at that rate -- each step
    verifying 4 tokens a request and running the MTP layer 3 times -- the TPOT is within 5 %; without the drafting
    it was 16 % slow. Runs that printed no acceptance rate are skipped with that reason."""
    rows = [r for r in pa.load_rows((pa.DATA_DIR / "collected-bench-results-2.jsonl",))
            if r["id"] == "vllmrecipes-8xh200-glm51-fp8-tp8-mtp3-rand8000-1024-rate10"]
    case = pa.build_case(rows[0], load_profiles(include_user_config=False))
    assert case is not None and case.workload.spec_acceptance == pytest.approx(0.2133)
    assert case.perf.model.spec_tokens == 3 and case.perf.model.draft_bytes > 0  # the MTP layer, on each rank
    pred = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["tpot_ms_median"]
    assert pred == pytest.approx(34.58, rel=0.05)
    plain = replace(case, workload=replace(case.workload, spec_acceptance=None))
    assert pa.model_prediction(plain, pa.FITTED_EFFICIENCY)["tpot_ms_median"] > 1.1 * 34.58
    eagle = {"id": "x", "speculative": {"method": "eagle3", "num_speculative_tokens": 3}}
    assert pa.speculative_of(eagle) == ({"method": "eagle3", "num_speculative_tokens": 3}, None)
    assert pa.skip_reason({**rows[0], "speculative": eagle["speculative"]}, load_profiles(include_user_config=False)) \
        == "speculative decoding without a published acceptance rate"


def test_a_request_rate_its_gpus_cannot_prefill_is_not_scored(held, held_out_scored) -> None:
    """Sequrity's 2 x H100 Llama-3.1-70B FP8 runs state prefix caching off and send one 1,282-token prompt again and
    again. At 120 clients they completed 31.33 requests/s: 31.33 x 1,282 tokens x 2 FLOPs x 68.45 B linear
    parameters (70.55 B less the input embedding and the LM head, 128,256 x 8,192 = 1.05 B each; the head runs on
    a prompt's last token only) = 5,499 TFLOP/s of prefill, where two H100s have 2 x 1,979 TFLOP/s of dense FP8 peak
    (4,354 at the 110 % margin): those prompts were not computed as stated. At 40 clients, 15.05 requests/s need
    2,641 TFLOP/s, which the GPUs have: scored."""
    profiles = load_profiles(include_user_config=False)
    c120 = pa.build_case(held["b52-sequrity-2xh100sxm-llama31-70b-fp8-tp2-v0170-nopc-short1282-128-c120"], profiles)
    c40 = pa.build_case(held["b52-sequrity-2xh100sxm-llama31-70b-fp8-tp2-v0170-nopc-short1282-128-c40"], profiles)
    assert c120 is not None and c40 is not None
    assert "need 5,499 TFLOP/s" in c120.unphysical and "(4,354)" in c120.unphysical
    assert c40.unphysical == ""
    _, skipped = held_out_scored
    assert any(s.startswith("b52-sequrity-2xh100sxm-llama31-70b-fp8-tp2-v0170-nopc-short1282-128-c120 (") and
               "uncached prompt tokens need" in s for s in skipped)
    # with prefix caching on, an identical prompt is a cache hit after the first: nothing to check
    c8b = pa.build_case(held["b52-sequrity-1xh100sxm-llama31-8b-fp8-tp1-v0170-pc-short1282-128-c120"], profiles)
    assert c8b is not None and c8b.workload.shared_prefix == 1282 and c8b.unphysical == ""


def test_identical_prompts_are_read_only_where_the_row_says_every_request_sends_one() -> None:
    """The replay reads "identical" in a row's dataset text as one prompt for every request (prefix-cache hits after
    the first). Sequrity's random-1k rows say the opposite ("distinct prompts per request (not one identical
    prompt)") and TheBuccaneer's speak of identical outputs; both were replayed as cached prompts, their TTFT at
    one client planned at a quarter of the measured (round 52, collected-bench-results-57 and -30)."""
    assert pa.identical_prompts("identical prompt for every request (profiles.py: one file prompt)")
    assert pa.identical_prompts('synthetic: prompt "hello " x 1000 (identical for every request)')
    assert not pa.identical_prompts("random token ids ...: distinct prompts per request (not one identical prompt)")
    assert not pa.identical_prompts("all 30 runs on one server send the same 20 prompts, confirmed by identical "
                                    "output starts under temperature 0")


def test_an_early_stopping_runs_max_tokens_spreads_its_completions(held) -> None:
    """Sequrity's random-1k profile asks for 1,024 tokens without ignore_eos, and completions stop at EOS after
    ~120 (Qwen2.5-72B) to ~300 (Llama) tokens on average: the row's output_len is that mean, its max_tokens the
    cap. With the mean as the cap every completion had one length, the 20 closed-loop clients of a 72B TP 4 run
    stayed in lockstep waves and the replay's mean TTFT was 1.3 s where the publisher measured 93 ms."""
    profiles = load_profiles(include_user_config=False)
    rid = "b57-sequrity-4xh100sxm-qwen25-72b-bf16-tp4-v0190-gmu090-pc-0407-random1k1266-124-c20-n200"
    case = pa.build_case(held[rid], profiles)
    assert case is not None and case.workload.output_cap == 1024 and case.workload.output_len == pytest.approx(124.2)
    lockstep = pa.build_case({**held[rid], "max_tokens": None}, profiles)
    assert lockstep.workload.output_cap == 124
    spread = pa.model_prediction(case, pa.FITTED_EFFICIENCY)["ttft_ms_mean"]
    waves = pa.model_prediction(lockstep, pa.FITTED_EFFICIENCY)["ttft_ms_mean"]
    assert spread < waves / 2


def test_buccaneers_first_runs_are_cold_and_the_later_ones_cached(held) -> None:
    """TheBuccaneer's write-up (collected-bench-results-30.md, "Run1 vs later runs"): one server per setting, the
    same 20 prompts in every run, concurrency 1 first: its run1 at one client is the only cold one, 3.66x the TTFT of
    the warm runs; the rows say which (prompts_cached_by_earlier_run)."""
    profiles = load_profiles(include_user_config=False)
    base = "thebuccaneer-rtx3090x1-llama31-8b-instruct-bf16-tp1-len8192-v0171-cpuoffload0-random256-64-c{}-n20-run1"
    cold, warm = pa.build_case(held[base.format(1)], profiles), pa.build_case(held[base.format(2)], profiles)
    assert cold.workload.shared_prefix == 0
    assert warm.workload.shared_prefix == int(warm.workload.input_len)
    ttft = pa.model_prediction(cold, pa.FITTED_EFFICIENCY)["ttft_ms_mean"]
    assert ttft == pytest.approx(cold.measured["ttft_ms_mean"], rel=0.25)
