"""Serving performance of one replica for a workload: the step-cost model (estimate/perf.py) driven by
the scheduler simulation (estimate/scheduler_sim.py). Pure: no I/O.

A workload is input/output lengths plus either a closed-loop concurrency, a Poisson request rate, or
a burst (every request at t=0, what `vllm bench serve --request-rate inf` does). Lengths are exact
(`random` dataset with --ignore-eos) or spread like ShareGPT around the given means.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, replace
from statistics import NormalDist

from vllmkit.estimate.perf import (
    ASYNC_HOST_SHARE,
    Efficiency,
    GpuPerf,
    ModelPerf,
    draft_seconds,
    efficiency_for,
    make_step_fn,
)
from vllmkit.estimate.scheduler_sim import SchedulerLimits, SimResult, percentile, simulate
from vllmkit.estimate.workloads import WORKLOAD_PRESETS  # re-exported

# ShareGPT as vLLM's benchmark samples it (benchmarks/benchmark_dataset.py ShareGPTDataset): prompts of
# 4..1024 tokens, prompt + completion <= 2048; means over public runs ~230 in / ~215 out (GPUStack and
# Lambda runs print 23260 / 22061 tokens for 100 prompts, 73671 / 70054 for 320).
SHAREGPT_MEAN_INPUT = 230
SHAREGPT_MEAN_OUTPUT = 215
# Spread (lognormal sigma) of prompt and completion lengths. The completions' tail sets how long a
# finite run lasts: public 200-prompt runs at high rates end 600-700 tokens after the last arrival
# (IOG-Foundation llm-inference-benchmarks, vLLM 0.8.5, H100 PCIe), i.e. max / mean ~ 3.2 -> sigma 0.55.
_SHAREGPT_SIGMA_IN = 1.0
_SHAREGPT_SIGMA_OUT = 0.55


@dataclass(frozen=True)
class Workload:
    input_len: float
    output_len: float
    concurrency: int | None = None  # closed loop of this many clients
    request_rate: float | None = None  # Poisson arrivals per second; None / inf with no concurrency = burst
    num_requests: int | None = None  # None: enough for a steady state
    dataset: str = "fixed"  # fixed | sharegpt
    name: str | None = None
    # the completions' cap (`max_tokens`) when some stop earlier at the end-of-sequence token (a random
    # dataset without --ignore-eos): output_len is then their mean and the lengths spread below the cap
    output_cap: int | None = None
    # `vllm bench serve` (and benchmark_serving.py before it) sends the first prompt once before timing
    # ("Starting initial single prompt test run", vllm/benchmarks/serve.py): with prefix caching on, the
    # timed run's first request finds that prompt cached
    warmup_first_prompt: bool = False
    # leading prompt tokens every request shares (a system prompt; `vllm bench serve --random-prefix-len`;
    # identical prompts): with prefix caching on, computed once (scheduler_sim.simulate shared_prefix)
    shared_prefix: int = 0
    # a load tester that ramps its closed-loop clients up over this many seconds (scheduler_sim.simulate ramp_s)
    ramp_s: float = 0.0
    # a measurement window (seconds from the start): latencies of the requests sent inside it and throughput
    # over it, as a tester that reports one steady-state window after a warm-up does (None: the whole run)
    window_s: tuple[float, float] | None = None
    # speculative decoding: the share of draft tokens the target accepts (vLLM's "Avg Draft acceptance rate"), a
    # property of the text (random prompts accept few); None: not known, speculative decoding not modelled
    spec_acceptance: float | None = None

    @property
    def is_burst(self) -> bool:
        return not self.concurrency and (self.request_rate is None or math.isinf(self.request_rate))


def _spread(n: int, mean: float, sigma: float, lo: int, hi_fn, rng: random.Random) -> list[int]:
    """n deterministic lognormal quantiles with the given mean after clipping to [lo, hi]."""
    nd = NormalDist()
    zs = [nd.inv_cdf((k + 0.5) / n) for k in range(n)]
    rng.shuffle(zs)
    scale = mean / math.exp(sigma * sigma / 2)
    values: list[int] = []
    for _ in range(6):  # rescale so the clipped mean matches
        values = [max(lo, min(round(scale * math.exp(sigma * z)), hi_fn(k))) for k, z in enumerate(zs)]
        got = sum(values) / n
        if abs(got - mean) < 0.5:
            break
        scale *= mean / max(got, 1e-9)
    return values


def request_lengths(workload: Workload, n: int, seed: int = 0) -> tuple[list[int], list[int]]:
    if workload.dataset != "sharegpt":
        ins = [max(1, round(workload.input_len))] * n
        cap = workload.output_cap
        if cap and workload.output_len < 0.97 * cap:
            # some completions end early at EOS, the rest run to the cap: the same lognormal spread as
            # ShareGPT's completions, clipped at the cap, with the run's mean
            outs = _spread(n, workload.output_len, _SHAREGPT_SIGMA_OUT, 1, lambda k: cap, random.Random(seed))
            return ins, outs
        return ins, [max(1, round(workload.output_len))] * n
    rng = random.Random(seed)
    ins = _spread(n, workload.input_len, _SHAREGPT_SIGMA_IN, 4, lambda k: 1024, rng)
    # vLLM's ShareGPT sampler keeps pairs of at most 2048 tokens; a client's max_tokens caps the rest
    cap = workload.output_cap or 1 << 30
    outs = _spread(n, workload.output_len, _SHAREGPT_SIGMA_OUT, 4, lambda k: max(4, min(2048 - ins[k], cap)), rng)
    return ins, outs


@dataclass(frozen=True)
class Stat:
    mean: float
    p50: float
    p99: float

    @classmethod
    def of(cls, values: list[float], scale: float = 1.0) -> Stat:
        if not values:
            return cls(float("nan"), float("nan"), float("nan"))
        return cls(sum(values) / len(values) * scale, percentile(values, 50) * scale, percentile(values, 99) * scale)


@dataclass
class ServingPrediction:
    output_tokens_per_s: float
    total_tokens_per_s: float
    requests_per_s: float
    ttft_ms: Stat
    tpot_ms: Stat
    itl_ms: float
    e2e_s: Stat
    batch: float  # mean running sequences
    max_batch: int
    kv_usage: float  # mean fraction of the KV cache in use
    peak_kv_usage: float
    bound: str  # bandwidth | compute | kv-capacity | max-num-seqs
    preemptions: int
    preemption_risk: str  # low | medium | high
    duration_s: float
    num_requests: int
    efficiency: Efficiency
    sim: SimResult = field(repr=False)
    # sustained traffic (plan.performance CandidatePerf.predict_sustained): the latencies are those of the
    # requests sent in this window of the run, in seconds from its start (None: of every request)
    window_s: tuple[float, float] | None = None


ARRIVAL_SPAN_S = 20.0  # a Poisson run's default length: this many seconds of arrivals


def requests_for_rate(rate: float, floor: int = 100, cap: int = 2000) -> int:
    """Requests in a default Poisson run at `rate`: ARRIVAL_SPAN_S of arrivals, within [floor, cap]."""
    return int(min(max(rate * ARRIVAL_SPAN_S, floor), cap))


def default_num_requests(workload: Workload) -> int:
    if workload.num_requests:
        return workload.num_requests
    # enough for a steady middle (throughput is measured between the 10th percentile of completions
    # and the last full wave) while `plan` stays fast
    if workload.concurrency:
        return int(min(max(4 * workload.concurrency, 48), 2000))
    if workload.request_rate and not math.isinf(workload.request_rate):
        return requests_for_rate(workload.request_rate)
    return 1000


def _rates_between(sim: SimResult, t0: float, t1: float, mean_input: float) -> tuple[float, float, float]:
    """(output tokens/s, requests/s, input tokens/s) over [t0, t1] of a run: its output tokens and completions there."""
    window = t1 - t0
    req_ps = sum(1 for ft in sim.finish_times if t0 < ft <= t1) / window
    return sim.output_tokens_between(t0, t1) / window, req_ps, req_ps * mean_input


def predict(
    model: ModelPerf,
    gpu: GpuPerf,
    base_efficiency: Efficiency,
    limits: SchedulerLimits,
    workload: Workload,
    *,
    steady: bool = True,
    seed: int = 0,
    efficiency_is_final: bool = False,
    vllm_version: tuple[int, int, int] | None = None,
    frontend_share: float = 1.0,
) -> ServingPrediction:
    """Simulate the workload. steady=True reports throughput over the middle of the run (what a
    replica sustains); steady=False reports the finite run as a benchmark prints it (tail included).
    frontend_share: engines with this traffic that one API server feeds (scheduler_sim.simulate)."""
    eff = base_efficiency if efficiency_is_final else efficiency_for(
        base_efficiency, gpu, model, vllm_version, chunked_prefill=limits.chunked_prefill)
    n = default_num_requests(workload)
    ins, outs = request_lengths(workload, n, seed)

    if limits.async_scheduling and eff.host_overlap == 0:
        # host work overlaps the GPU's (perf.py)
        share = limits.async_host_share  # the opt-in loop of 0.10 - 0.13 hides the same share of both costs
        eff = replace(eff, host_overlap=share or ASYNC_HOST_SHARE, host_overlap_seq=share or 1.0)
    step_fn = make_step_fn(model, gpu, eff)
    sim_outs = outs
    spec = speculative_steps(model, workload)
    if spec is not None:
        step_fn, sim_outs = _speculative_step_fn(step_fn, model, gpu, eff), [spec_decode_steps(o, spec) for o in outs]
    sim = simulate(ins, sim_outs, limits, step_fn, concurrency=workload.concurrency,
                   request_rate=None if workload.is_burst else workload.request_rate, seed=seed,
                   request_overhead_s=eff.request_overhead_s,
                   cached_prefix=ins[:1] if workload.warmup_first_prompt else (),
                   shared_prefix=int(workload.shared_prefix), prefix_warm=workload.warmup_first_prompt,
                   ramp_s=workload.ramp_s, frontend_share=frontend_share)
    if spec is not None:
        sim = _tokens_of_steps(sim, outs, sim_outs)
    duration = max(sim.duration_s, 1e-9)
    out_tps = sim.output_tokens / duration
    req_ps = sim.completed / duration
    in_tps = sim.input_tokens / duration
    if steady and len(sim.finish_times) >= 20:
        k = len(sim.finish_times)
        t0 = sim.finish_times[k // 10]
        t1 = sim.finish_times[max(k - 1 - (workload.concurrency or 0), k * 8 // 10)]
        if workload.request_rate and not workload.concurrency:
            t1 = sim.finish_times[k * 9 // 10]
        if t1 > t0:
            out_tps, req_ps, in_tps = _rates_between(sim, t0, t1, sum(ins) / n)
    shares = sim.limited_by
    if shares.get("kv-capacity", 0) > 0.2:
        bound = "kv-capacity"
    elif shares.get("max-num-seqs", 0) > 0.2:
        bound = "max-num-seqs"
    elif sim.compute_bound_share > 0.5:
        bound = "compute"
    else:
        bound = "bandwidth"
    risk = "high" if sim.preemptions or sim.peak_kv_usage > 0.97 else ("medium" if sim.peak_kv_usage > 0.8 else "low")
    ttft, tpot, e2e = sim.ttft_s, sim.tpot_s, sim.e2e_s
    window = None
    if workload.window_s is not None:
        t0, t1 = workload.window_s
        t1 = min(t1, sim.duration_s)
        w_ttft, w_tpot, w_e2e = sim.latencies_of_arrivals(t0, t1)
        if t1 > t0 and w_ttft:  # a window the run reached: what the tester measured in it
            ttft, tpot, e2e = w_ttft, w_tpot or tpot, w_e2e or e2e
            out_tps, req_ps, in_tps = _rates_between(sim, t0, t1, sum(ins) / n)
            window = (t0, t1)
    return ServingPrediction(
        output_tokens_per_s=out_tps,
        total_tokens_per_s=out_tps + in_tps,
        requests_per_s=req_ps,
        ttft_ms=Stat.of(ttft, 1000.0),
        tpot_ms=Stat.of(tpot, 1000.0),
        itl_ms=sim.itl_mean_s * 1000.0,
        e2e_s=Stat.of(e2e),
        batch=sim.mean_running,
        max_batch=sim.max_running,
        kv_usage=sim.mean_kv_usage,
        peak_kv_usage=sim.peak_kv_usage,
        bound=bound,
        preemptions=sim.preemptions,
        preemption_risk=risk,
        duration_s=duration,
        num_requests=n,
        efficiency=eff,
        sim=sim,
        window_s=window,
    )


# --------------------------------------------------------------------------- speculative decoding


def speculative_steps(model: ModelPerf, workload: Workload) -> float | None:
    """Tokens a request emits per decode step under speculative decoding, 1 + k x acceptance rate (vLLM's "Mean
    acceptance length": the target verifies k draft tokens and keeps the accepted ones plus its own next token);
    None where it is not modelled (no drafter, or no acceptance rate given)."""
    if not model.spec_tokens or workload.spec_acceptance is None:
        return None
    return 1.0 + model.spec_tokens * min(max(workload.spec_acceptance, 0.0), 1.0)


def spec_decode_steps(output_len: int, per_step: float) -> int:
    """Steps a request of `output_len` tokens takes, its first token from the prompt's step: 1 + (rest / per step)."""
    return output_len if output_len <= 1 else 1 + math.ceil((output_len - 1) / per_step)


def _speculative_step_fn(base, model: ModelPerf, gpu: GpuPerf, eff: Efficiency):
    """A step under speculative decoding (the simulation runs a request's decode steps, spec_decode_steps): every
    decoding sequence's k draft tokens are verified in the target's forward pass beside its own token (k more query
    tokens, each attending over the sequence's context), then the drafter runs (draft_seconds). Not modelled: the
    context grows by the emitted tokens a step, the simulation's by one."""
    k = model.spec_tokens

    def fn(decode: int, context_sum: float, prefill: int, pairs: float) -> tuple[float, bool]:
        if not decode:
            return base(decode, context_sum, prefill, pairs)
        seconds, compute_bound = base(decode, context_sum, prefill + decode * k, pairs + k * context_sum)
        return seconds + draft_seconds(model, gpu, eff, decode), compute_bound

    return fn


def _tokens_of_steps(sim: SimResult, outs: list[int], steps: list[int]) -> SimResult:
    """The simulation ran one output position per decode step; each step emitted `per step` tokens: output tokens and
    the time per output token of each request as the tokens it produced."""
    made, ran = sum(outs), max(sum(steps), 1)
    by_req = [t * (s - 1) / (o - 1) if t == t and o > 1 and s > 1 else t
              for t, o, s in zip(sim.tpot_by_request, outs, steps, strict=True)]
    gaps_real = sum(o - 1 for o in outs if o > 1)
    gaps_sim = sum(s - 1 for s in steps if s > 1)
    scale = made / ran
    return replace(sim, output_tokens=made, tpot_by_request=by_req, tpot_s=[t for t in by_req if t == t],
                   itl_mean_s=sim.itl_mean_s * gaps_sim / max(gaps_real, 1),
                   _cum_out=[round(c * scale) for c in sim._cum_out])


# --------------------------------------------------------------------------- data parallel

# vLLM starts one API server per data-parallel engine by default from 0.15 (entrypoints/cli/serve.py: "Defaulting
# api_server_count to data_parallel_size", vllm#32525; absent from the 0.14.0 wheel, present in 0.15.0, 0.17.0,
# 0.19.1 and 0.32); before, one API server fed every engine
DP_API_SERVER_PER_ENGINE = (0, 15, 0)


def replica_workloads(wl: Workload, replicas: int) -> list[tuple[Workload, int]]:
    """The workload each of `replicas` data-parallel engines behind one endpoint gets, with how many engines get
    it. vLLM's front end sends a request to the engine with the fewest waiting and running requests (v1/engine/
    core_client.py DPLBAsyncMPClient.get_core_engine_for_request: score = waiting x 4 + running), so a closed
    loop's clients and a burst's requests spread evenly (one more on some engines where they do not divide), and
    Poisson traffic splits into replicas streams of rate / replicas (taken as Poisson: a least-loaded split is a
    little smoother). An engine that gets nothing is left out."""
    if replicas <= 1:
        return [(wl, 1)]
    n = wl.num_requests
    if wl.concurrency:
        q, r = divmod(wl.concurrency, replicas)
        out = []
        for conc, engines in ((q + 1, r), (q, replicas - r)):
            if conc and engines:
                share = None if n is None else max(1, round(n * conc / wl.concurrency))
                out.append((replace(wl, concurrency=conc, num_requests=share), engines))
        return out
    if wl.is_burst:
        total = n or default_num_requests(wl)
        q, r = divmod(total, replicas)
        return [(replace(wl, num_requests=k), engines) for k, engines in ((q + 1, r), (q, replicas - r))
                if k and engines]
    share = None if n is None else max(1, math.ceil(n / replicas))
    return [(replace(wl, request_rate=wl.request_rate / replicas if wl.request_rate else None, num_requests=share),
             replicas)]


def combine_replicas(parts: list[tuple[ServingPrediction, int]]) -> ServingPrediction:
    """One prediction for a data-parallel fleet from its engines' (prediction, engines with it): rates add up,
    latencies are the requests' (means weighted by requests, p99 the worst engine's), batch and KV usage are one
    engine's (request-weighted), the simulation kept is the busiest engine's."""
    if len(parts) == 1 and parts[0][1] == 1:
        return parts[0][0]
    weights = [p.num_requests * k for p, k in parts]
    total = sum(weights) or 1

    def avg(get) -> float:
        return sum(get(p) * w for (p, _), w in zip(parts, weights, strict=True)) / total

    def stat(get) -> Stat:
        return Stat(avg(lambda p: get(p).mean), avg(lambda p: get(p).p50), max(get(p).p99 for p, _ in parts))

    busiest = max(parts, key=lambda pk: (pk[0].batch, pk[1]))[0]
    risks = ("low", "medium", "high")
    return replace(
        busiest,
        output_tokens_per_s=sum(p.output_tokens_per_s * k for p, k in parts),
        total_tokens_per_s=sum(p.total_tokens_per_s * k for p, k in parts),
        requests_per_s=sum(p.requests_per_s * k for p, k in parts),
        ttft_ms=stat(lambda p: p.ttft_ms), tpot_ms=stat(lambda p: p.tpot_ms), e2e_s=stat(lambda p: p.e2e_s),
        itl_ms=avg(lambda p: p.itl_ms), batch=avg(lambda p: p.batch), max_batch=max(p.max_batch for p, _ in parts),
        kv_usage=avg(lambda p: p.kv_usage), peak_kv_usage=max(p.peak_kv_usage for p, _ in parts),
        preemptions=sum(p.preemptions * k for p, k in parts),
        preemption_risk=max((p.preemption_risk for p, _ in parts), key=risks.index),
        duration_s=max(p.duration_s for p, _ in parts), num_requests=sum(p.num_requests * k for p, k in parts),
    )


def predict_replicas(predict_one, wl: Workload, replicas: int, *, api_servers: int = 1) -> ServingPrediction:
    """`predict_one(workload, frontend_share)` for each engine's share of `wl` (replica_workloads), combined
    (combine_replicas). `api_servers`: the API server processes in front of the engines (one per engine from
    vLLM 0.15, DP_API_SERVER_PER_ENGINE; one before), which share the front end's work."""
    parts = replica_workloads(wl, replicas)
    busy = sum(k for _, k in parts)
    share = max(busy / max(api_servers, 1), 1.0)
    return combine_replicas([(predict_one(w, share), k) for w, k in parts])


__all__ = [
    "DP_API_SERVER_PER_ENGINE",
    "SHAREGPT_MEAN_INPUT",
    "SHAREGPT_MEAN_OUTPUT",
    "WORKLOAD_PRESETS",
    "ServingPrediction",
    "Stat",
    "Workload",
    "combine_replicas",
    "default_num_requests",
    "predict",
    "predict_replicas",
    "replica_workloads",
    "request_lengths",
    "requests_for_rate",
    "spec_decode_steps",
    "speculative_steps",
]
