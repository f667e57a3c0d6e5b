"""Byte units. Quantities are int bytes everywhere (`*_bytes`); these constants name the multipliers,
and `output` is the only place that turns bytes into text for people."""

from __future__ import annotations

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
GB = 10**9  # vendors' "80 GB" and Hugging Face file sizes are decimal
