"""How the simulator writes JSON and instants: as agent-sim (JavaScript) does, so lines compare alike."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

__all__ = ["compact_json", "iso_now"]


def compact_json(value: Any) -> str:
    """``JSON.stringify``'s form: no spaces, non-ASCII kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def iso_now() -> str:
    """``new Date().toISOString()``: UTC, milliseconds, ``Z``."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
