"""Fixtures: one stand-in hub server per session, a clean request log and environment per test.

huggingface_hub reads HF_HUB_OFFLINE into its constants when first imported, and then refuses
every request for the rest of the process. It is imported here, at collection time, so that a test
elsewhere that sets HF_HUB_OFFLINE=1 in the environment (tests/cli) cannot freeze it offline for
these tests; vllmkit itself passes settings per call and reads HF_HUB_OFFLINE from its env mapping.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import huggingface_hub.constants as hf_constants
import pytest

from tests.integration.hubserver import HubServer
from tests.integration.repos import Repo, all_repos


@pytest.fixture(scope="session")
def repos() -> dict[str, Repo]:
    return all_repos()


@pytest.fixture(scope="session")
def hub_server(repos: dict[str, Repo]) -> Iterator[HubServer]:
    if hf_constants.HF_HUB_OFFLINE:
        pytest.skip("HF_HUB_OFFLINE was set when huggingface_hub was imported; the client refuses all requests")
    server = HubServer(repos).start()
    yield server
    server.stop()


@pytest.fixture
def hub(hub_server: HubServer) -> HubServer:
    hub_server.clear()
    return hub_server


@pytest.fixture
def hub_env(hub: HubServer, tmp_path: Path) -> dict[str, str]:
    """The whole environment a command sees: the stand-in hub for both HF and ModelScope,
    private caches, short timeouts and backoff so error tests stay fast."""
    return {
        "HOME": str(tmp_path / "home"),
        "HF_ENDPOINT": hub.url,
        "HF_HOME": str(tmp_path / "hf-home"),
        "MODELSCOPE_ENDPOINT": hub.url,
        "MODELSCOPE_CACHE": str(tmp_path / "ms-cache"),
        "VLLMKIT_CACHE_DIR": str(tmp_path / "vllmkit-cache"),
        "VLLMKIT_HUB_TIMEOUT": "2",
        "VLLMKIT_HUB_RETRIES": "2",
        "VLLMKIT_HUB_BACKOFF": "0.01",
    }
