"""A small discrete-event simulation of vLLM's V1 scheduler over a finite set of requests (pure).

What it mirrors (vllm/v1/core/sched/scheduler.py, `Scheduler.schedule`, 0.9 - 0.32):
- one token budget per step, `max_num_batched_tokens`; running requests are scheduled first (a decode
  costs one token, a partially prefilled prompt continues with the next chunk), then waiting requests
  are admitted in arrival order while fewer than `max_num_seqs` run, the budget lasts and the KV cache
  has room for the chunk (chunked prefill: a prompt may be split across steps);
- when a running request cannot grow its KV cache, the most recently scheduled running request is
  preempted (V1 recomputes it: it goes back to the head of the queue and re-prefills prompt + output);
- a request's first token comes out of the step that finishes its prompt; every later step adds one.

What a published benchmark does is simulated as such: `request_rate=None` with no concurrency is a
burst (every prompt at t=0, as `vllm bench serve --request-rate inf`), a concurrency is a closed loop
of that many clients, a rate is Poisson arrivals (burstiness 1), and a rate with a concurrency is
Poisson arrivals of which at most that many are in flight (`--request-rate R --max-concurrency C`).
The run ends when the last request finishes, so the throughput includes the tail of the run, as the benchmark's does.
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# step_fn(decode_seqs, context_sum, prefill_tokens, prefill_pairs) -> (seconds, compute_bound)
StepFn = Callable[[int, float, int, float], tuple[float, bool]]

MAX_STEPS = 400_000


@dataclass(frozen=True)
class SchedulerLimits:
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_capacity_tokens: int
    chunked_prefill: bool = True
    # V1 prefix caching (on by default): a preempted request's blocks are freed but stay cached, so its
    # recompute is a cache hit on whatever of them was not evicted meanwhile (see `simulate`)
    prefix_caching: bool = True
    # False: the V0 engine without chunked prefill (vLLM < 0.8, vllm/core/scheduler.py
    # `_schedule_default`): a step that admits prompts runs only prompts (the whole budget is theirs)
    # and the running decodes wait; decodes run only in steps with no prompt to admit
    mixed_batches: bool = True
    # vLLM's async scheduling (on by default from 0.14 on GPUs unless PP > 1; vllm/config/vllm.py): the
    # engine core schedules step N+1 as soon as step N is launched, so a request that reaches it while
    # step N runs is first scheduled in step N+2. While the engine is busy, a step admits only requests
    # that were there when the step before it began.
    async_scheduling: bool = False
    # the share of the fixed step overhead that async scheduling overlaps with the GPU's work (0: the default
    # loop's, estimate/perf.py ASYNC_HOST_SHARE; the opt-in loop of 0.10 - 0.13: EARLY_ASYNC_HOST_SHARE)
    async_host_share: float = 0.0
    # the old engine (V0) runs the step loop: every running sequence's output is processed synchronously in it
    # (estimate/perf.py efficiency_for, Efficiency.v0_seq_factor); vLLM < 0.8, or 0.8 - 0.10 with VLLM_USE_V1=0
    # or where the V1 oracle falls back
    v0_engine: bool = False


@dataclass
class SimResult:
    duration_s: float
    completed: int
    input_tokens: int
    output_tokens: int
    ttft_s: list[float]
    tpot_s: list[float]  # requests with more than one output token
    e2e_s: list[float]
    itl_mean_s: float
    preemptions: int
    max_running: int
    mean_running: float  # time-weighted
    peak_kv_usage: float
    mean_kv_usage: float  # time-weighted
    compute_bound_share: float  # share of the run's time in compute-bound steps
    limited_by: dict[str, float] = field(default_factory=dict)  # share of time waiting on each limit
    steps: int = 0
    _cum_t: list[float] = field(default_factory=list, repr=False)
    _cum_out: list[int] = field(default_factory=list, repr=False)
    finish_times: list[float] = field(default_factory=list, repr=False)
    # per request, by index: when it was sent, its TTFT and TPOT (nan where it has none)
    arrival_by_request: list[float] = field(default_factory=list, repr=False)
    ttft_by_request: list[float] = field(default_factory=list, repr=False)
    tpot_by_request: list[float] = field(default_factory=list, repr=False)
    e2e_by_request: list[float] = field(default_factory=list, repr=False)

    def latencies_of_arrivals(self, t0: float, t1: float) -> tuple[list[float], list[float], list[float]]:
        """(TTFTs, TPOTs, e2e latencies) of the requests sent in [t0, t1]: a steady-state window leaves out
        the requests that met a filling engine at the start and a draining one at the end."""
        ttft, tpot, e2e = [], [], []
        for at, f, p, e in zip(self.arrival_by_request, self.ttft_by_request, self.tpot_by_request,
                               self.e2e_by_request, strict=True):
            if t0 <= at <= t1:
                if f == f:
                    ttft.append(f)
                if p == p:
                    tpot.append(p)
                if e == e:
                    e2e.append(e)
        return ttft, tpot, e2e

    def output_tokens_between(self, t0: float, t1: float) -> float:
        def at(t: float) -> float:
            i = bisect.bisect_right(self._cum_t, t)
            return float(self._cum_out[i - 1]) if i > 0 else 0.0
        return at(t1) - at(t0)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]."""
    if not values:
        return float("nan")
    data = sorted(values)
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def _numpy_legacy_random(seed: int) -> random.Random:
    """A `random.Random` whose doubles equal numpy's legacy `np.random.seed(seed)` stream: numpy seeds
    MT19937 with init_genrand(seed) (Python seeds by init_by_array), both build a double from two
    32-bit draws the same way (genrand_res53)."""
    mt = [seed & 0xFFFFFFFF]
    for i in range(1, 624):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
    rng = random.Random()
    rng.setstate((3, (*mt, 624), None))
    return rng


