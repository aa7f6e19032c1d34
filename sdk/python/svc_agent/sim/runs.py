"""
The simulated work of one run: an ordinary job (steps of progress, log lines, a question, an
outcome) or a queue's consumer job (items taken in the platform's order, a hand-off buffer),
as agent-sim does it (docs/agent-sim.md). The robot SDK aborts a run on a stop, its timeout, the
robot's shutdown or its loss; this module turns each into the end agent-sim gives it.
"""

from __future__ import annotations

import asyncio
import math
import os
import signal
import time
from dataclasses import dataclass
from typing import Any, Callable, NoReturn

from ..connection import PlatformError
from ..run import JobContext, JobEnd, QueueItem, RunAborted
from .behaviour import BUSINESS_FAILURE_MESSAGE, Behaviour, directive_of, draw_end, forced_exception, js_round, metrics_at, metrics_profile, sample
from .formats import compact_json as _json, iso_now
from .journal import Journal
from .prefetch import AutoPrefetch, take_size

__all__ = ["RunContext", "run_simulated_job", "consume_queue"]

#: how often a working robot shows a sign of life, in seconds
ALIVE_EVERY_SECONDS = 0.5
#: how often a consumer reports how many items it processed, in seconds
PROGRESS_EVERY_SECONDS = 0.5
#: how often a consumer asks whether other jobs wait for its machine's slot, in seconds
YIELD_CHECK_SECONDS = 2.0
#: what interrupts a run's work: its cancellation (a stop of a job, a timeout, a loss), or a
#: request refused because the run was aborted meanwhile
ABORTS = (asyncio.CancelledError, RunAborted, PlatformError)


@dataclass
class RunContext:
    """What a run needs from its robot."""

    job: JobContext
    behaviour: Behaviour
    random: Callable[[], float]
    journal: Journal
    #: items processed by this robot process so far (crash mode mid-item); one counter for all machines
    items_processed: list[int]

    @property
    def machine_id(self) -> str:
        """The machine the run is on."""
        return str(self.job.machine.get("id", ""))

    @property
    def machine_name(self) -> str:
        """Its name."""
        return str(self.job.machine.get("name", ""))


def crash_now() -> NoReturn:
    """Kills this whole robot process the hard way (the simulator's crash modes)."""
    os.kill(os.getpid(), signal.SIGKILL)
    raise SystemExit(137)  # not reached


async def work(ms: float, ctx: JobContext) -> None:
    """``ms`` of simulated work, showing a sign of life about every half second as a real robot's runtime does."""
    until = time.monotonic() + ms / 1000
    left = ms / 1000
    while left > 0:
        await asyncio.sleep(min(left, ALIVE_EVERY_SECONDS))
        ctx.alive()
        left = until - time.monotonic()


async def stall() -> NoReturn:
    """A robot stuck for good, without a sign of life, until its run is taken away (cancelled)."""
    await asyncio.get_running_loop().create_future()
    raise AssertionError("not reached")


def _js(value: Any) -> str:
    """A value as agent-sim writes it into a message (``null`` for none)."""
    return "null" if value is None else str(value)


class JobLog:
    """Log lines kept until they go out with the next report or the run's end."""

    def __init__(self) -> None:
        """No line yet."""
        self._pending: list[str] = []

    def line(self, message: str) -> None:
        """A timestamped line."""
        self._pending.append(f"{iso_now()} {message}\n")

    def take(self) -> str | None:
        """The lines written since the last take (None when none)."""
        text = "".join(self._pending)
        self._pending = []
        return text or None

    def end(self, end: JobEnd) -> JobEnd:
        """The run's end with the lines still unsent."""
        end.log = self.take()
        return end


def _elapsed_ms(started: float) -> float:
    return (time.monotonic() - started) * 1000


