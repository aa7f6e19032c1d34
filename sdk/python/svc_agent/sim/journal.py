"""
An optional append-only record of what this robot process did, one JSON line per event, in the
format agent-sim writes (docs/agent-sim.md), each line written at once so that it survives a
SIGKILL: fault tests read it to prove that no item ran on two machines at the same time.
"""

from __future__ import annotations

import os
import time
from typing import Any

from .formats import compact_json

__all__ = ["Journal"]


class Journal:
    """Events ``job-start``/``job-end``, ``item-start``/``item-end``, ``input-asked``/``input-answered``."""

    def __init__(self, path: str | None) -> None:
        """Appends to ``path``; does nothing without one."""
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644) if path else None

    @property
    def enabled(self) -> bool:
        """Whether events are recorded."""
        return self._fd is not None

    def write(self, event: str, **fields: Any) -> None:
        """One line: ``{"t": ms since the epoch, "pid", "event", …fields}``."""
        if self._fd is None:
            return
        line = {"t": int(time.time() * 1000), "pid": os.getpid(), "event": event, **fields}
        os.write(self._fd, (compact_json(line) + "\n").encode("utf-8"))

    def close(self) -> None:
        """Stops recording."""
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None
