"""The bottleneck at a load point, in the words of doctor's live triage (doctor/metrics.py layer 2).

Peak KV usage, the increase of the preemption counter and the largest running/waiting queues seen
during the point are fed to `layer2`; its findings decide, in this order:
preemptions -> the KV cache is too small; KV usage >= 90 % -> concurrency at the KV ceiling;
requests waiting with KV to spare -> the scheduler limit (--max-num-seqs / --max-num-batched-tokens);
otherwise nothing waits: the server runs every request it gets (compute-bound at this concurrency).
"""

from __future__ import annotations

from vllmkit.bench.models import ServerLoad, Verdict
from vllmkit.doctor.metrics import MetricsSnapshot, layer2


def bottleneck(load: ServerLoad, *, offered: int | None) -> Verdict:
    if load.scrapes == 0 or (load.peak_kv_usage is None and load.max_running is None):
        return Verdict(name="unknown", detail="the server exports no vLLM /metrics")
    if not load.max_running and not load.max_waiting:
        # only the scrapes before the first and after the last request: nothing was seen running
        return Verdict(name="unknown", detail="the point was shorter than the /metrics sampling interval "
                       "(--metrics-interval): run more requests (--num-prompts) or longer (--duration)")
    snap = MetricsSnapshot(
        kv_cache_usage=load.peak_kv_usage,
        running=load.max_running,
        waiting=load.max_waiting,
        preemptions=load.preemptions,
    )
    findings = {f.name: f for f in layer2(snap)}
    pre, kv, waiting = findings.get("preemptions"), findings.get("kv-cache-usage"), findings.get("waiting")
    if pre is not None and pre.status == "warn":
        return Verdict(name="kv-cache-preemption", detail=pre.detail, fix=pre.fix)
    if kv is not None and kv.status == "warn":
        return Verdict(name="kv-cache-full", detail=kv.detail, fix=kv.fix)
    if waiting is not None and waiting.status == "warn":
        return Verdict(name="scheduler-limit", detail=waiting.detail, fix=waiting.fix)
    running = load.max_running or 0
    usage = "" if load.peak_kv_usage is None else f", peak KV usage {load.peak_kv_usage:.0%}"
    if (load.max_waiting or 0) > 0:
        return Verdict(name="saturated", detail=f"up to {load.max_waiting} waiting, {running} running{usage}",
                       fix="the server is at its limit at this load: more replicas or a larger GPU")
    detail = f"up to {running} running, none waiting{usage}"
    if offered is not None and running < offered:
        detail += f" (fewer than the {offered} offered: requests finish faster than they arrive)"
    return Verdict(name="compute", detail=detail)
