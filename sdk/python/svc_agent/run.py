"""
One run of a job on this robot, and what its handler sees of it (:class:`JobContext`).

A port of ``packages/agent/src/run.ts``.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable, Literal, cast

from .connection import Connection, Pending, PlatformError, monotonic_ms

__all__ = [
    "AbortReason",
    "JobInfo",
    "QueueItem",
    "JobEnd",
    "ExceptionKind",
    "BusinessException",
    "is_business_exception",
    "exception_of",
    "JobContext",
    "RunAborted",
    "LOG_CHUNK_BYTES",
    "log_chunks",
    "Run",
]

#: Why a run was aborted: ``stop`` (a person asked: it ends ``stopped``), ``timeout`` (the job's
#: own time ran out here: ``timed_out``), ``shutdown`` (the robot is closing), ``lost`` (the
#: platform already ended the run, or could not confirm it in time: nothing it reports counts).
AbortReason = Literal["stop", "timeout", "shutdown", "lost"]

#: Most bytes of log text in one message (the platform's bound of one append).
LOG_CHUNK_BYTES = 64 * 1024

#: Longest progress message and error message the platform takes, in characters.
MESSAGE_MAX_CHARS = 1000
ERROR_MAX_CHARS = 10_000

#: The kind of a failure (docs/agent-protocol.md, "Kinds of failure"): ``business`` (the data
#: itself is wrong: the platform never retries it) or ``application`` (anything else: retried as usual).
ExceptionKind = Literal["business", "application"]


class BusinessException(Exception):
    """
    A failure of the data, not of the robot: the invoice is already paid, the customer does not
    exist. Raised from an item handler it fails the item for good (no retry, no dead letter);
    raised from a job handler it fails the job, which the process's automatic retries skip. Any
    other exception is an application failure and is retried as before.
    """


def is_business_exception(err: BaseException) -> bool:
    """
    Whether ``err`` is a business failure: a :class:`BusinessException`, or an instance of any
    class named ``BusinessException`` (a robot that vendors its own copy of this package holds a
    second class, which ``isinstance`` does not recognise).
    """
    return isinstance(err, BusinessException) or any(c.__name__ == "BusinessException" for c in type(err).__mro__)


def exception_of(err: BaseException) -> ExceptionKind:
    """The kind of failure a raised exception is."""
    return "business" if is_business_exception(err) else "application"


def percent_value(percent: float) -> int:
    """A progress percentage as the platform takes it: a whole number from 0 to 100."""
    return max(0, min(100, int(round(percent))))


#: How often a run waiting for input reads its job when no news comes (a lost push), in seconds.
INPUT_POLL_SECONDS = 1.0


class RunAborted(Exception):
    """Raised in a run's handler when the run was aborted (see :data:`AbortReason`)."""

    def __init__(self, reason: str) -> None:
        """Keeps why the run was aborted."""
        super().__init__(f"aborted: {reason}")
        self.reason = reason


@dataclass(frozen=True)
class JobInfo:
    """The job a robot was given (docs/agent-protocol.md, ``job.start``)."""

    id: str
    #: the run's fencing token: every write of the run carries it
    attempt: int
    process_id: str
    process_name: str
    input: dict[str, Any] | None
    #: set for a queue's consumer job
    queue_id: str | None
    timeout_seconds: int | None
    #: how many times the job ran before (a retry's first run is 1)
    retry_count: int
    started_at: str
    timeout_at: str | None
    #: the W3C trace context the platform started the run under, or None
    trace: dict[str, str] | None = None

    @staticmethod
    def from_message(job: dict[str, Any]) -> "JobInfo":
        """The job of a ``job.start`` push."""
        data = job.get("input_data")
        trace = job.get("trace")
        return JobInfo(
            id=str(job["id"]),
            attempt=int(job["attempt"]),
            process_id=str(job.get("process_id", "")),
            process_name=str(job.get("process_name", "")),
            input=data if isinstance(data, dict) else None,
            queue_id=job.get("queue_id") or None,
            timeout_seconds=job.get("timeout_seconds"),
            retry_count=int(job.get("retry_count") or 0),
            started_at=str(job.get("started_at", "")),
            timeout_at=job.get("timeout_at") or None,
            trace=trace if isinstance(trace, dict) else None,
        )


@dataclass(frozen=True)
class QueueItem:
    """An item a consumer job took from its queue."""

    id: str
    #: the item's fencing token: its outcome carries it
    attempt: int
    reference: str | None
    data: dict[str, Any]
    retry_count: int

    @staticmethod
    def from_message(item: dict[str, Any]) -> "QueueItem":
        """An item of an ``items.take`` result."""
        data = item.get("data")
        return QueueItem(
            id=str(item["id"]),
            attempt=int(item["attempt"]),
            reference=item.get("reference"),
            data=data if isinstance(data, dict) else {},
            retry_count=int(item.get("retry_count") or 0),
        )


