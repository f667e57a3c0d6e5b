"""The stand-in hub speaks the protocol of the official clients: the real huggingface_hub and
modelscope clients, used the way users use them, work against it unchanged. This keeps the fake
honest, so the tests of our sources are tests against the real protocol."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.hubserver import HubServer
from tests.integration.repos import COMMIT_MAIN, Repo


def test_huggingface_hub_download_and_metadata(hub: HubServer, repos: dict[str, Repo], tmp_path: Path) -> None:
    from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_download, hf_hub_url

    repo = repos["acme/tiny-llama"]
    shard = "model-00001-of-00002.safetensors"
    # LFS file: HEAD follows nothing, reads X-Linked-Size / X-Repo-Commit from the 302
    meta = get_hf_file_metadata(hf_hub_url("acme/tiny-llama", shard, endpoint=hub.url), token=False, endpoint=hub.url)
    assert (meta.size, meta.commit_hash) == (len(repo.files[shard]), COMMIT_MAIN)
    # full download through the redirect, into an HF cache layout
    path = hf_hub_download("acme/tiny-llama", shard, endpoint=hub.url, cache_dir=tmp_path, token=False)
    assert Path(path).read_bytes() == repo.files[shard]
    assert f"snapshots/{COMMIT_MAIN}/" in Path(path).as_posix()
    config = hf_hub_download("acme/tiny-llama", "config.json", endpoint=hub.url, cache_dir=tmp_path, token=False)
    assert Path(config).read_bytes() == repo.files["config.json"]
    info = HfApi(endpoint=hub.url, token=False).model_info("acme/tiny-llama", files_metadata=True)
    assert {s.rfilename: s.size for s in info.siblings or []} == {n: len(b) for n, b in repo.files.items()}
    found = [m.id for m in HfApi(endpoint=hub.url, token=False).list_models(search="tiny-llama", author="acme")]
    assert "acme/tiny-llama" in found and all(m.startswith("acme/") for m in found)


def test_huggingface_hub_error_classes(hub: HubServer, tmp_path: Path) -> None:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    api = HfApi(endpoint=hub.url, token=False)
    with pytest.raises(GatedRepoError):
        api.model_info("acme/gated")
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("acme/does-not-exist")
    with pytest.raises(RevisionNotFoundError):
        api.model_info("acme/tiny-llama", revision="nope")


def test_modelscope_client_lists_and_searches(hub: HubServer, repos: dict[str, Repo],
                                              monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    hub_mod = pytest.importorskip("modelscope_hub")
    # the client reads MODELSCOPE_ENDPOINT when its config is built (modelscope_hub/config.py)
    monkeypatch.setenv("MODELSCOPE_ENDPOINT", hub.url)
    monkeypatch.setenv("MODELSCOPE_API_TOKEN", "")
    monkeypatch.setenv("MODELSCOPE_CACHE", str(tmp_path / "ms"))
    api = hub_mod.HubApi(config=hub_mod.HubConfig())
    files = {f.path: f.size for f in api.list_repo_files("acme/tiny-llama", "model") if f.type != "tree"}
    assert files == {n: len(b) for n, b in repos["acme/tiny-llama"].files.items()}
    page = api.list_repos("model", search="tiny-llama", owner="acme", page_size=50)
    assert {r.repo_id for r in page.items} >= {"acme/tiny-llama", "acme/tiny-llama-FP8"}
    assert all(r.repo_id.startswith("acme/") for r in page.items)
