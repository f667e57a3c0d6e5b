"""`vllmkit capacity`: from SLOs and peak traffic to replicas and GPUs.

For every deployment the planner finds that fits (precision x TP/PP, on one GPU type) and a few
`--max-num-seqs` values, the performance model (plan/performance.py) finds the highest Poisson request
rate one replica sustains while the p99 TTFT and p99 TPOT stay within the SLOs (its *goodput*). Then

    replicas = ceil(peak QPS / (goodput x (1 - headroom))) + redundancy

and the deployment with the fewest GPUs in total wins (the lowest cost when a GPU price is given; ties
go to the higher goodput per GPU). When no deployment meets an SLO even at a trickle of traffic, the
error says which SLO and the physical floor on this GPU (DoesNotFitError, exit 3).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from vllmkit.errors import DoesNotFitError, UsageError
from vllmkit.estimate.perf import decode_floor_seconds, lm_head_excess_flops
from vllmkit.estimate.serving import Workload, requests_for_rate
from vllmkit.plan.candidates import SEARCH_NODES, WIDE_SEARCH_NODES
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.performance import CandidatePerf, PerfOptions, request_tokens

DEFAULT_TTFT_P99_MS = 2000.0
DEFAULT_TPOT_P99_MS = 100.0
_SEQS_LADDER = (1024, 512, 256, 128, 64, 32, 16, 8)
# the goodput search stops once the highest rate that meets the SLOs and the lowest that misses them are
# this close (relative): 8 geometric steps from the [0.02, 1] x _SAT_MARGIN x saturation bracket
_GOODPUT_REL_TOL = 0.02
# the goodput search's ceiling and the GPU lower bound take the closed-loop saturation rate with this margin.
# A Poisson stream sustains about as much at most; the closed loop's clients start together and stay in
# waves, which can cost it a little (Llama-3.1-8B INT8 on an L40S, 200 / 800 tokens: a goodput 1.08x the
# closed loop's rate). A search that meets the SLOs up to the ceiling raises it.
_SAT_MARGIN = 1.25


class CapacityRequest(BaseModel):
    model: str
    gpu: str
    qps: float = Field(gt=0)
    input_len: float = Field(gt=0)
    output_len: float = Field(gt=0)
    workload: str | None = None  # the --workload preset the lengths came from
    shared_prefix_len: int = Field(default=0, ge=0)  # prompt tokens every request shares (prefix-cache hits)
    ttft_p99_ms: float | None = DEFAULT_TTFT_P99_MS
    tpot_p99_ms: float | None = DEFAULT_TPOT_P99_MS
    headroom: float = Field(default=0.3, ge=0, lt=1)
    redundancy: int = Field(default=1, ge=0)
    gpu_price_per_hour: float | None = Field(default=None, gt=0)
    max_gpus: int | None = Field(default=None, gt=0)
    max_gpus_per_replica: int | None = Field(default=None, gt=0)
    source: str = "auto"
    revision: str | None = None
    vllm_version: str | None = None
    kv_cache_dtype: str = "auto"
    quantization: str | None = None  # "fp8": online FP8 of a 16-bit checkpoint (vLLM --quantization fp8)
    profiles_dir: str | None = None


class ReplicaPlan(BaseModel):
    precision: str
    model_id: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    max_num_seqs: int
    max_model_len: int
    goodput_rps: float
    output_tokens_per_s: float  # at goodput
    ttft_ms_p99: float  # at goodput
    tpot_ms_p99: float
    serve_command: list[str] = Field(default_factory=list)


class AtPeak(BaseModel):
    """Predicted latencies of one replica at peak traffic with the redundant replicas down."""

    requests_per_s_per_replica: float
    ttft_ms_p50: float
    ttft_ms_p99: float
    tpot_ms_p50: float
    tpot_ms_p99: float
    kv_usage: float
    bound: str


class CostInfo(BaseModel):
    gpu_price_per_hour: float
    per_hour: float
    per_million_output_tokens: float


class CapacityCandidate(BaseModel):
    precision: str
    model_id: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    max_num_seqs: int
    gpus_per_replica: int
    goodput_rps: float
    replicas: int | None
    gpus_total: int | None
    chosen: bool = False
    note: str = ""
    # False: left out before its goodput was searched (the note says why); goodput_rps is then 0
    searched: bool = True


class CapacityResult(BaseModel):
    model: str
    gpu: str
    gpu_display_name: str
    qps: float
    input_len: float
    output_len: float
    workload: str | None = None  # the --workload preset the lengths came from
    slo: dict[str, float | None]
    replicas: int
    redundancy: int
    gpus_per_replica: int
    gpus_total: int
    per_replica: ReplicaPlan
    headroom: float
    at_peak: AtPeak
    cost: CostInfo | None = None
    candidates: list[CapacityCandidate] = Field(default_factory=list)
    source: str  # estimated | calibrated
    vllm_version: str
    assumptions: list[str] = Field(default_factory=list)
    # what the plan of one replica warned of (a GPU the release's builds do not run on, an assumed install, ...)
    warnings: list[str] = Field(default_factory=list)
    # with --export: {"format": "k8s", "content": the manifests}, so --json carries what people get as text
    export: dict[str, str] | None = None


# --------------------------------------------------------------------------- goodput search


def _meets(pred: Any, ttft_ms: float | None, tpot_ms: float | None) -> bool:
    if pred.sim.completed < pred.num_requests:
        return False
    # without a TTFT SLO a queue that keeps growing still disqualifies the rate
    limit = ttft_ms if ttft_ms is not None else _STABILITY_TTFT_MS
    if not pred.ttft_ms.p99 <= limit:
        return False
    return not (tpot_ms is not None and not pred.tpot_ms.p99 <= tpot_ms)


# an overloaded replica's queue grows with every second of arrivals: simulating ARRIVAL_SPAN_S of them
# (estimate/serving.py, the same default as `plan --request-rate`) makes a rate above the replica's
# capacity show as a TTFT far above any sensible SLO
_STABILITY_TTFT_MS = 30_000.0
# requests whose latencies a goodput's p99 is taken over, at least (a p99 of fewer is nearly their maximum)
_WINDOW_MIN_REQUESTS = 200
# requests simulated where they rarely overlap (a trickle: each meets an idle engine)
_TRICKLE_REQUESTS = 60


def _rate_workload(req: CapacityRequest, rate: float, n: int | None = None) -> Workload:
    return Workload(req.input_len, req.output_len, request_rate=rate, num_requests=n or requests_for_rate(rate, 150, 2500),
                    shared_prefix=req.shared_prefix_len)


def sustained_predict(cp: CandidatePerf, req: CapacityRequest, rate: float, max_num_seqs: int,
                      trickle_life_s: float | None = None) -> Any:
    """The prediction at a Poisson `rate` with its TTFT / TPOT taken in the steady state. A run too short
    for that is lengthened unless it already misses the SLOs (more traffic only adds load)."""
    def settled(pred: Any) -> bool:
        return not _meets(pred, req.ttft_p99_ms, req.tpot_p99_ms)

    # a rate at which requests would rarely overlap even at their unloaded lifetime starts from a short run
    # (each request meets an idle engine; a run of lone requests costs a step per token each)
    n = _TRICKLE_REQUESTS if trickle_life_s is not None and rate * trickle_life_s < 0.5 else None
    return cp.predict_sustained(_rate_workload(req, rate, n), max_num_seqs=max_num_seqs, settled=settled,
                                min_window_requests=_WINDOW_MIN_REQUESTS)


def saturation_rps(cp: CandidatePerf, req: CapacityRequest, max_num_seqs: int) -> float:
    """Requests/s with as many clients always waiting as run at once (closed loop): the batch cap, or as
    many whole requests as the KV cache holds if fewer. No rate is sustained much above it. (More clients
    than the cache holds measure preemption churn instead, which a sustainable rate never reaches: Llama-3.3-
    70B FP8 at TP=2 on H100s, 2048 / 256 tokens, ran at 3.4 req/s with 1024 clients and a cache for 97.)"""
    tokens = req.input_len + req.output_len
    fit = max(int(cp.kv_capacity_tokens(tokens) // max(tokens, 1)), 1)
    clients = min(max_num_seqs, fit)
    sat = cp.predict(Workload(req.input_len, req.output_len, concurrency=clients,
                              num_requests=min(max(3 * clients, 64), 3000), shared_prefix=req.shared_prefix_len),
                     max_num_seqs=max_num_seqs)
    return max(sat.requests_per_s, 1e-6)


class _CannotWin(Exception):
    """The goodput search found a rate the replica misses that already needs more GPUs than the best
    fleet found: the candidate cannot win, so its search stops there."""

    def __init__(self, missed_rps: float) -> None:
        super().__init__(missed_rps)
        self.missed_rps = missed_rps


def goodput(cp: CandidatePerf, req: CapacityRequest, max_num_seqs: int,
            sat_rps: float | None = None, above: float | None = None,
            cannot_win: Callable[[float], bool] | None = None) -> tuple[float, Any]:
    """Highest Poisson rate (req/s) one replica serves within the SLOs, and the prediction there.
    (0, prediction at a trickle) when even a trickle misses an SLO. With `above`, only a goodput above
    that rate is wanted: (0, prediction there) when the SLOs are already missed at it."""
    hi = (sat_rps or saturation_rps(cp, req, max_num_seqs)) * _SAT_MARGIN
    if above is not None:
        if above >= hi:
            return 0.0, None
        lo_rate = above
        low = sustained_predict(cp, req, lo_rate, max_num_seqs)
    else:
        lo_rate = hi * 0.02
        # at a trickle requests rarely overlap: a short run is already the steady state
        low = cp.predict(_rate_workload(req, lo_rate, _TRICKLE_REQUESTS), max_num_seqs=max_num_seqs)
    if not _meets(low, req.ttft_p99_ms, req.tpot_p99_ms):
        return 0.0, low
    lo, best = lo_rate, low
    trickle_life = low.e2e_s.mean if low.e2e_s.mean == low.e2e_s.mean else None
    # bisect the rate geometrically: the bracket spans a factor of 50, and halving it linearly left the answer
    # anywhere in the last interval (6 linear steps from [0.02, 1] x saturation stop ~1.5 % of saturation
    # apart, which at a 1024-request cap is ~40 % of the goodput); the gap is relative, so it closes in
    # log2(ln 50 / ln(1 + tol)) steps whatever the saturation rate
    top = hi
    for _ in range(4):
        while hi / lo > 1.0 + _GOODPUT_REL_TOL:
            mid = math.sqrt(lo * hi)
            pred = sustained_predict(cp, req, mid, max_num_seqs, trickle_life)
            if _meets(pred, req.ttft_p99_ms, req.tpot_p99_ms):
                lo, best = mid, pred
            else:
                hi = mid
                if cannot_win is not None and cannot_win(hi):
                    raise _CannotWin(hi)
        if hi < top:
            break
        # every rate up to the ceiling met the SLOs: the closed loop understated what the replica sustains
        # (its clients start together and stay in waves); search above it
        top = hi = top * 2
    return lo, best


def replicas_needed(qps: float, goodput_rps: float, headroom: float, redundancy: int) -> int:
    """ceil(peak QPS / (goodput x (1 - headroom))) serving replicas plus the spares."""
    if goodput_rps <= 0:
        raise ValueError("goodput must be positive")
    # a relative tolerance, so float noise never adds a replica (and doubling QPS at most doubles them)
    return max(1, math.ceil(qps / (goodput_rps * (1.0 - headroom)) * (1 - 1e-12))) + redundancy


def parse_duration_ms(text: str | None, flag: str) -> float | None:
    """'2s', '500ms', '0.5s', '50' (ms) -> milliseconds."""
    if text is None:
        return None
    t = text.strip().lower()
    try:
        if t.endswith("ms"):
            value = float(t[:-2])
        elif t.endswith("s"):
            value = float(t[:-1]) * 1000.0
        else:
            value = float(t)
    except ValueError:
        raise UsageError(f"cannot read {flag} {text!r}", "write a duration such as 2s, 500ms or 50ms") from None
    if value <= 0 or not math.isfinite(value):
        raise UsageError(f"{flag} must be positive", "write a duration such as 2s or 50ms")
    return value


def parse_redundancy(text: str | None) -> int:
    """'N+1' -> 1, 'N+2' -> 2, '0' / 'none' -> 0, '2' -> 2."""
    if text is None:
        return 1
    t = text.strip().lower().replace(" ", "")
    if t in ("none", "n", "n+0", "0"):
        return 0
    if t.startswith("n+"):
        t = t[2:]
    if t.isdigit():
        return int(t)
    raise UsageError(f"cannot read --redundancy {text!r}", "use N+1 (one spare replica), N+2, or 0")


# --------------------------------------------------------------------------- service


def _skipped(alt: Any, cp: CandidatePerf, seqs: int, note: str) -> tuple[CapacityCandidate, CandidatePerf, Any]:
    """A searched configuration left out of the goodput search, with the reason."""
    return (CapacityCandidate(precision=alt.precision, model_id=alt.model_id,
                              tensor_parallel_size=alt.tensor_parallel_size,
                              pipeline_parallel_size=alt.pipeline_parallel_size, max_num_seqs=seqs,
                              gpus_per_replica=alt.tensor_parallel_size * alt.pipeline_parallel_size,
                              goodput_rps=0.0, replicas=None, gpus_total=None, note=note, searched=False),
            cp, (alt, None))


def plan_capacity(req: CapacityRequest, env: Mapping[str, str] | None = None, *,
                  records: Sequence[Any] = (), match: Any = None, calibration: Any = None) -> CapacityResult:
    """Size the fleet. `records` / `match`: measured performance (calibration.perfstore) and
    `calibration`: measured memory terms, both handed in by the caller (the planner reads no stores).
    The per-replica serve line is left empty: launch adds it (`replica_request` + make_plan)."""
    from vllmkit.plan.service import build_plan

    env = dict(env or {})
    plan_req = PlanRequest(model=req.model, source=req.source, revision=req.revision, gpu=req.gpu,
                           vllm_version=req.vllm_version, kv_cache_dtype=req.kv_cache_dtype,
                           quantization=req.quantization,
                           gpu_count=req.max_gpus_per_replica or None, profiles_dir=req.profiles_dir)
    from vllmkit.plan.service import resolve_gpu_profile

    profile = resolve_gpu_profile(plan_req, env)
    if plan_req.gpu_count is None:
        plan_req.gpu_count = max(profile.gpus_per_node, 1)
    if req.max_gpus:
        plan_req.gpu_count = min(plan_req.gpu_count, req.max_gpus)
    need = request_tokens(req.input_len, req.output_len)
    perf = PerfOptions(workload=None, records=records, match=match, collect=True, min_context=need)
    base = build_plan(plan_req, env, calibration=calibration, perf=perf)
    pairs: list[tuple[Any, CandidatePerf]] = base._perf_candidates
    # a model one node cannot hold (DeepSeek-V3 on H100s): replicas span nodes, up to the planner's search
    # (SEARCH_NODES nodes, then WIDE_SEARCH_NODES for a model far larger than the GPU) or --max-gpus, as `plan`
    # does without --gpu-count
    node = max(profile.gpus_per_node, 1)
    for nodes in (SEARCH_NODES, WIDE_SEARCH_NODES):
        wider = min(nodes * node, req.max_gpus or nodes * node)
        if pairs or req.max_gpus_per_replica is not None or wider <= plan_req.gpu_count:
            break
        plan_req.gpu_count = wider
        base = build_plan(plan_req, env, calibration=calibration, perf=perf)
        pairs = base._perf_candidates
    if not pairs:
        limited = req.max_gpus is not None and req.max_gpus < WIDE_SEARCH_NODES * node
        raise DoesNotFitError(f"{req.model} does not fit on up to {plan_req.gpu_count} x {base.gpu.display_name}",
                              "raise --max-gpus, or use a GPU with more memory" if limited else
                              "use a GPU with more memory or a quantized checkpoint of the model", code="does-not-fit")

    rows: list[tuple[CapacityCandidate, CandidatePerf, Any]] = []
    best_total = math.inf
    # A replica never serves more than its closed-loop saturation rate (the goodput search's ceiling), so
    # replicas_needed at that rate bounds a candidate's GPUs from below. Searching the candidates with the
    # smallest bound first finds a good fleet early; one whose bound exceeds the best fleet found is skipped
    # (exact: it cannot beat it). Ties: fewest GPUs per replica first, FP8 / BF16 before other precisions.
    order = []
    for alt, cp in pairs:
        gpr = alt.tensor_parallel_size * alt.pipeline_parallel_size
        default_seqs = cp.limits.max_num_seqs
        if alt.max_model_len < need:  # the KV cache cannot hold one request of the workload
            rows.append(_skipped(alt, cp, default_seqs,
                                 f"context {alt.max_model_len:,} < {need:,} tokens per request"))
            continue
        sat = saturation_rps(cp, req, default_seqs)
        floor_total = replicas_needed(req.qps, sat * _SAT_MARGIN, req.headroom, req.redundancy) * gpr
        order.append((floor_total, cp.gpus, alt.precision not in ("fp8", "bf16"), len(order), alt, cp, sat))
    for floor_total, _, _, _, alt, cp, sat in sorted(order, key=lambda o: o[:4]):
        gpr = alt.tensor_parallel_size * alt.pipeline_parallel_size
        default_seqs = cp.limits.max_num_seqs
        if floor_total > best_total:
            rows.append(_skipped(alt, cp, default_seqs, f"skipped: >= {floor_total} GPUs even at saturation "
                                                        f"(best found: {best_total})"))
            continue
        def cannot_win(missed: float, gpr: int = gpr, best_total: float = best_total) -> bool:
            # the goodput is below a rate the replica misses, so the fleet needs at least this many GPUs
            return replicas_needed(req.qps, missed, req.headroom, req.redundancy) * gpr > best_total

        try:
            rate, pred = goodput(cp, req, default_seqs, sat, cannot_win=cannot_win)
        except _CannotWin as stop:
            bound = replicas_needed(req.qps, stop.missed_rps, req.headroom, req.redundancy) * gpr
            rows.append(_skipped(alt, cp, default_seqs, f"skipped: misses the SLOs at {stop.missed_rps:.3g} req/s, "
                                                        f">= {bound} GPUs (best found: {best_total})"))
            continue
        best_row = (default_seqs, rate, pred)
        # A smaller --max-num-seqs shortens the decode steps (TPOT) at the cost of queueing (TTFT). A cap
        # at or above the most requests that ever ran together at the goodput changes nothing, so only
        # the ladder's caps below that are tried, largest first, while each raises the goodput by > 2 %.
        if rate > 0 and pred.tpot_ms.p99 > (req.tpot_p99_ms or math.inf) * 0.8:
            for seqs in [s for s in _SEQS_LADDER if s < min(default_seqs, pred.max_batch)][:3]:
                rate_s, pred_s = goodput(cp, req, seqs, above=best_row[1] * 1.02)
                if rate_s <= best_row[1] * 1.02:
                    break
                best_row = (seqs, rate_s, pred_s)
        seqs, rate, pred = best_row
        replicas = gpus_total = None
        note = ""
        if rate > 0:
            replicas = replicas_needed(req.qps, rate, req.headroom, req.redundancy)
            gpus_total = replicas * gpr
            if req.max_gpus and gpus_total > req.max_gpus:
                note = f"needs {gpus_total} GPUs > --max-gpus {req.max_gpus}"
            else:
                best_total = min(best_total, gpus_total)
        else:
            note = "misses the SLOs even at low load"
        rows.append((CapacityCandidate(precision=alt.precision, model_id=alt.model_id,
                                       tensor_parallel_size=alt.tensor_parallel_size,
                                       pipeline_parallel_size=alt.pipeline_parallel_size, max_num_seqs=seqs,
                                       gpus_per_replica=gpr, goodput_rps=round(rate, 4), replicas=replicas,
                                       gpus_total=gpus_total, note=note), cp, (alt, pred)))

    # the table lists the candidates as the plan's alternatives do: smallest replicas first
    position = {id(cp): i for i, (_, cp) in enumerate(pairs)}
    rows.sort(key=lambda r: (r[1].gpus, r[0].precision not in ("fp8", "bf16"), position[id(r[1])]))
    ok = [r for r in rows if r[0].gpus_total is not None and not r[0].note]
    if not ok:
        raise _no_config_error(req, rows, base, fp8_gpu=profile.fp8_supported)
    chosen_row = min(ok, key=lambda r: (r[0].gpus_total, -r[0].goodput_rps / r[0].gpus_per_replica,
                                        r[0].gpus_per_replica))
    cand, cp, (alt, pred_good) = chosen_row
    cand.chosen = True
    serving = cand.replicas - req.redundancy  # type: ignore[operator]
    per_replica_rate = req.qps / max(serving, 1)
    peak = sustained_predict(cp, req, per_replica_rate, cand.max_num_seqs)
    cost = None
    if req.gpu_price_per_hour:
        per_hour = req.gpu_price_per_hour * cand.gpus_total  # type: ignore[operator]
        tokens_per_hour = req.qps * req.output_len * 3600.0
        cost = CostInfo(gpu_price_per_hour=req.gpu_price_per_hour, per_hour=round(per_hour, 2),
                        per_million_output_tokens=round(per_hour / tokens_per_hour * 1e6, 4))
    eff = cp.efficiency
    return CapacityResult(
        model=req.model, gpu=base.gpu.name, gpu_display_name=base.gpu.display_name, qps=req.qps,
        input_len=req.input_len, output_len=req.output_len, workload=req.workload,
        slo={"ttft_p99_ms": req.ttft_p99_ms, "tpot_p99_ms": req.tpot_p99_ms},
        replicas=cand.replicas, redundancy=req.redundancy,  # type: ignore[arg-type]
        gpus_per_replica=cand.gpus_per_replica, gpus_total=cand.gpus_total,  # type: ignore[arg-type]
        per_replica=ReplicaPlan(
            precision=cand.precision, model_id=cand.model_id, tensor_parallel_size=cand.tensor_parallel_size,
            pipeline_parallel_size=cand.pipeline_parallel_size, max_num_seqs=cand.max_num_seqs,
            max_model_len=alt.max_model_len, goodput_rps=cand.goodput_rps,
            output_tokens_per_s=round(pred_good.output_tokens_per_s, 1),
            ttft_ms_p99=round(pred_good.ttft_ms.p99, 1), tpot_ms_p99=round(pred_good.tpot_ms.p99, 2),
        ),
        headroom=req.headroom,
        at_peak=AtPeak(requests_per_s_per_replica=round(per_replica_rate, 4),
                       ttft_ms_p50=round(peak.ttft_ms.p50, 1), ttft_ms_p99=round(peak.ttft_ms.p99, 1),
                       tpot_ms_p50=round(peak.tpot_ms.p50, 2), tpot_ms_p99=round(peak.tpot_ms.p99, 2),
                       kv_usage=round(peak.kv_usage, 4), bound=peak.bound),
        cost=cost,
        candidates=[r[0] for r in rows],
        source=eff.source,
        vllm_version=base.vllm_version,
        warnings=list(base.warnings),
        assumptions=[
            "goodput: the highest Poisson request rate one replica serves with p99 TTFT and p99 TPOT within the "
            "SLOs (vLLM's scheduler simulated request by request)",
            f"replicas = ceil(QPS / (goodput x (1 - {req.headroom:g}))) + {req.redundancy} spare; latencies at "
            "peak assume the spare replicas are down",
            f"efficiencies {eff.source}: bandwidth {eff.bandwidth:.0%}, compute {eff.compute:.0%} of the datasheet "
            "peaks" + (f" ({eff.note})" if eff.note else ""),
            "fixed input/output lengths, "
            + (f"the first {req.shared_prefix_len:,} prompt tokens shared (prefix-cache hits after the first request)"
               if req.shared_prefix_len else "no prefix-cache hits") + ", no speculative decoding",
        ],
    )


def replica_request(req: CapacityRequest, result: CapacityResult) -> PlanRequest:
    """The plan request of one replica of `result` (for its serve line and manifests)."""
    r = result.per_replica
    return PlanRequest(model=r.model_id, source=req.source if r.model_id == req.model else "auto",
                       revision=req.revision if r.model_id == req.model else None, gpu=req.gpu,
                       vllm_version=req.vllm_version, tensor_parallel_size=r.tensor_parallel_size,
                       pipeline_parallel_size=r.pipeline_parallel_size, max_num_seqs=r.max_num_seqs,
                       kv_cache_dtype=req.kv_cache_dtype, max_model_len=r.max_model_len,
                       quantization=req.quantization if r.model_id == req.model else None,
                       profiles_dir=req.profiles_dir)


def _no_config_error(req: CapacityRequest, rows: list, base: Any, *, fp8_gpu: bool = False) -> DoesNotFitError:
    too_many = [r for r in rows if r[0].gpus_total is not None]
    if too_many:
        need = min(r[0].gpus_total for r in too_many)
        return DoesNotFitError(f"meeting {req.qps:g} QPS needs at least {need} x {base.gpu.display_name}, more than "
                               f"--max-gpus {req.max_gpus}", "raise --max-gpus, relax the SLOs or lower the headroom",
                               code="slo-impossible")
    # which SLO is out of reach, and its floor on this GPU
    preds = [r[2][1] for r in rows if r[2][1] is not None]
    if not preds:
        longest = max(r[2][0].max_model_len for r in rows)
        return DoesNotFitError(f"no configuration of up to {base.gpu.count} x {base.gpu.display_name} holds a request "
                               f"of {req.input_len + req.output_len:,} tokens (longest context {longest:,})",
                               "raise --max-gpus, use --kv-cache-dtype fp8, or shorten the requests",
                               code="does-not-fit")
    best_tpot = min(p.tpot_ms.p99 for p in preds)
    best_ttft = min(p.ttft_ms.p99 for p in preds)
    floor_tpot = min(decode_floor_seconds(r[1].model, r[1].gpu) for r in rows) * 1000.0
    floor_ttft = min(_prefill_floor_s(r[1], req.input_len) for r in rows) * 1000.0
    if req.tpot_p99_ms is not None and best_tpot > req.tpot_p99_ms:
        physical = req.tpot_p99_ms < floor_tpot
        why = (f"physically impossible: one decode step reads the weights of a rank, {floor_tpot:.1f} ms at the "
               f"datasheet bandwidth even at the largest TP searched" if physical else
               f"the best configuration searched reaches p99 TPOT {best_tpot:.1f} ms at low load")
        return DoesNotFitError(f"TPOT p99 <= {req.tpot_p99_ms:g} ms cannot be met on {base.gpu.display_name}: {why}",
                               f"the best configuration reaches {best_tpot:.1f} ms at low load (the datasheet floor "
                               f"is {floor_tpot:.1f} ms): relax --tpot-p99 to {math.ceil(best_tpot)}ms or more, use "
                               f"a faster GPU or a smaller / quantized model{_online_fp8_hint(req, rows, fp8_gpu)}",
                               code="slo-impossible")
    physical = req.ttft_p99_ms is not None and req.ttft_p99_ms < floor_ttft
    why = (f"physically impossible: a {req.input_len:g}-token prefill takes at least {floor_ttft:.1f} ms at the "
           f"datasheet peak" if physical else
           f"the best configuration searched reaches p99 TTFT {best_ttft:.0f} ms at low load")
    return DoesNotFitError(f"TTFT p99 <= {req.ttft_p99_ms:g} ms cannot be met on {base.gpu.display_name}: {why}",
                           f"relax --ttft-p99 to {math.ceil(best_ttft)}ms or more, shorten the prompts or use a "
                           "faster GPU",
                           code="slo-impossible")


def _online_fp8_hint(req: CapacityRequest, rows: list, fp8_gpu: bool) -> str:
    """Every configuration searched reads 16-bit weights and the GPU has FP8: vLLM's online FP8
    (--quantization fp8) halves the bytes a decode step reads, which is what bounds TPOT."""
    sixteen_bit = all(r[0].precision in ("bf16", "fp16") for r in rows)
    if req.quantization is None and sixteen_bit and fp8_gpu:
        return " (--quantization fp8: online FP8 of this checkpoint, half the weight bytes per step)"
    return ""


def _prefill_floor_s(cp: CandidatePerf, input_len: float) -> float:
    m, g = cp.model, cp.gpu
    # the prompt's logits are computed at its last position only
    flops = m.flops(input_len, input_len * input_len / 2) - lm_head_excess_flops(m, input_len, 1)
    return max(flops / g.peak_flops(m.compute_precision), m.weight_bytes_read(input_len) / g.bandwidth_bytes_s)


__all__ = ["CapacityRequest", "CapacityResult", "goodput", "parse_duration_ms", "parse_redundancy", "plan_capacity",
           "replica_request", "replicas_needed"]