def arrival_times(n: int, request_rate: float | None, seed: int = 0, *, normalized: bool = False) -> list[float]:
    """Poisson arrivals at `request_rate` exactly as `vllm bench serve` draws them: it calls
    `np.random.seed(args.seed)` (default 0) and takes one `np.random.gamma(shape=1, scale=1/rate)` gap
    per request (vllm/benchmarks/serve.py `get_request`; benchmarks/benchmark_serving.py before the
    move) — legacy numpy's shape-1 gamma is -log(1 - U). Old benchmark_serving.py sends the first
    request at t=0 and sleeps after each; newer `get_request` (normalized=True) precomputes every
    delay, the first included, and rescales them so the last request goes out at n / rate.
    All at t=0 when the rate is None or infinite."""
    if request_rate is None or math.isinf(request_rate) or request_rate <= 0:
        return [0.0] * n
    rng = _numpy_legacy_random(seed)
    gaps = [-math.log(1.0 - rng.random()) / request_rate for _ in range(n)]
    out: list[float] = []
    t = 0.0
    if normalized:
        for g in gaps:
            t += g
            out.append(t)
        scale = (n / request_rate) / out[-1] if out[-1] > 0 else 1.0
        return [x * scale for x in out]
    for g in gaps:
        out.append(t)
        t += g
    return out


# step 0 of `simulate` (runs of decode-only steps without the scheduling passes); off only in the test
# that checks it changes nothing
FAST_DECODE_STRETCHES = True