@dataclass
class JobEnd:
    """
    How a run ends when its handler wants more than "completed with this output": return
    ``JobEnd(status="failed", error="…", output={…})`` from ``on_job``.
    """

    status: Literal["completed", "failed", "stopped", "timed_out"]
    output: dict[str, Any] | None = None
    error: str | None = None
    #: with ``failed``: its kind (``application`` when left out); ignored with any other status
    exception: ExceptionKind | None = None
    percent: float | None = None
    message: str | None = None
    metrics: dict[str, Any] | None = None
    log: str | None = None


def log_chunks(text: str, max_bytes: int = LOG_CHUNK_BYTES) -> list[str]:
    """Splits text at line ends into pieces of at most ``max_bytes`` bytes of UTF-8 (a longer line is cut)."""
    if text == "":
        return []
    if len(text.encode("utf-8")) <= max_bytes:
        return [text]
    out: list[str] = []
    current: list[str] = []
    size = 0
    for raw in re.split(r"(?<=\n)", text):
        if raw == "":
            continue
        # at most 4 bytes per character: a cut line always fits
        line = raw if len(raw.encode("utf-8")) <= max_bytes else raw[: max_bytes // 4 - 1] + "\n"
        n = len(line.encode("utf-8"))
        if size + n > max_bytes and current:
            out.append("".join(current))
            current, size = [], 0
        current.append(line)
        size += n
    if current:
        out.append("".join(current))
    return out


def _parse_time(value: str | None) -> float | None:
    """An ISO 8601 instant as a POSIX timestamp, or None."""
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


class JobContext:
    """What a job's handler sees of its run: the job, its stop, and the requests it may send."""

    def __init__(self, run: "Run") -> None:
        """The context of ``run`` (made by the robot)."""
        self._run = run

    @property
    def job(self) -> JobInfo:
        """The job being run."""
        return self._run.info

    @property
    def machine(self) -> dict[str, Any]:
        """The machine the job runs on, as the platform welcomed it (``id``, ``name``, ``slots``)."""
        return self._run.machine

    @property
    def stopped(self) -> asyncio.Event:
        """Set once the run is aborted (a stop, its timeout, the robot closing, or lost)."""
        return self._run.stopped

    @property
    def stop_reason(self) -> str | None:
        """Why the run was aborted (:data:`AbortReason`), or None while it goes on."""
        return self._run.reason

    def alive(self) -> None:
        """
        A sign of life: with the robot's ``liveness_ms``, a run's lease is renewed only while such
        signs (or its requests) come, so a robot stuck in its work loses the job to a retry.
        """
        self._run.sign()

    async def report(
        self,
        *,
        percent: float | None = None,
        message: str | None = None,
        metrics: dict[str, Any] | None = None,
        log: str | None = None,
    ) -> None:
        """Progress, resource metrics and log text in one message (only the fields given)."""
        fields: dict[str, Any] = {}
        if percent is not None:
            fields["progress_percent"] = percent_value(percent)
        if message is not None:
            fields["progress_message"] = message[:MESSAGE_MAX_CHARS]
        if metrics is not None:
            fields["resource_metrics"] = metrics
        await self._run.report(fields, log)

    async def progress(self, percent: float | None = None, message: str | None = None) -> None:
        """The run's progress (0–100) and a line saying where it is."""
        await self.report(percent=percent, message=message)

    async def log(self, text: str) -> None:
        """Appends a line (or several) to the job's log."""
        await self.report(log=text if text.endswith("\n") else text + "\n")

    async def ask_for_input(
        self,
        prompt: str,
        *,
        choices: list[Any] | None = None,
        schema: dict[str, Any] | None = None,
        on_waiting: Callable[[], None] | None = None,
    ) -> Any:
        """
        Asks a person and waits for the answer (the job's timeout does not run meanwhile); give
        ``choices`` or a JSON ``schema``; ``on_waiting`` is called once the job shows the question
        (``waiting_input``). Raises :class:`RunAborted` when the run is stopped or lost while it waits.
        """
        if (choices is None) == (schema is None):
            raise ValueError("ask_for_input: give either choices or schema")
        options: dict[str, Any] = {"choices": choices} if choices is not None else {"schema": schema}
        return await self._run.ask_for_input(prompt, options, on_waiting)

    async def asset(self, name: str, environment: str | None = None) -> dict[str, Any]:
        """
        An asset of the machine's workspace (``production`` unless another environment is named):
        ``{name, type, environment, value}``. Raises :class:`PlatformError` ``NOT_FOUND`` when missing.
        """
        message: dict[str, Any] = {"type": "asset.get", "name": name}
        if environment is not None:
            message["environment"] = environment
        return cast(dict[str, Any], await self._run.request(message))

    async def take_items(
        self, outcomes: list[dict[str, Any]], take: int, held: list[str] | None = None
    ) -> tuple[list[dict[str, Any]], list[QueueItem]]:
        """
        A consumer job's round trip: settles ``outcomes`` (``{id, attempt, status, result?,
        error_message?}``) and takes up to ``take`` items; returns what was settled and the items.
        """
        message: dict[str, Any] = {"type": "items.take", "outcomes": outcomes, "take": take}
        if held:
            message["held"] = held
        r = await self._run.request(message)
        return list(r.get("settled") or []), [QueueItem.from_message(i) for i in r.get("items") or []]

    async def release_items(self, items: list[QueueItem]) -> int:
        """Items taken and not started go back to the queue untouched; returns how many did."""
        if not items:
            return 0
        r = await self._run.request({"type": "items.release", "items": [{"id": i.id, "attempt": i.attempt} for i in items]})
        return int(r.get("released") or 0)

    async def others_waiting(self) -> bool:
        """Whether another job waits for this machine (a consumer then gives its slot up)."""
        r = await self._run.request({"type": "jobs.waiting"})
        return bool(r.get("waiting"))


class Run:
    """
    One run on this robot: its stop, its local timeout (paused while it waits for input), and the
    requests it sends, each carrying its fencing token.
    """

    def __init__(
        self,
        info: JobInfo,
        machine: dict[str, Any],
        conn: Connection,
        consumer: bool,
        liveness_ms: Callable[[], float | None] = lambda: None,
        trace_carrier: Callable[[], dict[str, str] | None] | None = None,
    ) -> None:
        """
        A run of ``info``; ``consumer`` for a queue's consumer job (a stop lets it finish its item);
        ``liveness_ms`` the longest silence of a run still renewed (None: no such rule);
        ``trace_carrier`` the trace context each of its requests carries.
        """
        self.info = info
        self._liveness_ms = liveness_ms
        self._trace_carrier = trace_carrier
        self._last_sign = monotonic_ms()
        self._in_flight = 0
        self.machine = machine
        self.conn = conn
        self.consumer = consumer
        self.stopped = asyncio.Event()
        #: why it was aborted first (None while it goes on)
        self.reason: str | None = None
        #: lost (the platform said so, or could not confirm it in time), whatever aborted it first
        self.lost = False
        #: set when the handler's cancellation was asked for (it may still be finishing)
        self.cancelled = False
        #: monotonic ms of the sending of the last request that confirmed the run; None before
        self.confirmed_at: float | None = None
        #: the task running the handler (or the consumer loop)
        self.task: asyncio.Task[Any] | None = None
        #: the task running the whole run (acknowledgement, handler, end)
        self.done: asyncio.Task[None] | None = None
        self._pending: set[Pending] = set()
        self._log_seq = 0
        self._report_lock = asyncio.Lock()
        self._timeout: asyncio.TimerHandle | None = None
        self._input_news = asyncio.Event()
        self.arm_timeout(info.timeout_at)

    @property
    def fenced(self) -> dict[str, Any]:
        """The fields naming the run in each of its requests."""
        return {"job_id": self.info.id, "attempt": self.info.attempt}

    def abort(self, reason: str, *, force: bool = False) -> None:
        """
        Aborts the run: sets ``stopped``; cancels the handler's task, except for a consumer asked
        to stop or to shut down (it finishes its current item first) unless ``force``. A ``lost``
        run also gives up its requests still waiting: nothing more goes out for it.
        """
        if reason == "lost" and not self.lost:
            self.lost = True
            for p in list(self._pending):
                self.conn.abandon(p, PlatformError("LOST", "the run was lost: nothing it reports counts"))
            self._pending.clear()
        if self.reason is None:
            self.reason = reason
        self.stopped.set()
        hard = force or reason in ("lost", "timeout") or not self.consumer
        if hard and not self.cancelled and self.task is not None and not self.task.done():
            self.cancelled = True
            self.task.cancel()

    def alive(self, now: float) -> bool:
        """Whether the run shows signs of life (a request of its in flight: the platform is the slow one)."""
        ms = self._liveness_ms()
        return ms is None or self._in_flight > 0 or now - self._last_sign < ms

    def sign(self) -> None:
        """A sign of life of the run."""
        self._last_sign = monotonic_ms()

    def confirm(self, sent_at: float) -> None:
        """The platform confirmed the run's ownership with a request sent at ``sent_at``."""
        if self.confirmed_at is None or sent_at > self.confirmed_at:
            self.confirmed_at = sent_at

    def arm_timeout(self, at: str | None) -> None:
        """Aborts the run (``timeout``) at ``at`` (ISO 8601); None disarms it."""
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None
        when = _parse_time(at)
        if when is not None:
            loop = asyncio.get_running_loop()
            self._timeout = loop.call_later(max(0.0, when - datetime.now(timezone.utc).timestamp()), self.abort, "timeout")

    def on_input(self) -> None:
        """The answer to a question of this run was announced (``job.input`` push)."""
        self._input_news.set()

    def end(self) -> None:
        """The run is over: its timer goes."""
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None

    def submit(self, message: dict[str, Any], on_sent: Callable[[float], None] | None = None) -> Pending:
        """Sends a request of the run (with its fencing token); given up if the run is lost."""
        if self.lost:
            raise PlatformError("LOST", "the run was lost: nothing it reports counts")
        trace = self._trace_carrier() if self._trace_carrier is not None else None
        p = self.conn.request({**message, **self.fenced, **({"trace": trace} if trace else {})}, on_sent=on_sent)
        self._pending.add(p)
        p.future.add_done_callback(lambda _f: self._pending.discard(p))
        return p

    async def request(self, message: dict[str, Any], on_sent: Callable[[float], None] | None = None) -> Any:
        """
        A request of this run, its result returned. Refused as stale (``CONFLICT``) or unknown
        (``NOT_FOUND``), the run no longer owns its job: it is aborted (``lost``, or ``stop`` when
        a stop was what refused it). The request itself survives a cancellation of its caller.
        """
        p = self.submit(message, on_sent)
        self._in_flight += 1
        try:
            return await asyncio.shield(p.future)
        except PlatformError as err:
            if err.code == "CONFLICT" or (err.code == "NOT_FOUND" and message.get("type") != "asset.get"):
                stop = isinstance(err.details, dict) and bool(err.details.get("stop_requested"))
                self.abort("stop" if stop else "lost")
            raise
        finally:
            self._in_flight -= 1
            self.sign()

    async def _progress_message(self, fields: dict[str, Any]) -> None:
        r = await self.request({"type": "job.progress", **fields})
        if isinstance(r, dict) and r.get("stop_requested"):
            self.abort("stop")

    async def _log_append(self, text: str | None) -> dict[str, Any] | None:
        """Log text as numbered chunks: all but the last sent on their own, the last returned to ride along."""
        chunks = []
        for t in log_chunks(text or ""):
            self._log_seq += 1
            chunks.append({"text": t, "seq": self._log_seq})
        if not chunks:
            return None
        last = chunks.pop()
        for c in chunks:
            await self._progress_message({"log": c})
        return last

    async def report(self, fields: dict[str, Any], log: str | None) -> None:
        """One report after the other: log appends are numbered and must arrive in order."""
        async with self._report_lock:
            tail = await self._log_append(log)
            if tail is not None:
                fields = {**fields, "log": tail}
            await self._progress_message(fields)

    async def finish(self, end: dict[str, Any], log: str | None) -> str | None:
        """Sends the run's end (after every report asked before it); returns the job's final status."""
        async with self._report_lock:
            try:
                tail = await self._log_append(log)
            except PlatformError:
                tail = None
            if tail is not None:
                end = {**end, "log": tail}
            r = await self.request({"type": "job.finish", **end})
            return r.get("status") if isinstance(r, dict) else None

    async def ask_for_input(self, prompt: str, options: dict[str, Any], on_waiting: Callable[[], None] | None = None) -> Any:
        """Asks (``job.input.ask``), then reads the answer on each push and at least every second."""
        self._input_news.clear()
        await self.request({"type": "job.input.ask", "prompt": prompt, "options": options})
        # the job's timeout does not run while it waits
        self.arm_timeout(None)
        if on_waiting is not None:
            on_waiting()
        while True:
            await self._wait_for_input_news()
            state = await self.request({"type": "job.input.read"})
            status = state.get("status")
            answer = state.get("answer")
            if status == "running" and isinstance(answer, dict):
                self.arm_timeout(state.get("timeout_at"))
                return answer.get("value")
            if status == "waiting_input" and not state.get("stop_requested"):
                continue
            self.abort("stop" if status == "stopped" or state.get("stop_requested") else "lost")
            raise RunAborted(self.reason or "stop")

    async def _wait_for_input_news(self) -> None:
        if self.stopped.is_set():
            raise RunAborted(self.reason or "stop")
        news = asyncio.ensure_future(self._input_news.wait())
        stop = asyncio.ensure_future(self.stopped.wait())
        try:
            await asyncio.wait({news, stop}, timeout=INPUT_POLL_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        finally:
            news.cancel()
            stop.cancel()
        if self.stopped.is_set():
            raise RunAborted(self.reason or "stop")
        self._input_news.clear()

