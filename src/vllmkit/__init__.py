"""vllmkit: plan, launch and diagnose vLLM deployments."""

from __future__ import annotations

__version__ = "0.1.0"