def simulate(
    input_lens: Sequence[int],
    output_lens: Sequence[int],
    limits: SchedulerLimits,
    step_fn: StepFn,
    *,
    concurrency: int | None = None,
    request_rate: float | None = None,
    seed: int = 0,
    request_overhead_s: float = 0.0,
    cached_prefix: Sequence[int] = (),
    shared_prefix: int = 0,
    prefix_warm: bool = False,
    ramp_s: float = 0.0,
    frontend_share: float = 1.0,
) -> SimResult:
    """cached_prefix[i]: tokens of request i's prompt already in the prefix cache when the run starts (a
    benchmark's warm-up sent that prompt before timing); used only with prefix caching on.
    shared_prefix: leading prompt tokens every request shares (a system prompt, `vllm bench serve
    --random-prefix-len`, identical prompts): once one request has computed them (or the run starts with
    them cached, prefix_warm), a newly admitted request finds their full 16-token blocks in the prefix
    cache and computes only the rest (at least its last token: vLLM's get_computed_blocks).
    ramp_s: a closed loop whose clients start one after another over this many seconds (client k at
    k x ramp_s / concurrency, as load testers ramp users up) instead of all at t=0; with equal lengths, clients
    that start together stay in step (their prompts arrive in the same steps, wave after wave), staggered ones
    do not.
    frontend_share: engines one API server feeds, this one among them with the same traffic (data parallel with
    one API server): each request keeps the server busy that many times its own work, so its queue fills at the
    fleet's rate while a request still takes its own work's time once its turn comes."""
    n = len(input_lens)
    if n == 0 or n != len(output_lens):
        raise ValueError("need as many output lengths as input lengths (and at least one request)")
    # when each request arrives (all at t=0 without a finite rate). A closed loop sends the first
    # `concurrency` at their arrival and the next as one finishes, but not before it has arrived: a rate
    # with a concurrency cap (`vllm bench serve --request-rate R --max-concurrency C`) holds the rest in
    # the client's semaphore, whose wait is not part of TTFT (the client times from the send)
    due = arrival_times(n, request_rate, seed)
    ramped = bool(concurrency and ramp_s > 0 and request_rate is None)
    if ramped:
        due = [k * ramp_s / concurrency if k < concurrency else 0.0 for k in range(n)]  # client k starts then
    arrivals = due[:min(concurrency, n)] if concurrency else due
    next_to_send = len(arrivals)  # closed loop: the next request index to send on a completion
    arrival_t = [0.0] * n
    ready_t = [0.0] * n
    jitter = random.Random(seed + 1)
    pending: list[tuple[float, int]] = []  # (time the engine sees it, index): a heap

    frontend_free = [0.0]

    def send(i: int, at: float, *, queue: bool = True) -> None:
        # the API server handles each request (HTTP, chat template, tokenisation) before the engine sees
        # it, one at a time in its event loop: a burst queues there too. The work varies from request
        # to request, which also de-synchronises closed loops.
        arrival_t[i] = at
        start = max(at, frontend_free[0]) if queue else at
        work = request_overhead_s * (0.5 + jitter.random())
        ready_t[i] = start + work
        if queue:
            frontend_free[0] = start + work * frontend_share
        heapq.heappush(pending, (ready_t[i], i))

    for i, at in enumerate(arrivals):
        # a ramp's clients start seconds apart, later than the requests the first ones send as they finish:
        # they do not hold the API server's queue until the last client's start
        send(i, at, queue=not ramped)

    cap = max(limits.kv_capacity_tokens, 1)
    waiting: deque[int] = deque()
    # per request
    prefill_target = [0] * n  # tokens to (re)compute before the next output token
    prefill_done = [0] * n
    generated = [0] * n  # output tokens produced so far
    first_token_t = [-1.0] * n
    finish_t = [-1.0] * n
    decode_start_step = [0] * n
    decode_start_ctx = [0] * n
    epoch = [0] * n
    failed = [False] * n  # rejected: the prompt alone exceeds the KV cache
    cached = [False] * n  # preempted with (some of) its blocks possibly still in the prefix cache
    cached_len = [0] * n  # tokens it had computed when preempted
    evict_mark = [0.0] * n  # value of `allocated` at which its first freed block gets reused
    allocated = 0.0  # tokens allocated from the free-block queue so far (the eviction clock)
    warm = prefix_warm and shared_prefix > 0
    if limits.prefix_caching:
        for i, k in enumerate(cached_prefix[:n]):
            if k > 0:
                # freed into an otherwise empty cache: reused only once the whole cache has been handed out
                cached[i], cached_len[i], evict_mark[i] = True, min(int(k), input_lens[i]), float(cap)
    prefilling: dict[int, None] = {}  # running requests still in their prompt (scheduling order)
    running: dict[int, str] = {}  # insertion order = scheduling order; value "prefill" | "decode"
    finish_at: dict[int, list[tuple[int, int]]] = {}
    decoders = 0
    ctx_sum = 0.0  # contexts of decoding requests at the start of the current step
    prefill_kv = 0  # tokens cached by partially prefilled requests

    t = 0.0
    step = 0
    dstep = 0  # steps in which the running decodes advanced (all of them unless mixed_batches=False)
    preemptions = 0
    max_running = 0
    run_time_weighted = 0.0
    kv_time_weighted = 0.0
    peak_kv = 0.0
    compute_time = 0.0
    limited = {"max-num-seqs": 0.0, "kv-capacity": 0.0, "batched-tokens": 0.0}
    completed = 0
    out_total = 0
    cum_t: list[float] = []
    cum_out: list[int] = []
    gaps_sum = 0.0
    gaps_n = 0
    done_e2e: list[float] = []
    done_tpot: list[float] = []

    def ctx_of(i: int) -> int:
        return decode_start_ctx[i] + (dstep - decode_start_step[i])

    def preempt_last(in_use: float) -> int:
        """Preempt the newest running request (V1 `Scheduler.schedule`: `self.running.pop()`) with
        `in_use` KV slots allocated right now; returns its index.

        Its blocks go back to the free-block queue but keep their prefix-cache hashes. The queue hands
        out blocks oldest-freed first (vllm/v1/core/block_pool.py `get_new_blocks` pops the head;
        `free_blocks` appends at the tail, a request's blocks in reverse so its tail goes first), so
        the request's blocks survive until the free blocks ahead of them plus its own tail have been
        reallocated: with F slots free before it was preempted, after A more allocated slots its first
        max(0, computed - max(0, A - F)) tokens are still a cache hit."""
        nonlocal decoders, ctx_sum, prefill_kv, preemptions
        i, state = running.popitem()
        if state == "decode":
            made = dstep - decode_start_step[i]
            generated[i] += made
            computed = decode_start_ctx[i] + made
            ctx_sum -= computed
            decoders -= 1
            epoch[i] += 1
        else:
            computed = prefill_done[i]
            prefill_kv -= prefill_done[i]
            prefilling.pop(i, None)
        prefill_target[i] = input_lens[i] + generated[i]
        prefill_done[i] = 0
        cached[i] = limits.prefix_caching and computed > 0
        cached_len[i] = computed
        evict_mark[i] = allocated + max(cap - in_use, 0.0)
        waiting.appendleft(i)
        preemptions += 1
        return i

    def finish(i: int) -> None:
        """Request i produced its last token at time t: record it, and a closed loop sends the next."""
        nonlocal completed, gaps_sum, gaps_n, next_to_send
        del running[i]
        finish_t[i] = t
        completed += 1
        done_e2e.append(t - arrival_t[i])
        if output_lens[i] > 1:
            span = t - first_token_t[i]
            done_tpot.append(span / (output_lens[i] - 1))
            gaps_sum += span
            gaps_n += output_lens[i] - 1
        if concurrency and next_to_send < n:
            send(next_to_send, max(t, due[next_to_send]))
            next_to_send += 1

    def finish_decodes(due: Sequence[tuple[int, int]]) -> None:
        """The decoding requests whose last token was the decode step just run (dstep) finish; an entry
        left by an earlier epoch (the request was preempted since) or for one no longer decoding is
        stale."""
        nonlocal ctx_sum, decoders
        for i, ep in due:
            if ep != epoch[i] or running.get(i) != "decode":
                continue
            made = dstep - decode_start_step[i]
            generated[i] += made
            ctx_sum -= decode_start_ctx[i] + made
            decoders -= 1
            finish(i)

    def admission_blocked() -> str | None:
        """Why step 3 below would admit no one while only decodes run (nothing prefilling): "" when no one
        waits, the reason when the head of the queue is blocked in a way only a finish can lift (the
        batch cap, the token budget, or a KV cache that fills with every step); None when it might be
        admitted (or its prefix-cache hit shrinks as blocks are reused), which the general step decides."""
        if not waiting:
            return ""
        budget = limits.max_num_batched_tokens - (decoders if limits.mixed_batches else 0)
        if budget <= 0:
            return "batched-tokens"
        if len(running) >= limits.max_num_seqs:
            return "max-num-seqs"
        i = waiting[0]
        if cached[i]:
            return None
        used = ctx_sum + decoders + prefill_kv
        if limits.prefix_caching and warm and prefill_done[i] == 0 and generated[i] == 0:
            hit = min(shared_prefix, prefill_target[i] - 1) // 16 * 16
            return "kv-capacity" if used + hit + min(prefill_target[i] - hit, budget) > cap else None
        rem = prefill_target[i] - prefill_done[i]
        if not limits.chunked_prefill and rem > budget:
            return "batched-tokens"
        return "kv-capacity" if used + min(rem, budget) > cap else None

    # the step cost of a decode-only step as a function of the context alone (estimate/perf.py make_step_fn)
    stretch = getattr(step_fn, "decode_only", None)
    lag = limits.async_scheduling
    step_began = 0.0  # when the last step began: with async scheduling, when the next one was scheduled
    while completed < n:
        if step > MAX_STEPS:
            break
        seen = step_began if lag and (running or waiting) else t
        while pending and pending[0][0] <= seen:
            _, i = heapq.heappop(pending)
            prefill_target[i] = input_lens[i]
            waiting.append(i)
        if not running and not waiting:
            if not pending:
                break
            t = step_began = max(t, pending[0][0])  # an idle engine schedules what arrives
            continue

        # 0. a stretch of decode-only steps: nothing prefilling and nothing the scheduler can admit (no
        # one waiting, or the head of the queue blocked until someone finishes), no arrival due and the
        # decodes' next tokens fit. Each step does exactly the bookkeeping of the general step below,
        # without its scheduling passes (most steps of a long run are like this).
        if FAST_DECODE_STRETCHES and not prefilling and decoders:
            blocked = admission_blocked()
            ran = False
            while blocked is not None and decoders:
                # one stretch per set of running requests: what only a finish changes is looked up once
                g = stretch(decoders) if stretch else (lambda c, d=decoders: step_fn(d, c, 0, 0.0))
                nrun = len(running)
                if nrun > max_running:
                    max_running = nrun
                due_at = pending[0][0] if pending else math.inf
                done: Sequence[tuple[int, int]] = ()
                while (not done and ctx_sum + decoders + prefill_kv <= cap and step <= MAX_STEPS
                       and due_at > (step_began if lag else t)):
                    ran = True
                    used = ctx_sum + decoders + prefill_kv
                    allocated += decoders
                    seconds, compute_bound = g(ctx_sum)
                    if seconds < 1e-7:
                        seconds = 1e-7
                    run_time_weighted += nrun * seconds
                    kv_frac = used / cap
                    if kv_frac > 1.0:
                        kv_frac = 1.0
                    kv_time_weighted += kv_frac * seconds
                    if kv_frac > peak_kv:
                        peak_kv = kv_frac
                    if compute_bound:
                        compute_time += seconds
                    if blocked:
                        limited[blocked] += seconds
                    step_began = t
                    t += seconds
                    step += 1
                    produced = decoders
                    ctx_sum += decoders
                    dstep += 1
                    done = finish_at.pop(dstep, ())
                    if done:
                        finish_decodes(done)
                    out_total += produced
                    cum_t.append(t)
                    cum_out.append(out_total)
                if not done:
                    break  # an arrival is due, the cache is full or the step limit is reached
                if blocked:  # a finish frees a slot (or budget): admission may go ahead
                    blocked = None
            if ran:
                continue

        # 1. running decodes grow by one token each; preempt the newest until they fit
        while decoders and ctx_sum + decoders + prefill_kv > cap and len(running) > 1:
            preempt_last(ctx_sum + prefill_kv)
        budget = limits.max_num_batched_tokens - (decoders if limits.mixed_batches else 0)
        prefill_tokens = 0
        pairs = 0.0
        chunks: list[tuple[int, int]] = []
        used = ctx_sum + decoders + prefill_kv
        # 2. partially prefilled running requests continue; one that cannot get a single new slot
        # preempts the newest running request (possibly itself), as V1 does for any running request
        for i in list(prefilling):
            if budget <= 0:
                break
            if i not in prefilling:
                continue  # preempted below by an older one
            rem = prefill_target[i] - prefill_done[i]
            while cap - used < 1 and len(running) > 1:
                victim = preempt_last(used)
                used -= cached_len[victim]
                if victim == i:
                    break
            if i not in prefilling:
                continue
            c = min(rem, budget, max(int(cap - used), 0))
            if c <= 0:
                continue
            chunks.append((i, c))
            budget -= c
            used += c
        # 3. admit waiting requests
        blocked = ""
        while waiting and budget > 0:
            if len(running) >= limits.max_num_seqs:
                blocked = "max-num-seqs"
                break
            i = waiting[0]
            if cached[i]:
                # prefix-cache hit on those of its freed blocks not yet reallocated (full 16-token
                # blocks; at least the last token is recomputed)
                hit = cached_len[i] - max(allocated - evict_mark[i], 0.0)
                # (vLLM caps the hit at num_tokens - 1 before counting whole blocks: get_computed_blocks)
                hit = min(int(max(hit, 0.0)), prefill_target[i] - 1) // 16 * 16
                if used + hit + min(prefill_target[i] - hit, budget) > cap:
                    blocked = "kv-capacity"
                    break
                cached[i] = False
                prefill_done[i] = hit
                prefill_kv += hit
                used += hit
            elif limits.prefix_caching and warm and prefill_done[i] == 0 and generated[i] == 0:
                hit = min(shared_prefix, prefill_target[i] - 1) // 16 * 16
                if used + hit + min(prefill_target[i] - hit, budget) > cap:
                    blocked = "kv-capacity"
                    break
                prefill_done[i] = hit
                prefill_kv += hit
                used += hit
            rem = prefill_target[i] - prefill_done[i]
            if not limits.chunked_prefill and rem > budget:
                blocked = "batched-tokens"
                break
            c = min(rem, budget)
            if used + c > cap:
                blocked = "kv-capacity"
                break
            waiting.popleft()
            running[i] = "prefill"
            prefilling[i] = None
            chunks.append((i, c))
            budget -= c
            used += c
        if waiting and not blocked and budget <= 0:
            blocked = "batched-tokens"
        for i, c in chunks:
            prefill_tokens += c
            pairs += c * (prefill_done[i] + c / 2.0)
        if decoders == 0 and prefill_tokens == 0:
            if waiting and not running:
                # one prompt longer than the whole cache: vLLM rejects it; drop it as failed
                i = waiting.popleft()
                failed[i] = True
                completed += 1
                continue
            if not pending:
                break
            t = step_began = max(t, pending[0][0])  # an idle engine schedules what arrives
            continue

        step_decodes = decoders if (limits.mixed_batches or not chunks) else 0
        allocated += step_decodes + prefill_tokens
        seconds, compute_bound = step_fn(step_decodes, ctx_sum if step_decodes else 0.0, prefill_tokens, pairs)
        seconds = max(seconds, 1e-7)
        run_time_weighted += len(running) * seconds
        kv_frac = min(used / cap, 1.0)
        kv_time_weighted += kv_frac * seconds
        peak_kv = max(peak_kv, kv_frac)
        max_running = max(max_running, len(running))
        if compute_bound:
            compute_time += seconds
        if blocked:
            limited[blocked] += seconds
        step_began = t
        t += seconds
        step += 1
        produced = step_decodes
        # decodes: every decoding request made one token
        ctx_sum += step_decodes
        if step_decodes:
            dstep += 1
        if step_decodes:
            finish_decodes(finish_at.pop(dstep, ()))
        # prefill chunks: a finished prompt yields its next token now
        for i, c in chunks:
            prefill_done[i] += c
            if shared_prefix and not warm and prefill_done[i] >= min(shared_prefix, input_lens[i]):
                warm = True  # its blocks are cached from now on
            if prefill_done[i] < prefill_target[i]:
                prefill_kv += c
                continue
            prefill_kv -= prefill_done[i] - c
            prefilling.pop(i, None)
            produced += 1
            if first_token_t[i] < 0:
                first_token_t[i] = t
            generated[i] += 1
            remaining = output_lens[i] - generated[i]
            if remaining <= 0:
                finish(i)
                continue
            running[i] = "decode"
            decoders += 1
            decode_start_step[i] = dstep
            # tokens in the cache: the prompt (+ earlier outputs); the new token is written next step
            decode_start_ctx[i] = prefill_target[i]
            ctx_sum += decode_start_ctx[i]
            finish_at.setdefault(dstep + remaining, []).append((i, epoch[i]))
        out_total += produced
        cum_t.append(t)
        cum_out.append(out_total)

    duration = max((ft for ft in finish_t if ft >= 0), default=t)
    ttft = [first_token_t[i] - arrival_t[i] for i in range(n) if first_token_t[i] >= 0]
    total_time = max(t, 1e-12)
    return SimResult(
        duration_s=duration,
        completed=sum(1 for ft in finish_t if ft >= 0),
        input_tokens=sum(x for x, f, ft in zip(input_lens, failed, finish_t, strict=True) if ft >= 0 and not f),
        output_tokens=sum(x for x, f, ft in zip(output_lens, failed, finish_t, strict=True) if ft >= 0 and not f),
        ttft_s=ttft,
        tpot_s=done_tpot,
        e2e_s=done_e2e,
        itl_mean_s=gaps_sum / gaps_n if gaps_n else float("nan"),
        preemptions=preemptions,
        max_running=max_running,
        mean_running=run_time_weighted / total_time,
        peak_kv_usage=peak_kv,
        mean_kv_usage=kv_time_weighted / total_time,
        compute_bound_share=compute_time / total_time,
        limited_by={k: v / total_time for k, v in limited.items()},
        steps=step,
        _cum_t=cum_t,
        _cum_out=cum_out,
        finish_times=sorted(ft for ft in finish_t if ft >= 0),
        arrival_by_request=[arrival_t[i] if i < next_to_send else math.nan for i in range(n)],
        ttft_by_request=[first_token_t[i] - arrival_t[i] if first_token_t[i] >= 0 else math.nan for i in range(n)],
        tpot_by_request=[(finish_t[i] - first_token_t[i]) / (output_lens[i] - 1)
                         if finish_t[i] >= 0 and output_lens[i] > 1 else math.nan for i in range(n)],
        e2e_by_request=[finish_t[i] - arrival_t[i] if finish_t[i] >= 0 else math.nan for i in range(n)],
    )


__all__ = ["SchedulerLimits", "SimResult", "StepFn", "arrival_times", "percentile", "simulate"]
