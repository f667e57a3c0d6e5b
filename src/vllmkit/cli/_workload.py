"""Workload options shared by `plan` and `capacity`, the measured-records input, and the text rendering
of a plan's performance section (issue 11)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import typer

from vllmkit.errors import UsageError
from vllmkit.estimate.workloads import WORKLOAD_PRESETS

if TYPE_CHECKING:
    from vllmkit.estimate.serving import Workload

# requests per second one plan (--request-rate) or capacity plan (--qps) sizes: beyond this the answer is a fleet no
# one deploys behind one endpoint (1e308 printed a 309-digit replica count, and overflowed plan's simulation)
MAX_REQUEST_RATE = 1e6

INPUT_LEN_OPTION = typer.Option(None, "--input-len", help="Prompt tokens per request (performance estimate).")
OUTPUT_LEN_OPTION = typer.Option(None, "--output-len", help="Generated tokens per request.")
CONCURRENCY_OPTION = typer.Option(None, "--concurrency", help="Closed loop: requests in flight at all times.")
REQUEST_RATE_OPTION = typer.Option(None, "--request-rate", help="Poisson arrivals, requests per second.")
SHARED_PREFIX_OPTION = typer.Option(
    None, "--shared-prefix-len",
    help="Leading prompt tokens every request shares (a system prompt): computed once, then prefix-cache hits.")
SPEC_ACCEPTANCE_OPTION = typer.Option(
    None, "--spec-acceptance",
    help="Share of draft tokens accepted under --speculative-config (0-1; vLLM logs it as 'Avg Draft acceptance "
         "rate'): models speculative decoding in the performance estimate.")
WORKLOAD_OPTION = typer.Option(
    None, "--workload",
    help="Preset lengths: " + ", ".join(f"{k} ({i} in / {o} out)" for k, (i, o) in WORKLOAD_PRESETS.items()) + ".",
)


def check_shared_prefix(shared_prefix_len: int | None, input_len: float | None) -> int:
    """--shared-prefix-len: 0 when not given; a usage error when negative or longer than the prompt."""
    if shared_prefix_len is None:
        return 0
    if shared_prefix_len < 0:
        raise UsageError("--shared-prefix-len must be 0 or more tokens", "e.g. --shared-prefix-len 512")
    if input_len is not None and shared_prefix_len > input_len:
        raise UsageError(f"--shared-prefix-len {shared_prefix_len} is longer than the prompt ({input_len:g} tokens)",
                         "give at most --input-len tokens of shared prefix")
    return int(shared_prefix_len)


def workload_lengths(input_len: int | None, output_len: int | None, preset: str | None, *,
                     example: str) -> tuple[int, int, str | None]:
    """Prompt and completion tokens per request from --input-len / --output-len and a --workload preset
    (an explicit length overrides the preset's); the preset's name, None without one."""
    name = None
    if preset is not None:
        key = preset.strip().lower()
        if key not in WORKLOAD_PRESETS:
            raise UsageError(f"unknown --workload {preset!r}", "use one of: " + ", ".join(WORKLOAD_PRESETS))
        name = key
        pin, pout = WORKLOAD_PRESETS[key]
        # `is None`, not `or`: an explicit --input-len 0 is refused below, not replaced by the preset's
        input_len = pin if input_len is None else input_len
        output_len = pout if output_len is None else output_len
    if input_len is None or output_len is None:
        raise UsageError("a workload needs --input-len and --output-len (or --workload chat|rag|summarize|code)",
                         f"e.g. {example}")
    for flag, value in (("--input-len", input_len), ("--output-len", output_len)):
        if value <= 0:
            raise UsageError(f"{flag} must be a positive integer", f"e.g. {flag} 512")
    return int(input_len), int(output_len), name


def workload_from_flags(*, input_len: int | None, output_len: int | None, concurrency: int | None,
                        request_rate: float | None, preset: str | None,
                        shared_prefix_len: int | None = None, spec_acceptance: float | None = None,
                        speculative: bool = False) -> Workload | None:
    """None when no workload flag was given (plan stays a memory plan). `speculative`: the plan has a
    --speculative-config (what --spec-acceptance applies to)."""
    if spec_acceptance is not None:
        if not math.isfinite(spec_acceptance) or not 0 <= spec_acceptance <= 1:
            raise UsageError("--spec-acceptance must be a share between 0 and 1 (vLLM's 'Avg Draft acceptance rate' "
                             "21.3% is 0.213)", "e.g. --spec-acceptance 0.6")
        if not speculative:
            raise UsageError("--spec-acceptance applies to speculative decoding, and the plan has none",
                             "add --speculative-config '{\"method\": \"ngram\", \"num_speculative_tokens\": 3, "
                             "\"prompt_lookup_max\": 4}' (or your drafter), or drop --spec-acceptance")
        if all(v is None for v in (input_len, output_len, concurrency, request_rate, preset)):
            raise UsageError("--spec-acceptance needs a workload", "e.g. --input-len 1024 --output-len 256 "
                             "--concurrency 32")
    if all(v is None for v in (input_len, output_len, concurrency, request_rate, preset, shared_prefix_len)):
        return None
    input_len, output_len, name = workload_lengths(input_len, output_len, preset,
                                                   example="--input-len 1024 --output-len 256 --concurrency 32")
    if concurrency is not None and request_rate is not None:
        raise UsageError("give --concurrency or --request-rate, not both",
                         "--concurrency N: N clients in a closed loop; --request-rate R: Poisson arrivals")
    if concurrency is not None and concurrency <= 0:
        raise UsageError("--concurrency must be a positive integer", "e.g. --concurrency 32")
    if request_rate is not None and (not math.isfinite(request_rate) or request_rate <= 0):
        raise UsageError("--request-rate must be a positive number of requests per second", "e.g. --request-rate 5")
    if request_rate is not None and request_rate > MAX_REQUEST_RATE:
        # 1e308 overflowed the simulation's request count (an OverflowError, exit 1)
        raise UsageError(f"--request-rate {request_rate:g} is more than one deployment takes (at most "
                         f"{MAX_REQUEST_RATE:,.0f} req/s)", "split the traffic and plan each part, or use "
                         "`vllmkit capacity --qps` to size replicas")
    if concurrency is None and request_rate is None:
        concurrency = 1
    shared = check_shared_prefix(shared_prefix_len, input_len)
    from vllmkit.estimate.serving import Workload

    return Workload(float(input_len), float(output_len), concurrency=concurrency, request_rate=request_rate, name=name,
                    shared_prefix=shared, spec_acceptance=spec_acceptance)


def perf_records(env: Mapping[str, str]) -> list[Any]:
    """What `vllmkit bench` measured (calibration/perfstore.py); none with VLLMKIT_NO_CALIBRATION=1."""
    if env.get("VLLMKIT_NO_CALIBRATION") == "1":
        return []
    from vllmkit.calibration.perfstore import load_perf_records, perf_store_path

    records, _ = load_perf_records(perf_store_path(env))
    return records


def perf_options(wl: Workload | None, env: Mapping[str, str], *, collect: bool = False) -> Any:
    """The planner's performance input: the workload, the measured records and the store's matcher
    (the planner reads no stores; it is handed both)."""
    from vllmkit.calibration.perfstore import match_measured
    from vllmkit.plan.performance import PerfOptions

    records = perf_records(env)
    return PerfOptions(workload=wl, records=records, match=match_measured if records else None, collect=collect)
