"""Named workloads (`--workload`): input / output lengths in tokens (pure, no imports: the CLI reads
these for its help text without loading the performance model)."""

from __future__ import annotations

# (input tokens, output tokens), chosen to match common serving shapes: a chat turn with some history,
# retrieval-augmented generation (long stuffed prompt, short answer), document summarisation (long in,
# medium out), code generation (medium prompt, long completion).
WORKLOAD_PRESETS: dict[str, tuple[int, int]] = {
    "chat": (1024, 256),
    "rag": (4096, 256),
    "summarize": (8192, 512),
    "code": (2048, 1024),
}

__all__ = ["WORKLOAD_PRESETS"]
