"""Suite-wide setup.

huggingface_hub reads HF_HUB_OFFLINE / HF_ENDPOINT into module constants at import time. Import it
here, before any test sets those variables, so one test's offline environment cannot leak into the
hub client used by later tests (vllmkit passes endpoint/token/offline per command instead)."""

from __future__ import annotations

import os

for _var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
    os.environ.pop(_var, None)

import huggingface_hub  # noqa: E402,F401
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolated_user_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the developer's real vllmkit state, cache, data or config dirs."""
    root = tmp_path_factory.mktemp("user-dirs")
    for var, sub in (("VLLMKIT_DATA_DIR", "data"), ("VLLMKIT_STATE_DIR", "state"), ("VLLMKIT_CACHE_DIR", "cache"),
                     ("XDG_CONFIG_HOME", "config")):
        monkeypatch.setenv(var, str(root / sub))
