"""The clock for the public API (MEMSTRATA_NOW overrides it): defined in memstrata.storage.clock, the lowest layer."""
from __future__ import annotations

from memstrata.storage.clock import days_between, format_datetime, now, parse_datetime, parse_until, to_local

__all__ = ["days_between", "format_datetime", "now", "parse_datetime", "parse_until", "to_local"]
