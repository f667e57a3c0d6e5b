"""The bottleneck verdict (doctor's layer-2 rules) and the workload builders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllmkit.bench.models import ServerLoad
from vllmkit.bench.verdict import bottleneck
from vllmkit.bench.workload import file_prompts, random_prompts, sharegpt_prompts
from vllmkit.errors import UsageError


@pytest.mark.parametrize(
    ("load", "name"),
    [
        (ServerLoad(scrapes=5, peak_kv_usage=0.5, preemptions=3, max_running=30, max_waiting=4), "kv-cache-preemption"),
        (ServerLoad(scrapes=5, peak_kv_usage=0.95, preemptions=0, max_running=30, max_waiting=4), "kv-cache-full"),
        # waiting while the KV cache is under half used: the scheduler cap (max_num_seqs), doctor's "waiting"
        (ServerLoad(scrapes=5, peak_kv_usage=0.2, preemptions=0, max_running=8, max_waiting=24), "scheduler-limit"),
        (ServerLoad(scrapes=5, peak_kv_usage=0.7, preemptions=0, max_running=30, max_waiting=2), "saturated"),
        (ServerLoad(scrapes=5, peak_kv_usage=0.1, preemptions=0, max_running=8, max_waiting=0), "compute"),
        (ServerLoad(scrapes=0), "unknown"),
        (ServerLoad(scrapes=2, peak_kv_usage=0.0, preemptions=0, max_running=0, max_waiting=0), "unknown"),
    ],
)
def test_bottleneck(load: ServerLoad, name: str) -> None:
    verdict = bottleneck(load, offered=32)
    assert verdict.name == name
    if name in ("kv-cache-preemption", "kv-cache-full", "scheduler-limit"):
        assert verdict.fix  # doctor's fix travels with the verdict


def test_random_prompts_exact_lengths_and_shared_prefix() -> None:
    vocab = list(range(10, 60))
    prompts = random_prompts(vocab, 5, input_len=20, output_len=7, prefix_len=6, seed=3)
    assert all(len(p.prompt) == 26 and p.input_len == 26 and p.output_len == 7 for p in prompts)
    assert len({tuple(p.prompt[:6]) for p in prompts}) == 1  # one shared prefix
    assert len({tuple(p.prompt[6:]) for p in prompts}) == 5  # different bodies
    assert all(t in vocab for p in prompts for t in p.prompt)
    assert random_prompts(vocab, 5, input_len=20, output_len=7, seed=3) == random_prompts(vocab, 5, input_len=20,
                                                                                       output_len=7, seed=3)


def test_sharegpt_prompts(tmp_path: Path) -> None:
    data = [
        {"id": "a", "conversations": [{"from": "human", "value": "one two three"}, {"from": "gpt", "value": "four five"}]},
        {"id": "b", "conversations": [{"from": "human", "value": "only a question"}]},
        {"id": "c", "conversations": [{"from": "human", "value": "six"}, {"from": "gpt", "value": "seven eight nine ten"}]},
    ]
    path = tmp_path / "sharegpt.json"
    path.write_text(json.dumps(data))
    prompts = sharegpt_prompts(path, 4, output_len=None, count_tokens=lambda t: len(t.split()))
    by_prompt = {p.prompt: p for p in prompts}
    assert set(by_prompt) == {"one two three", "six"}  # the one-turn item is skipped
    assert by_prompt["one two three"].output_len == 2 and by_prompt["six"].output_len == 4
    assert by_prompt["one two three"].input_len == 3
    with pytest.raises(UsageError, match="--output-len"):
        sharegpt_prompts(path, 2, output_len=None, count_tokens=None)
    fixed = sharegpt_prompts(path, 2, output_len=9, count_tokens=None)
    assert all(p.output_len == 9 and p.input_len is None for p in fixed)
    path.write_text("{not json")
    with pytest.raises(UsageError, match="not JSON"):
        sharegpt_prompts(path, 2, output_len=9, count_tokens=None)


def test_prompts_file(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text('{"prompt": "hello there", "output_len": 5}\nplain line prompt\n\n')
    prompts = file_prompts(path, 4, output_len=3)
    assert sorted({(p.prompt, p.output_len) for p in prompts}) == [("hello there", 5), ("plain line prompt", 3)]
    path.write_text('{"text": "no prompt key"}\n')
    with pytest.raises(UsageError, match="line 1"):
        file_prompts(path, 1, output_len=3)
