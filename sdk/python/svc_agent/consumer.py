"""
A consumer job run with an item handler: the items of its queue, one at a time.

A port of ``packages/agent/src/consumer.ts``.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Awaitable, Callable, Union

from .run import ERROR_MAX_CHARS, JobContext, JobEnd, QueueItem, Run, RunAborted, exception_of

__all__ = ["Review", "ItemHandler", "consume_items"]


class Review:
    """An item's result that asks a person to review it: ``return Review({...})`` (the item ends ``pending_review``)."""

    def __init__(self, result: dict[str, Any] | None = None) -> None:
        """The result the reviewer sees."""
        self.result: dict[str, Any] = result or {}


#: Processes one item: what it returns is the item's result (completed), ``Review(...)`` sends it
#: to review, a raised exception fails it: a ``BusinessException`` for good (``exception:
#: "business"``, never retried), any other exception as an application failure (its queue's
#: retry policy applies).
ItemHandler = Callable[[QueueItem, JobContext], Awaitable[Union[dict[str, Any], Review, None]]]

#: how often a consumer asks whether other jobs wait for its machine's slot, in seconds
YIELD_CHECK_SECONDS = 2.0


async def consume_items(run: Run, ctx: JobContext, on_item: ItemHandler) -> JobEnd:
    """
    Settles the item just done and takes the next one in each round trip, until the queue has
    none ready, another job waits for the machine, or the run is asked to stop or the robot closes
    (the current item finishes first; an item taken meanwhile goes back untouched). A lost run or
    its own timeout interrupts at once (the task is cancelled; the platform fails the item held).
    """
    counts = {"completed": 0, "pending_review": 0, "failed": 0}
    outcomes: list[dict[str, Any]] = []

    def hard() -> bool:
        return run.lost or run.reason == "timeout"

    async def settle(take: int) -> list[QueueItem]:
        nonlocal outcomes
        settled, items = await ctx.take_items(outcomes, take)
        for s in settled:
            status = s.get("status") if isinstance(s, dict) else None
            if status in counts:
                counts[status] += 1
        outcomes = []
        return items

    last_yield_check = time.monotonic()
    try:
        while not ctx.stopped.is_set():
            items = await settle(1)
            if not items:
                break
            if ctx.stopped.is_set():
                # asked to stop while taking: what was taken and not started goes back untouched
                await ctx.release_items(items)
                break
            item = items[0]
            try:
                returned = on_item(item, ctx)
                result = await returned if inspect.isawaitable(returned) else returned
            except Exception as err:  # noqa: BLE001 - the item fails, the consumer goes on
                if hard():
                    raise
                # the kind is always sent, even the default: what the robot meant is on record
                outcomes.append({
                    "id": item.id, "attempt": item.attempt, "status": "failed",
                    "error_message": (str(err) or type(err).__name__)[:ERROR_MAX_CHARS], "exception": exception_of(err),
                })
            else:
                if isinstance(result, Review):
                    outcomes.append({"id": item.id, "attempt": item.attempt, "status": "pending_review", "result": result.result})
                elif result is not None and not isinstance(result, dict):
                    message = f"El elemento devolvió {type(result).__name__}: su resultado debe ser un objeto (dict)"
                    outcomes.append({"id": item.id, "attempt": item.attempt, "status": "failed", "error_message": message, "exception": "application"})
                else:
                    outcomes.append({"id": item.id, "attempt": item.attempt, "status": "completed", "result": result if result is not None else {}})
            if time.monotonic() - last_yield_check >= YIELD_CHECK_SECONDS:
                last_yield_check = time.monotonic()
                if await ctx.others_waiting():
                    break
    finally:
        # before ending: settle what finished (a lost run settles nothing: its writes do not count)
        if outcomes and not hard():
            await settle(0)
    if hard():
        raise RunAborted(run.reason or "lost")
    output = {
        "items_completed": counts["completed"],
        "items_pending_review": counts["pending_review"],
        "items_failed": counts["failed"],
    }
    return JobEnd(status="stopped" if run.reason == "stop" else "completed", output=output)
