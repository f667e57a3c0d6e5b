"""Model specs, source choice and settings read from an env mapping (no process env, no patching)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vllmkit.errors import ModelSourceError, UsageError
from vllmkit.hub import cache
from vllmkit.hub.base import ModelMetadata
from vllmkit.hub.resolve import _choose_hub, parse_spec, resolve_model
from vllmkit.hub.settings import HubSettings

SPEC_CASES = [
    ("Qwen/Qwen3-8B", None, ("hub", "Qwen/Qwen3-8B", None, None)),
    ("hf://Qwen/Qwen3-8B@v1.0", None, ("hub", "Qwen/Qwen3-8B", "hf", "v1.0")),
    ("huggingface://Qwen/Qwen3-8B", "main", ("hub", "Qwen/Qwen3-8B", "hf", "main")),
    ("ms://Qwen/Qwen3-8B", None, ("hub", "Qwen/Qwen3-8B", "modelscope", None)),
    ("modelscope://Qwen/Qwen3-8B@master", "master", ("hub", "Qwen/Qwen3-8B", "modelscope", "master")),
    ("Qwen/Qwen3-8B@refs/pr/1", None, ("hub", "Qwen/Qwen3-8B", None, "refs/pr/1")),
    ("gpt2", None, ("hub", "gpt2", None, None)),
    ("/models/qwen", None, ("path", "/models/qwen", None, None)),
    ("./qwen", None, ("path", "./qwen", None, None)),
    ("~/models/qwen", None, ("path", "~/models/qwen", None, None)),
    ("file:///models/qwen", None, ("path", "/models/qwen", None, None)),
]


@pytest.mark.parametrize(("spec", "revision", "expected"), SPEC_CASES)
def test_parse_spec(spec: str, revision: str | None, expected: tuple) -> None:
    parsed = parse_spec(spec, revision)
    assert (parsed.kind, parsed.id, parsed.hub, parsed.revision) == expected


def test_existing_relative_folder_is_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "org" / "model").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert parse_spec("org/model").kind == "path"


@pytest.mark.parametrize(
    ("spec", "revision", "error"),
    [
        ("", None, UsageError),
        ("s3://bucket/model", None, UsageError),
        ("Qwen/Qwen3-8B@v1", "v2", UsageError),
        ("Qwen/Qwen3-8B@", None, UsageError),
        ("not a/model id", None, ModelSourceError),
        ("a/b/c", None, ModelSourceError),
        ("org/../etc", None, ModelSourceError),
    ],
)
def test_bad_specs(spec: str, revision: str | None, error: type) -> None:
    with pytest.raises(error):
        parse_spec(spec, revision)


@pytest.mark.parametrize(
    ("value", "modelscope"),
    # vllm/envs.py 0.32: .strip().lower() in ("1", "true")
    [("1", True), ("true", True), ("True", True), (" TRUE ", True), ("0", False), ("yes", False), ("", False)],
)
def test_vllm_use_modelscope(value: str, modelscope: bool) -> None:
    settings = HubSettings.from_env({"VLLM_USE_MODELSCOPE": value, "HOME": "/nonexistent"})
    assert settings.use_modelscope is modelscope
    assert _choose_hub(parse_spec("Qwen/Qwen3-8B"), "auto", settings) == ("modelscope" if modelscope else "hf")


def test_prefix_wins_over_env_and_conflicts_with_flag() -> None:
    settings = HubSettings.from_env({"VLLM_USE_MODELSCOPE": "1", "HOME": "/nonexistent"})
    assert _choose_hub(parse_spec("hf://a/b"), "auto", settings) == "hf"
    with pytest.raises(UsageError):
        _choose_hub(parse_spec("hf://a/b"), "modelscope", settings)


def test_unknown_source() -> None:
    with pytest.raises(UsageError):
        resolve_model("a/b", source="s3", env={"HOME": "/nonexistent"})


def test_settings_defaults_and_overrides(tmp_path: Path) -> None:
    home = tmp_path / "home"
    s = HubSettings.from_env({"HOME": str(home)})
    assert s.hf_endpoint == "https://huggingface.co"
    assert s.hf_home == home / ".cache" / "huggingface"
    assert s.hf_hub_cache == home / ".cache" / "huggingface" / "hub"
    assert s.cache_dir == home / ".cache" / "vllmkit"
    assert s.ms_endpoint == "https://www.modelscope.cn"
    assert s.hf_token is None and s.hf_offline is False

    s = HubSettings.from_env({
        "HOME": str(home), "XDG_CACHE_HOME": str(tmp_path / "xdg"), "HF_ENDPOINT": "https://hf-mirror.com/",
        "HF_HUB_OFFLINE": "1", "MODELSCOPE_DOMAIN": "modelscope.ai", "VLLMKIT_HUB_TIMEOUT": "3.5",
        "VLLMKIT_HUB_RETRIES": "0",
    })
    assert s.hf_endpoint == "https://hf-mirror.com"
    assert s.hf_offline is True
    assert s.cache_dir == tmp_path / "xdg" / "vllmkit"
    assert s.hf_home == tmp_path / "xdg" / "huggingface"
    assert s.ms_endpoint == "https://modelscope.ai"
    assert (s.timeout_s, s.retries) == (3.5, 0)
    assert HubSettings.from_env({"HOME": str(home), "VLLMKIT_CACHE_DIR": "/x/y"}).cache_dir == Path("/x/y")


def test_hf_token_precedence(tmp_path: Path) -> None:
    hf_home = tmp_path / "hf"
    hf_home.mkdir()
    (hf_home / "token").write_text("hf_from_file\n")
    base = {"HOME": str(tmp_path), "HF_HOME": str(hf_home)}
    assert HubSettings.from_env(base).hf_token == "hf_from_file"
    assert HubSettings.from_env(base).hf_token_origin == str(hf_home / "token")
    s = HubSettings.from_env({**base, "HUGGING_FACE_HUB_TOKEN": "hf_legacy"})
    assert (s.hf_token, s.hf_token_origin) == ("hf_legacy", "HUGGING_FACE_HUB_TOKEN")
    s = HubSettings.from_env({**base, "HUGGING_FACE_HUB_TOKEN": "hf_legacy", "HF_TOKEN": "hf_new"})
    assert (s.hf_token, s.hf_token_origin) == ("hf_new", "HF_TOKEN")


def test_catalog_source_and_local_source(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    meta = resolve_model("Qwen/Qwen3-8B", source="catalog", env=env)
    assert meta.source == "catalog"
    with pytest.raises(ModelSourceError):
        resolve_model("nobody/nothing-here", source="catalog", env=env)
    with pytest.raises(ModelSourceError, match="no such folder"):
        resolve_model(str(tmp_path / "missing"), source="local", env=env)
    with pytest.raises(UsageError):
        resolve_model(str(tmp_path), source="hf", env=env)


def test_cache_entries_are_atomic_and_checked(tmp_path: Path) -> None:
    meta = ModelMetadata(id="a/b", source="hf", config={"x": 1})
    path = cache.store_metadata(tmp_path, "hf", "a/b", None, meta, endpoint="https://e")
    assert path is not None and path.is_file()
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left behind
    assert cache.load_metadata(tmp_path, "hf", "a/b", None, endpoint="https://e").config == {"x": 1}
    # another endpoint (a mirror) is a miss
    assert cache.load_metadata(tmp_path, "hf", "a/b", None, endpoint="https://mirror") is None
    # revisions are separate entries; odd revision names stay inside the cache folder
    assert cache.load_metadata(tmp_path, "hf", "a/b", "refs/pr/1", endpoint="https://e") is None
    assert cache.entry_path(tmp_path, "hf", "a/b", "../../x").parent == path.parent
    # a damaged entry is a miss, not a crash
    path.write_text("{truncated")
    assert cache.load_metadata(tmp_path, "hf", "a/b", None, endpoint="https://e") is None
    path.write_text(json.dumps({"vllmkit_cache_version": 1, "endpoint": "https://e", "metadata": {"id": 3}}))
    assert cache.load_metadata(tmp_path, "hf", "a/b", None, endpoint="https://e") is None


def test_failed_write_leaves_nothing(tmp_path: Path) -> None:
    class Boom:
        pass

    with pytest.raises(TypeError):
        cache.atomic_write_json(tmp_path / "x.json", {"bad": Boom()})
    assert list(tmp_path.iterdir()) == []
