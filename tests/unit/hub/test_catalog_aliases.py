"""Renamed hub repositories resolve offline through the catalog's alias table."""

from __future__ import annotations

import pytest

from vllmkit.hub.catalog import ALIASES, find_entry
from vllmkit.plan.models import PlanRequest
from vllmkit.plan.service import build_plan


@pytest.mark.parametrize("old", sorted(ALIASES))
def test_every_alias_points_at_a_catalog_entry(old: str) -> None:
    entry = find_entry(old)
    assert entry is not None and entry.id == ALIASES[old]


def test_old_llama_31_id_plans_offline() -> None:
    plan = build_plan(PlanRequest(model="meta-llama/Meta-Llama-3.1-8B-Instruct", gpu="h100"),
                      {"HF_HUB_OFFLINE": "1", "VLLMKIT_NO_CALIBRATION": "1", "HF_HUB_CACHE": "/nonexistent"})
    assert plan.model.id == "meta-llama/Llama-3.1-8B-Instruct"