async def _ask(ctx: RunContext, prompt: str, options: dict[str, Any], log: JobLog) -> Any:
    job = ctx.job.job
    log.line(f"Esperando una respuesta: {prompt}")
    value = await ctx.job.ask_for_input(
        prompt,
        choices=options.get("choices") if "choices" in options else None,
        schema=None if "choices" in options else options.get("schema", {}),
        on_waiting=lambda: ctx.journal.write("input-asked", job_id=job.id, machine_id=ctx.machine_id, attempt=job.attempt),
    )
    log.line(f"Respuesta recibida: {_json(value)}")
    ctx.journal.write("input-answered", job_id=job.id, machine_id=ctx.machine_id, attempt=job.attempt)
    return value


async def run_simulated_job(ctx: RunContext) -> JobEnd:
    """
    An ordinary job: its duration in ``progress_steps`` steps, with progress and log lines as it
    goes, maybe a question halfway, then completed or failed. A stop ends it ``stopped``, its
    timeout ``timed_out``, the robot's shutdown ``failed``; a lost run's end is dropped by the SDK.
    """
    job = ctx.job.job
    b = ctx.behaviour
    directive = directive_of(job.input)
    duration = float(directive["duration_ms"]) if directive.get("duration_ms") is not None else sample(b.duration, ctx.random)
    steps = max(1, b.progress_steps)
    log = JobLog()
    started = time.monotonic()
    profile = metrics_profile(b, ctx.random)
    log.line(f"Inicio en la máquina {ctx.machine_name}: proceso {job.process_name}, intento {job.attempt}")
    if b.crash == "job-start" or directive.get("crash"):
        crash_now()
    lines_written = 0
    percent = 0
    forced_input = directive.get("input")
    # drawn only when the directive says nothing (a null says no, without a draw: agent-sim's order)
    asks = bool(forced_input) or ("input" not in directive and b.input_rate > 0 and ctx.random() < b.input_rate)
    ask_at = math.ceil(steps / 2) if asks else 0
    forced = forced_input if isinstance(forced_input, dict) else {}
    answer: tuple[Any] | None = None
    try:
        if directive.get("stall") and job.retry_count == 0:
            await stall()
        for i in range(1, steps + 1):
            await work(duration / steps, ctx.job)
            if b.crash == "mid-job" and i * 2 >= steps:
                crash_now()
            due = (i * b.log_lines) // steps
            while lines_written < due:
                lines_written += 1
                log.line(f"Paso {i} de {steps}: línea de registro {lines_written}")
            percent = js_round(i / steps * 100)
            await ctx.job.report(
                percent=percent,
                message=f"Paso {i} de {steps}",
                log=log.take(),
                metrics=metrics_at(profile, _elapsed_ms(started), duration),
            )
            if i == ask_at:
                options = forced.get("options") if isinstance(forced.get("options"), dict) else b.input_options
                answer = (await _ask(ctx, str(forced.get("prompt") or b.input_prompt), options, log),)
    except ABORTS:
        reason = ctx.job.stop_reason
        if reason in (None, "lost"):
            raise
        return log.end(_end_aborted(ctx, reason, log, percent, metrics_at(profile, _elapsed_ms(started), duration)))
    elapsed = _elapsed_ms(started)
    outcome = directive.get("outcome")
    # the one draw of the end, where the failure was always drawn (draw_end: application, then business)
    drawn = (forced_exception(directive) if outcome == "fail" else "completed") if outcome else draw_end(b, ctx.random(), False)
    metrics = metrics_at(profile, elapsed, elapsed)
    if drawn in ("application", "business"):
        forced_message = directive.get("error_message")
        message = str(forced_message if forced_message is not None else BUSINESS_FAILURE_MESSAGE if drawn == "business" else b.failure_message)
        log.line(f"Error de negocio: {message}" if drawn == "business" else f"Error: {message}")
        return log.end(JobEnd(status="failed", error=message, exception=drawn, metrics=metrics, percent=percent))
    log.line("Terminado correctamente")
    output = {
        **b.output,
        **(directive.get("output") or {}),
        **({"input_value": answer[0]} if answer is not None else {}),
        "simulated": True,
        "machine": ctx.machine_name,
        "duration_ms": js_round(elapsed),
    }
    return log.end(JobEnd(status="completed", output=output, metrics=metrics, percent=100, message="Terminado"))


