"""Rendering of a plan's serving-features block (issue 14): presets, prefix caching, chunked
prefill, structured outputs. Shown by `plan`."""

from __future__ import annotations

from rich.console import Console

from vllmkit.plan.models import FeaturesInfo


def render_features(console: Console, features: FeaturesInfo | None) -> None:
    if features is None:
        return
    console.print("\nserving features:", markup=False)
    if features.family is None:
        console.print("  model family: no preset matches (no tool-call / reasoning parser turned on)", markup=False)
    else:
        console.print(f"  model family: {features.family}", markup=False)
    for label, pick in (("tool calls", features.tool_call_parser), ("reasoning", features.reasoning_parser)):
        if pick is None:
            continue
        state = "on" if pick.enabled else "off"
        console.print(f"  {label}: {pick.name} ({state}; checked against the {pick.checked})", markup=False)
    if features.reasoning_parser is not None and features.reasoning_field:
        console.print(f"  reasoning comes back in message.{features.reasoning_field}", markup=False)
    for name, note in (
        ("prefix caching", features.prefix_caching),
        ("chunked prefill", features.chunked_prefill),
        ("structured outputs", features.structured_outputs),
    ):
        if note is not None:
            console.print(f"  {name} ({note.source}): {note.detail}", markup=False)
    if features.tokenizer_mode:
        console.print(f"  tokenizer mode advised: {features.tokenizer_mode}", markup=False)
    if features.generation_config:
        console.print(f"  sampling: {features.generation_config}", markup=False)
    for n in features.notes:
        console.print(f"  note: {n}", markup=False)
    if features.sources:
        console.print("  sources: " + ", ".join(features.sources), markup=False)
