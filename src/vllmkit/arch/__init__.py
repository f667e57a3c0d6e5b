"""config.json -> ModelArch."""

from __future__ import annotations

from vllmkit.arch.model import (
    LayerKind,
    MambaFacts,
    MLAFacts,
    ModelArch,
    MoEFacts,
    QuantFacts,
)
from vllmkit.arch.reader import read_arch

__all__ = ["LayerKind", "MLAFacts", "MambaFacts", "MoEFacts", "ModelArch", "QuantFacts", "read_arch"]