def _end_aborted(ctx: RunContext, reason: str, log: JobLog, percent: int, metrics: dict[str, Any]) -> JobEnd:
    timeout = _js(ctx.job.job.timeout_seconds)
    if reason == "stop":
        log.line("Detenido a petición del usuario")
        return JobEnd(status="stopped", metrics=metrics, percent=percent, message="Detenido")
    if reason == "timeout":
        log.line(f"Tiempo agotado ({timeout} s)")
        return JobEnd(status="timed_out", error=f"Tiempo de ejecución agotado: superó timeout_seconds ({timeout} s)", metrics=metrics, percent=percent)
    log.line("El agente se detuvo antes de terminar")
    return JobEnd(status="failed", error=f"El agente de la máquina {ctx.machine_name} se detuvo antes de terminar el job", metrics=metrics)


async def consume_queue(ctx: RunContext) -> JobEnd:
    """
    A consumer job: takes items of its queue in the platform's order and processes them until
    none is ready, another job waits for the machine, or it is stopped. Each round trip settles
    the items just processed and takes the next ones (``prefetch`` of them, or as many as the
    recent items' speed allows, naming those still held). A stop or the robot's shutdown lets the
    current item finish and hands back what was taken and not started; a timeout interrupts at
    once (the platform fails the item) and a lost run settles nothing.
    """
    job = ctx.job.job
    b = ctx.behaviour
    log = JobLog()
    counts = {"completed": 0, "pending_review": 0, "failed": 0, "refused": 0}
    buffer: list[QueueItem] = []
    outcomes: list[dict[str, Any]] = []
    last_progress = last_yield_check = time.monotonic()
    yielded = False
    hard_reason: str | None = None
    auto = AutoPrefetch()
    log.line(f"Consumidor de la cola iniciado en la máquina {ctx.machine_name} (prefetch {b.prefetch})")

    def account(settled: list[dict[str, Any]], sent: int) -> None:
        for s in settled:
            status = s.get("status") if isinstance(s, dict) else None
            if status in ("completed", "pending_review", "failed"):
                counts[status] += 1
        counts["refused"] += sent - len(settled)

    async def round_trip(take: int) -> None:
        """Settles ``outcomes`` and puts what it takes in the buffer."""
        nonlocal outcomes
        sent = len(outcomes)
        request = asyncio.ensure_future(ctx.job.take_items(outcomes, take, held=[i.id for i in buffer]))
        try:
            settled, items = await asyncio.shield(request)
        except asyncio.CancelledError:
            # a timeout cancels the consumer while its round trip is out: the platform settles and
            # hands over all the same, so the answer is awaited, to count it and hand the items
            # back, before the consumer ends (a lost run's answer counts for nothing)
            if ctx.job.stop_reason == "lost":
                request.cancel()
                raise
            settled, items = await request
            account(settled, sent)
            outcomes = []
            buffer.extend(items)
            raise
        account(settled, sent)
        outcomes = []
        buffer.extend(items)

    try:
        while not ctx.job.stopped.is_set():
            if not buffer:
                if time.monotonic() - last_yield_check >= YIELD_CHECK_SECONDS:
                    last_yield_check = time.monotonic()
                    if await ctx.job.others_waiting():
                        yielded = True
                        log.line("Otro job espera esta máquina: el consumidor cede su slot")
                        break
                await round_trip(take_size(b.prefetch, auto))
                if not buffer:
                    break
            item = buffer.pop(0)
            began = time.perf_counter()
            outcomes.append(await _process_item(ctx, item))
            auto.observe((time.perf_counter() - began) * 1000)
            if time.monotonic() - last_progress >= PROGRESS_EVERY_SECONDS:
                last_progress = time.monotonic()
                done = counts["completed"] + counts["pending_review"] + counts["failed"] + len(outcomes)
                await ctx.job.report(message=f"{done} elementos procesados", log=log.take())
    except ABORTS:
        hard_reason = ctx.job.stop_reason
        if hard_reason is None:
            raise
    # a run that no longer owns its job settles nothing: its writes would be refused
    if ctx.job.stop_reason == "lost":
        raise RunAborted("lost")
    try:
        if outcomes:
            await round_trip(0)
        if buffer:
            held, buffer = buffer, []
            released = await ctx.job.release_items(held)
            log.line(f"{released} elementos tomados y no iniciados devueltos a la cola")
    except ABORTS:
        # refused as stale: the run was lost meanwhile (the SDK aborted it)
        if ctx.job.stop_reason is None:
            raise
        if ctx.job.stop_reason == "lost":
            raise RunAborted("lost") from None
        hard_reason = hard_reason or ctx.job.stop_reason

    summary = f"{counts['completed']} completados, {counts['pending_review']} a revisión, {counts['failed']} fallidos"
    log.line(f"Consumidor terminado: {summary}")
    output = {
        "queue_id": job.queue_id,
        "yielded": yielded,
        "items_completed": counts["completed"],
        "items_pending_review": counts["pending_review"],
        "items_failed": counts["failed"],
        "items_refused": counts["refused"],
    }
    reason = hard_reason or ctx.job.stop_reason
    if reason == "stop":
        log.line("Detenido a petición del usuario")
        return log.end(JobEnd(status="stopped", output=output, message=summary))
    if reason == "timeout":
        return log.end(JobEnd(status="timed_out", error=f"Tiempo de ejecución agotado: superó timeout_seconds ({_js(job.timeout_seconds)} s)", output=output))
    # drained, or the robot is shutting down: the consumer did its part either way
    return log.end(JobEnd(status="completed", output=output, percent=100, message=summary))


