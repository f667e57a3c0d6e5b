"""A hub (or mirror) that misbehaves on purpose: what it can make the client read, wait for and print.

Through the real clients (huggingface_hub's HTTP session for Hugging Face; for ModelScope the
modelscope_hub client lists files and our requests session reads them) against
tests/integration/hubserver.py. The ModelScope listing goes through its client, which applies its own
retries, timeouts and body handling: for it the tests check the bounds (bytes read, time, exit code),
not our messages. Limits under test (docs/limits.md): error bodies are read up
to 64 KiB, JSON answers up to 32 MiB, one request must finish within VLLMKIT_HUB_DEADLINE seconds
(a trickling hub is not retried), and nothing a hub sends reaches the terminal unescaped.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.clirun import invoke
from tests.integration.hubserver import HubServer
from vllmkit.errors import ModelSourceError
from vllmkit.hub.resolve import resolve_model

MIB = 1 << 20
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _written(hub: HubServer, repo: str) -> list[int]:
    return [r.body_bytes for r in hub.requests(repo)]


@pytest.mark.parametrize("model", ["acme/huge-error", "ms://acme/huge-error"])
def test_a_huge_error_page_is_read_only_up_to_the_cap(hub: HubServer, hub_env: dict[str, str], model: str) -> None:
    """A 500 with a 300 MiB body, retried: before, the client read the whole body on every try
    (900 MB); now the status is enough (ModelScope) or 64 KiB of it (Hugging Face)."""
    with pytest.raises(ModelSourceError) as err:
        resolve_model(model, env=hub_env)
    assert err.value.code == "hub-server-error"
    written = _written(hub, "acme/huge-error")
    # first try + VLLMKIT_HUB_RETRIES=2 (the ModelScope client retries by itself: at most one more)
    assert len(written) == 3 if model.startswith("acme/") else len(written) <= 4
    # what the server managed to write before the client hung up: the cap plus what the kernel's
    # socket buffers took (a few MiB on loopback), never the 300 MiB body
    assert sum(written) < 4 * 16 * MIB, written


@pytest.mark.parametrize("model", ["acme/trickle", "ms://acme/trickle"])
def test_a_trickling_hub_hits_the_total_deadline(hub: HubServer, hub_env: dict[str, str], model: str) -> None:
    """One byte every 0.5 s never trips a 2 s read timeout; the 3 s deadline ends it, once (no retry)."""
    env = {**hub_env, "VLLMKIT_HUB_DEADLINE": "3"}
    started = time.monotonic()
    with pytest.raises(ModelSourceError) as err:
        resolve_model(model, env=env)
    took = time.monotonic() - started
    assert err.value.code == "hub-timeout"
    assert "too slowly" in err.value.message and "VLLMKIT_HUB_DEADLINE" in (err.value.hint or "")
    # deadline + at most one read timeout (2 s) of overshoot; 4096 bytes at 2 B/s would be 34 min.
    # The ModelScope client retries a listing by itself: one deadline per try (VLLMKIT_HUB_RETRIES=2).
    tries = 1 if model.startswith("acme/") else 3
    assert took < 3 * tries + 2 + 1.5, took
    if model.startswith("acme/"):
        assert len(hub.requests("acme/trickle")) == 1


@pytest.mark.parametrize("model", ["acme/huge-json", "ms://acme/huge-json"])
def test_an_oversized_listing_is_refused(hub: HubServer, hub_env: dict[str, str], model: str) -> None:
    with pytest.raises(ModelSourceError) as err:
        resolve_model(model, env=hub_env)
    assert err.value.code == "bad-response"
    if model.startswith("acme/"):
        assert "larger than 32 MiB" in err.value.message
        assert max(_written(hub, "acme/huge-json")) < 40 * MIB
    # the ModelScope client reads a listing in full before parsing it (its own limit, not ours); the
    # request deadline still bounds how long that takes


@pytest.mark.parametrize("model", ["acme/deep-json", "ms://acme/deep-json"])
def test_deeply_nested_json_is_a_bad_response_not_a_crash(hub: HubServer, hub_env: dict[str, str],
                                                           model: str) -> None:
    with pytest.raises(ModelSourceError) as err:
        resolve_model(model, env=hub_env)
    assert err.value.code == "bad-response"


def test_hub_text_with_terminal_escapes_is_shown_escaped(hub: HubServer, hub_env: dict[str, str]) -> None:
    res = invoke(["plan", "ms://acme/hostile", "--gpu", "h100"], env=hub_env)
    assert res.exit_code == 4, res.output
    assert not CONTROL.search(res.stderr.replace("\n", "")), repr(res.stderr)


def test_a_hostile_config_is_refused_with_the_field_named_and_nothing_raw_printed(
        hub: HubServer, hub_env: dict[str, str]) -> None:
    res = invoke(["plan", "acme/hostile-config", "--gpu", "h100"], env=hub_env)
    assert res.exit_code == 4, res.output
    assert "num_hidden_layers" in res.stderr and "4,096" in res.stderr
    assert not CONTROL.search(res.stdout + res.stderr.replace("\n", ""))


def test_hostile_architecture_name_in_a_plan_is_escaped(hub: HubServer, hub_env: dict[str, str],
                                                         tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "m"
    folder.mkdir()
    config = {"architectures": ["\x1b]0;owned\x07[link=http://evil.example]Evil[/link]"], "model_type": "llama",
              "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 256,
              "max_position_embeddings": 2048}
    (folder / "config.json").write_text(json.dumps(config))
    res = invoke(["plan", str(folder), "--gpu", "h100"], env=hub_env)
    assert res.exit_code == 0, res.output
    out = res.stdout + res.stderr
    assert not CONTROL.search(out.replace("\n", ""))
    assert "\\x1b]0;owned\\x07" in out
    assert "[link=http://evil.example]" in res.stdout  # markup shown as text, not made a link
    assert "is not one vLLM 0.32.0 implements natively" in res.stderr + res.stdout
