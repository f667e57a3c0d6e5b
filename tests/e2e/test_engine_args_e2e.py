"""The planner's reading of vLLM's engine arguments against the real vLLM CPU build (0.32.0).

vLLM resolves them in `EngineArgs.create_engine_config` without loading weights, so each case runs in
about a second after one import (~10 s) in a subprocess: scheduler defaults (max_num_seqs capped at
max_num_batched_tokens when not given; both given with fewer tokens than sequences is refused), and
the KV-cache dtypes and speculative methods vllmkit accepts are ones vLLM accepts too.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.clirun import invoke

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("require_vllm")]

_ORACLE = r"""
import json, sys, typing
from vllm.engine.arg_utils import EngineArgs
from vllm.usage.usage_lib import UsageContext
from vllm.config.cache import CacheDType
from vllm.config.speculative import SpeculativeMethod

def flat(t):
    out = []
    for a in typing.get_args(t):
        out.extend(flat(a) if typing.get_args(a) else [a])
    return out

cases = []
for kw in json.loads(sys.argv[2]):
    try:
        c = EngineArgs(model=sys.argv[1], **kw).create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
        cases.append({"max_num_seqs": c.scheduler_config.max_num_seqs,
                      "max_num_batched_tokens": c.scheduler_config.max_num_batched_tokens})
    except Exception as exc:
        cases.append({"error": str(exc)})
try:
    from vllm.utils.argparse_utils import FlexibleArgumentParser
except ImportError:
    from vllm.utils import FlexibleArgumentParser
parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
async_flags = [parser.parse_args(a).async_scheduling for a in ([], ["--async-scheduling"], ["--no-async-scheduling"])]
doctor_flags = json.loads(sys.argv[3])
print("ORACLE " + json.dumps({"cases": cases, "kv_dtypes": flat(CacheDType), "spec_methods": flat(SpeculativeMethod),
                              "async_flags": async_flags,
                              "doctor_flags": {" ".join(f): vars(parser.parse_args(f))[f[0][2:].replace("-", "_")]
                                               for f in doctor_flags}}))
"""

CASES = [{}, {"max_num_batched_tokens": 64}, {"max_num_seqs": 32}, {"max_num_batched_tokens": 100, "max_num_seqs": 200},
         {"max_num_batched_tokens": 4096, "max_num_seqs": 8}]
# flags `doctor --log` suggests that the plan never emits: each must parse in the real vLLM to the value given
DOCTOR_FLAGS = [["--moe-backend", "marlin"]]


@pytest.fixture(scope="module")
def oracle(tiny_model_factory):
    model = tiny_model_factory("llama")
    proc = subprocess.run([sys.executable, "-c", _ORACLE, str(model), json.dumps(CASES), json.dumps(DOCTOR_FLAGS)],
                          capture_output=True, text=True, timeout=600)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("ORACLE ")), None)
    assert line is not None, proc.stderr[-3000:]
    return model, json.loads(line[len("ORACLE "):])


def _flags(kw: dict) -> list[str]:
    return [x for k, v in kw.items() for x in ("--" + k.replace("_", "-"), str(v))]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_scheduler_limits_match_vllm(oracle, index: int) -> None:
    model, facts = oracle
    kw, truth = CASES[index], facts["cases"][index]
    r = invoke(["plan", str(model), "--device", "cpu", "--json", *_flags(kw)], env={"VLLMKIT_NO_CALIBRATION": "1"})
    doc = json.loads(r.stdout)
    if "error" in truth:
        assert "must be greater than or equal to max_num_seqs" in truth["error"]
        assert r.exit_code == 2 and doc["errors"][0]["code"] == "usage"
        assert "below max_num_seqs" in doc["errors"][0]["message"]
        return
    assert r.exit_code == 0, r.stderr
    settings = doc["data"]["settings"]
    assert (settings["max_num_seqs"], settings["max_num_batched_tokens"]) == \
        (truth["max_num_seqs"], truth["max_num_batched_tokens"])


def test_accepted_kv_dtypes_and_speculative_methods_are_vllms(oracle) -> None:
    from vllmkit.cli._features import SPECULATIVE_METHODS
    from vllmkit.cli.options import KV_CACHE_DTYPES, check_kv_cache_dtype
    from vllmkit.errors import UsageError

    _, facts = oracle
    assert set(KV_CACHE_DTYPES) <= set(facts["kv_dtypes"])
    assert set(SPECULATIVE_METHODS) <= set(facts["spec_methods"])
    # what vLLM accepts beyond them is refused as "cannot size yet", never as unknown
    for dtype in set(facts["kv_dtypes"]) - set(KV_CACHE_DTYPES):
        with pytest.raises(UsageError, match="cannot size"):
            check_kv_cache_dtype(dtype)


def test_async_scheduling_flags_are_vllms(oracle) -> None:
    """The serve line's --async-scheduling / --no-async-scheduling parse in the real vLLM as on / off, and
    leaving both out leaves vLLM's default (None: on where the release can run it)."""
    _, facts = oracle
    assert facts["async_flags"] == [None, True, False]
    for flag in ("--async-scheduling", "--no-async-scheduling"):
        r = invoke(["plan", "Qwen/Qwen3-8B", "--gpu", "h100", "--source", "catalog", flag, "--json"],
                   env={"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1"})
        assert r.exit_code == 0 and flag in json.loads(r.stdout)["data"]["serve_command"], r.stderr


def test_doctor_only_flags_are_vllms(oracle) -> None:
    """doctor's fix for FlashInfer's b12x MoE workspace (tests/unit/doctor: the public vllm#49476 log) names a MoE
    backend the real vLLM parser accepts, with the value doctor gives."""
    _, facts = oracle
    assert facts["doctor_flags"] == {" ".join(f): f[1] for f in DOCTOR_FLAGS}