async def _process_item(ctx: RunContext, item: QueueItem) -> dict[str, Any]:
    job = ctx.job.job
    b = ctx.behaviour
    d = directive_of(item.data)
    ids = {"item_id": item.id, "job_id": job.id, "machine_id": ctx.machine_id, "attempt": item.attempt}
    ctx.journal.write("item-start", **ids)
    if d.get("crash") or (b.crash == "mid-item" and ctx.items_processed[0] >= b.crash_after_items):
        crash_now()
    started = time.monotonic()
    duration = float(d["duration_ms"]) if d.get("duration_ms") is not None else sample(b.item_duration, ctx.random)
    try:
        if d.get("stall") and item.retry_count == 0:
            await stall()
        await work(duration, ctx.job)
    except asyncio.CancelledError:
        # the robot stopped working on it now: the journal says when (fault tests check overlaps)
        ctx.journal.write("item-end", **ids, outcome="aborted")
        raise
    ctx.items_processed[0] += 1
    forced = d.get("outcome")
    # one draw (draw_end): an application failure, a business one, a review, or completed
    if forced:
        drawn = forced_exception(d) if forced == "fail" else "review" if forced == "review" else "completed"
    else:
        drawn = draw_end(b, ctx.random(), True)
    exception = drawn if drawn in ("application", "business") else None
    outcome = "failed" if exception else "pending_review" if drawn == "review" else "completed"
    ctx.journal.write("item-end", **ids, outcome=outcome, **({"exception": exception} if exception else {}))
    if exception:
        message = d.get("error_message")
        default = BUSINESS_FAILURE_MESSAGE if exception == "business" else b.failure_message
        return {"id": item.id, "attempt": item.attempt, "status": "failed", "error_message": str(message if message is not None else default), "exception": exception}
    result = {**(d.get("output") or {}), "machine": ctx.machine_name, "duration_ms": js_round(_elapsed_ms(started))}
    if outcome == "pending_review":
        result["review_reason"] = "El robot pide una revisión humana"
    return {"id": item.id, "attempt": item.attempt, "status": outcome, "result": result}
