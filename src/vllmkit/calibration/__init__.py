"""Calibration: measured non-KV memory from real vLLM startups, stored locally and fed back to `plan`.

Public API:
- store.lookup_terms(...)                    (plan.service: calibrated memory terms + provenance)
- store.CalibrationRecord, store.store_path(env), load_records / add_records / remove_records
- checklog.check_log(path, overrides, env)   (`vllmkit check-log`)
- checklog.record_startup(plan, log_text, env, source=...)   (`vllmkit serve` after a healthy start)
"""

from __future__ import annotations
