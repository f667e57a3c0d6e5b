"""Plans saved by `vllmkit plan --save` and read back by `vllmkit serve PLAN.yaml`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from vllmkit.dirs import write_text_atomic
from vllmkit.errors import ModelSourceError, UsageError
from vllmkit.plan.models import PlanRequest, PlanResult

PLAN_FILE_VERSION = 1


def save_plan(path: Path, req: PlanRequest, plan: PlanResult) -> None:
    """Write {request, plan} as YAML atomically (serve reads it back)."""
    doc: dict[str, Any] = {
        "vllmkit_plan_version": PLAN_FILE_VERSION,
        "request": req.model_dump(mode="json", exclude={"api_key"}),
        "plan": plan.model_dump(mode="json"),
    }
    try:
        write_text_atomic(path, yaml.safe_dump(doc, sort_keys=False))
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}", "choose a writable path for --save") from None


PLAN_SUFFIXES = (".yaml", ".yml", ".json")


def is_plan_file(target: str) -> bool:
    p = Path(target)
    return p.suffix.lower() in PLAN_SUFFIXES and p.is_file()


def load_plan_file(path: Path) -> tuple[PlanRequest, PlanResult]:
    """A plan saved by `vllmkit plan --save` ({request, plan} YAML; JSON is YAML too)."""
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read plan {path}: {exc.strerror}", "check the path") from None
    except yaml.YAMLError as exc:
        raise UsageError(
            f"{path} is not valid YAML: {exc}", "re-create it with `vllmkit plan ... --save`"
        ) from None
    if isinstance(doc, dict) and doc.get("command") == "plan" and isinstance(doc.get("data"), dict):
        raise UsageError(
            f"{path} is a `plan --json` envelope without the request",
            "save plans with `vllmkit plan MODEL ... --save plan.yaml`",
        )
    if not isinstance(doc, dict) or "plan" not in doc or "request" not in doc:
        raise UsageError(
            f"{path} is not a saved plan (needs 'request' and 'plan')", "use `vllmkit plan ... --save`"
        )
    try:
        return PlanRequest.model_validate(doc["request"]), PlanResult.model_validate(doc["plan"])
    except ValueError as exc:
        first = str(exc).splitlines()[0]
        raise UsageError(
            f"{path}: invalid plan ({first})", "re-create it with this vllmkit version"
        ) from None


def load_or_plan(target: str, given: dict[str, Any], make: Callable[[str], tuple[PlanRequest, PlanResult]]
                 ) -> tuple[PlanRequest, PlanResult]:
    """A saved plan (TARGET is a plan file; planning flags cannot change it), else `make(TARGET)`."""
    if Path(target).suffix.lower() in PLAN_SUFFIXES and not Path(target).exists():
        raise ModelSourceError(f"no such plan file: {target}",
                               "check the path; save a plan with `vllmkit plan MODEL ... --save plan.yaml`",
                               code="plan-not-found")
    if is_plan_file(target):
        if given:
            raise UsageError(
                f"planning options ({', '.join('--' + k.replace('_', '-') for k in given)}) cannot change a saved plan",
                "re-plan with `vllmkit plan ... --save`, or serve the model directly",
            )
        return load_plan_file(Path(target))
    return make(target)
