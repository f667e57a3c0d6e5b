"""Suite-wide setup.

huggingface_hub reads HF_HUB_OFFLINE / HF_ENDPOINT into module constants at import time. Import it
here, before any test sets those variables, so one test's offline environment cannot leak into the
hub client used by later tests (vllmkit passes endpoint/token/offline per command instead)."""

from __future__ import annotations

import os

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.pop(_var, None)

import huggingface_hub  # noqa: E402,F401
