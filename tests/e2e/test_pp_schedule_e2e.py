"""What a pipeline-parallel batch holds while the one before it is in flight: vLLM's own scheduler classes.

The step model (estimate/perf.py `pipeline_microbatches`, `ModelPerf.pp_serial`) runs a PP step as micro-batches of
different requests, one stage each, except under async scheduling on Model Runner V1, where it runs one batch of
every request through the stages in turn. That rests on how vLLM's scheduler fills its batch queue (PP keeps
`pipeline_parallel_size` batches in flight, `v1/engine/core.py step_with_batch_queue`): whether a request whose last
step has not come back can be scheduled into the next batch. Here the installed vLLM (the 0.32 CPU build) builds
its `Scheduler` / `AsyncScheduler` from a real engine config of a tiny model at PP 2, and each is asked for two
batches without the first one's output (nothing mocked; no model runs: scheduling needs none):

- the synchronous `Scheduler`: a request in flight has no token to compute, so the second batch takes other
  requests — micro-batches (with a 32-token budget, four 8-token prompts a batch: r0-r3, then r4-r7);
- `AsyncScheduler` on Model Runner V1: the token in flight counts as a placeholder (`num_output_placeholders`), so the
  second batch holds the same requests again, and they wait for the first batch's tokens: serial;
- `AsyncScheduler` on Model Runner V2: a request's decodes are spaced `pipeline_parallel_size` steps apart
  (`next_decode_eligible_step`), so the second batch takes other requests, the third the first ones again.
The CPU platform turns async scheduling off when it builds the config, so the test sets the scheduler config's flag
the way a GPU platform leaves it, and the runner choice (`use_v2_model_runner`, decided from the GPU and model) on the
scheduler it builds.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.e2e

PROMPT = list(range(1, 9))  # 8 tokens


def _scheduler(model_dir, *, asynchronous: bool, mrv2: bool):
    import torch
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext
    from vllm.v1.core.sched.async_scheduler import AsyncScheduler
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.structured_output import StructuredOutputManager

    config = EngineArgs(model=str(model_dir), pipeline_parallel_size=2, max_model_len=512, max_num_seqs=8,
                        max_num_batched_tokens=32, distributed_executor_backend="mp",
                        ).create_engine_config(UsageContext.OPENAI_API_SERVER)
    assert config.parallel_config.pipeline_parallel_size == 2
    config.scheduler_config.async_scheduling = asynchronous
    config.cache_config.num_gpu_blocks = 256
    spec = FullAttentionSpec(block_size=16, num_kv_heads=2, head_size=64, dtype=torch.float32)
    kv = KVCacheConfig(num_blocks=256, kv_cache_tensors=[],
                       kv_cache_groups=[KVCacheGroupSpec(["model.layers.0.self_attn.attn"], spec)])
    cls = AsyncScheduler if asynchronous else Scheduler
    sched = cls(vllm_config=config, kv_cache_config=kv, structured_output_manager=StructuredOutputManager(config),
                block_size=16)
    sched.use_v2_model_runner = mrv2
    return sched


@pytest.fixture(scope="module")
def model_dir(require_vllm, tiny_model_factory):
    return tiny_model_factory("llama")


@pytest.mark.parametrize(("asynchronous", "mrv2", "second", "third"), [
    (False, False, ["r4", "r5", "r6", "r7"], []),  # micro-batches; r0-r3 wait for their tokens
    (True, False, ["r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"], None),  # every request in every batch
    (True, True, ["r4", "r5", "r6", "r7"], ["r0", "r1", "r2", "r3"]),  # V2: decodes pp steps apart
])
def test_what_the_next_pp_batch_holds_while_one_is_in_flight(model_dir, asynchronous, mrv2, second, third) -> None:
    from vllm.sampling_params import SamplingParams
    from vllm.v1.request import Request

    sched = _scheduler(model_dir, asynchronous=asynchronous, mrv2=mrv2)
    for i in range(8):
        sched.add_request(Request(f"r{i}", list(PROMPT), SamplingParams(max_tokens=16, ignore_eos=True), None))
    first = sched.schedule()  # the 32-token budget: four 8-token prompts
    assert sorted(first.num_scheduled_tokens) == ["r0", "r1", "r2", "r3"]
    assert sorted(sched.schedule().num_scheduled_tokens) == second  # the first batch has not come back
    if third is not None:
        assert sorted(sched.schedule().num_scheduled_tokens) == third
