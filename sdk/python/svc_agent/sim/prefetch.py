"""
A consumer's hand-off buffer with ``prefetch: auto`` (agent-sim's rule, docs/decisions/dispatch.md):
one item per round trip while items take time, a few at once for fast ones, so that a consumer
never holds more than about ``WORK_BUDGET_MS`` of expected work another consumer could be doing.
"""

from __future__ import annotations

__all__ = ["AUTO_MAX", "WORK_BUDGET_MS", "AutoPrefetch", "take_size"]

AUTO_MAX = 4
WORK_BUDGET_MS = 10.0
#: weight of the newest item in the running average of item durations
_ALPHA = 0.3


class AutoPrefetch:
    """The running average of recent item durations, and the take it allows."""

    def __init__(self) -> None:
        """No item timed yet: one at a time."""
        self._avg_ms: float | None = None

    def observe(self, ms: float) -> None:
        """Records how long one item took."""
        self._avg_ms = ms if self._avg_ms is None else self._avg_ms + _ALPHA * (ms - self._avg_ms)

    def take(self) -> int:
        """How many items to take now."""
        if self._avg_ms is None:
            return 1
        if self._avg_ms <= 0:
            return AUTO_MAX
        return max(1, min(AUTO_MAX, int(WORK_BUDGET_MS // self._avg_ms)))


def take_size(prefetch: int | str, auto: AutoPrefetch) -> int:
    """The size of the next take for a consumer's ``prefetch`` setting."""
    return auto.take() if prefetch == "auto" else int(prefetch)
