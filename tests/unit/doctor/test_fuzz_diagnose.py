"""Random, mangled and truncated logs never crash the log reader or the diagnoses."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.logs.corpus import all_logs, load
from vllmkit.doctor.diagnose import LogReport, diagnose_log
from vllmkit.doctor.metrics import parse_prometheus, triage
from vllmkit.logs import LogFacts, parse_log

CORPUS = {name: load(name) for name in all_logs()}
ALL_LINES = [line for text in CORPUS.values() for line in text.splitlines()]

# fragments of the messages the patterns look for, to build near-miss lines
FRAGMENTS = [
    "Model loading took ", "Available KV cache memory: ", " GiB", "GPU KV cache size: ", " tokens",
    "Maximum concurrency for ", " tokens per request: ", "x", "To serve at least one request with the model's max seq len (",
    "), (", " GiB KV cache is needed, which is larger than the available KV cache memory (", "). Based on the available "
    "memory, the estimated maximum model length is ", "Total number of attention heads (", ") must be divisible by tensor "
    "parallel size (", "Free memory on device (", "/", ") on startup is less than desired GPU memory utilization (", ", ",
    "CUDA out of memory. Tried to allocate ", "non-default args: {", "'max_model_len': ", "}", "Initializing a V1 LLM engine (v",
    ") with config: ", "model=", "max_seq_len=", "enforce_eager=", "(EngineCore_DP0 pid=", ") ", "INFO 01-01 00:00:00 [x.py:1] ",
    "\x1b[32m", "\x1b[0m", "-1", "nan", "1e309", "99999999999999999999999", "0.", "[Errno 98] error while attempting to bind on "
    "address ('", "', ", "Default vLLM sampling parameters have been overridden by the model's `generation_config.json`: `{",
    "User-specified max_model_len (", ") is greater than the derived max_model_len (", "=", " or model_max_length=",
    " in model's config.json)", "The quantization method ", " is not supported for the current GPU. Minimum capability: ",
    ". Current capability: ", 'File "x.py", line 1, in capture_model', "torch.OutOfMemoryError", "\n", "\r", "\t",
]
NUMBERS = st.one_of(st.integers(-(10**12), 10**12).map(str), st.floats(allow_nan=True, allow_infinity=True).map(str))
LINE = st.lists(st.one_of(st.sampled_from(FRAGMENTS), NUMBERS, st.text(max_size=20)), max_size=25).map("".join)


def _check(text: str) -> None:
    facts = parse_log(text)
    assert isinstance(facts, LogFacts)
    report = diagnose_log(text)
    assert isinstance(report, LogReport)
    report.model_dump_json()  # serialisable, no NaN surprises in the envelope


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=3000))
def test_random_text(text: str) -> None:
    _check(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(LINE, max_size=40).map("\n".join))
def test_near_miss_lines(text: str) -> None:
    _check(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(CORPUS)), st.integers(min_value=0), st.integers(min_value=0))
def test_truncated_corpus(name: str, start: int, length: int) -> None:
    text = CORPUS[name]
    a = start % (len(text) + 1)
    _check(text[a : a + length % (len(text) + 1)])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(ALL_LINES), max_size=60), st.integers(min_value=0, max_value=400))
def test_shuffled_real_lines(lines: list[str], cut: int) -> None:
    text = "\n".join(lines)
    _check(text)
    _check(text[:cut])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=2000))
def test_metrics_parser_never_crashes(text: str) -> None:
    metrics = parse_prometheus(text)
    assert isinstance(metrics, dict)
    triage("http://x", text).model_dump_json()
