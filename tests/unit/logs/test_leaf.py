"""The logs room is a leaf (stdlib, pydantic and the byte units only), and the rooms that read logs depend on it one
way: logs <- doctor, logs <- launch, logs <- calibration, logs <- plan; doctor imports neither plan
nor launch, launch does not import doctor."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[3] / "src" / "vllmkit"


def _imports(room: str) -> set[str]:
    found: set[str] = set()
    for path in (SRC / room).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
    return found


def test_logs_is_a_leaf() -> None:
    for module in _imports("logs"):
        top = module.split(".")[0]
        assert (top in sys.stdlib_module_names or top == "pydantic" or module.startswith("vllmkit.logs")
                or module == "vllmkit.units"), module


@pytest.mark.parametrize(("room", "forbidden"), [("doctor", ("vllmkit.plan", "vllmkit.launch")),
                                                 ("launch", ("vllmkit.doctor",))])
def test_one_way(room: str, forbidden: tuple[str, ...]) -> None:
    bad = sorted(m for m in _imports(room) if m.startswith(forbidden))
    assert not bad, bad
