"""
A robot: one machine connected to the platform with its machine key alone, running the jobs it
is given (docs/agent-protocol.md).

A port of ``packages/agent/src/robot.ts``.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import platform
import socket
import ssl
import time
from typing import Any, Awaitable, Callable, Literal, Union

from .connection import TIMING, Backoff, Connection, PlatformError, monotonic_ms
from .consumer import ItemHandler, consume_items
from .run import ERROR_MAX_CHARS, MESSAGE_MAX_CHARS, JobContext, JobEnd, JobInfo, Run, exception_of, percent_value
from .transport import FROM_ENVIRONMENT, ProxySetting, url_refusal

__all__ = ["connect", "Robot", "JobHandler", "JobEndHandler", "AroundHandler", "TraceCarrier", "AGENT_VERSION"]

AGENT_VERSION = "svc-agent-python/0.1.0"

#: Runs a job: what it returns becomes the job's ``output_data`` (or, a :class:`JobEnd`, the whole
#: end); what it raises, its failure — unless the run was aborted first: a stop ends it
#: ``stopped``, its own timeout ``timed_out``. A raised ``BusinessException`` is a business failure
#: (``exception: "business"``: the process's automatic retries skip the job), any other exception
#: an application failure.
JobHandler = Callable[[JobContext], Awaitable[Union[dict[str, Any], JobEnd, None]]]

#: Runs each job's whole execution (its handler and its end) inside it, e.g. in a tracing span
#: continuing ``job.trace``: ``async def around(job, execute): ... await execute() ...``.
AroundHandler = Callable[[JobInfo, Callable[[], Awaitable[None]]], Awaitable[None]]

#: The W3C trace context to send with each request of a run (called where the request is made).
TraceCarrier = Callable[[], Union[dict[str, str], None]]

#: Told when a run ended: the job, its final status as the platform recorded it (None when its
#: end was refused or never sent), and whether the run was lost.
JobEndHandler = Callable[[JobInfo, Union[str, None], bool], None]

#: How often the robot's clock looks at its connection and its runs' confirmations, in seconds.
CLOCK_SECONDS = 0.1
#: Refusals after which a run's result is simply dropped: the run was lost, or the robot closed.
DROPPED = {"CLOSED", "LOST", "UNAUTHORIZED", "REPLACED", "CONFLICT", "NOT_FOUND"}
#: The error message of a run cut short because the robot closed.
SHUTDOWN_MESSAGE = "El robot se cerró antes de que el trabajo terminara"


class Robot:
    """
    A machine connected to the platform (made by :func:`connect`): heartbeats keep the machine
    online and its runs' leases alive; a stop cancels the run's handler; a dropped connection is
    opened again (to the next URL) and the runs go on — the first heartbeat of the new connection
    takes them over, nothing restarts.
    """

    def __init__(
        self,
        urls: list[str],
        machine_key: str,
        on_job: JobHandler,
        on_item: ItemHandler | None,
        *,
        agent_version: str,
        heartbeat_ms: float | None,
        liveness_ms: float | Literal["lease"] | None,
        on_job_end: JobEndHandler | None,
        backoff: Backoff,
        ssl_context: ssl.SSLContext | None,
        logger: logging.Logger,
        proxy: ProxySetting = FROM_ENVIRONMENT,
        around: AroundHandler | None = None,
        trace_carrier: TraceCarrier | None = None,
    ) -> None:
        """Use :func:`connect`."""
        self._loop = asyncio.get_running_loop()
        self._on_job = on_job
        self._on_item = on_item
        self._agent_version = agent_version
        self._own_heartbeat_ms = heartbeat_ms
        self._own_liveness_ms = liveness_ms
        self._on_job_end = on_job_end
        self._around = around
        self._trace_carrier = trace_carrier
        self._log = logger
        self._runs: dict[str, Run] = {}
        #: the platform's heartbeat period and lease (ms), from its welcome
        self._heartbeat_ms = 5000.0
        self._beat_ms: float | None = None
        self._lease_ms: float | None = None
        self._machine: dict[str, Any] = {"id": "", "name": "", "slots": 0}
        self._welcomed = False
        self._closing = False
        #: heartbeats end only once the runs have (their leases must last through the grace period)
        self._stopped = False
        #: the first heartbeat of this robot tells the platform it runs nothing from before
        self._fresh = True
        self._beat_task: asyncio.Task[None] | None = None
        self._clock_task: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self.ready: asyncio.Future[dict[str, Any]] = self._loop.create_future()
        """Resolves with the machine (``id``, ``name``, ``slots``) once connected and welcomed the
        first time; raises :class:`PlatformError` when the key is refused."""
        self.refused: asyncio.Future[dict[str, str]] = self._loop.create_future()
        """Resolves with ``{"why", "reason"}`` when the platform turned this robot away for good:
        its key was refused (``key``), or the same machine connected from elsewhere (``replaced``).
        The robot has stopped then; it never resolves otherwise."""
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._conn = Connection(
            urls,
            machine_key,
            on_welcome=self._welcome,
            on_push=self._push,
            on_disconnected=self._disconnected,
            on_refused=self._refused,
            backoff=backoff,
            ssl_context=ssl_context,
            proxy=proxy,
            logger=logger,
        )
        self._conn.open()
        # from the start: a connection that goes silent before its first welcome is found out too
        self._clock_task = self._loop.create_task(self._clock(), name="svc_agent clock")

    # ------------------------------------------------------------------ public

    @property
    def running(self) -> int:
        """Runs in progress."""
        return len(self._runs)

    @property
    def machine(self) -> dict[str, Any]:
        """The machine as the platform last welcomed it."""
        return self._machine

    async def close(self, grace_seconds: float = 10) -> None:
        """
        Graceful stop: no new job; consumer jobs finish their current item and hand back the rest
        at once; other runs get ``grace_seconds`` to finish, then they are cancelled; the robot
        then says ``bye`` (the machine goes offline) and closes its connection.
        """
        self._closing = True
        # consumers leave right away (their queue will get a new consumer elsewhere)
        for run in list(self._runs.values()):
            if run.info.queue_id:
                run.abort("shutdown")
        done = [r.done for r in self._runs.values() if r.done is not None]
        if done:
            _finished, pending = await asyncio.wait(done, timeout=grace_seconds)
            if pending:
                for run in list(self._runs.values()):
                    run.abort("shutdown", force=True)
                # the ends of the cancelled runs; bounded, for a platform out of reach
                await asyncio.wait(pending, timeout=10)
        self._stop_timers()
        # a robot that cannot reach the platform just goes: the machine is offline once its
        # heartbeats stop; one under load may take seconds to write the goodbye
        self._conn.leaving()
        said = self._welcomed and await self._say_bye(time.monotonic() + 10)
        if self._welcomed and not said:
            self._log.warning("the platform did not acknowledge the bye: the machine goes offline once its heartbeats are missed")
        await self._conn.close()
        if self._clock_task is not None:
            self._clock_task.cancel()

    # ------------------------------------------------------------------ connection events

    async def _welcome(self, welcome: dict[str, Any]) -> None:
        self._heartbeat_ms = float(welcome.get("heartbeat_ms") or 5000)
        self._lease_ms = float(welcome.get("lease_seconds") or 30) * 1000
        # before anything else: a job.start may come in the same chunk as the heartbeat's answer
        machine = welcome.get("machine")
        if isinstance(machine, dict):
            self._machine = machine
        # the runs this robot still has go first: the new connection takes them over
        first = self._heartbeat_message()
        sent_at = monotonic_ms()
        answer = await self._conn.request_now(first).future
        self._on_beat(answer, sent_at, first)
        self._log.info("connected", extra={"machine": self._machine.get("name")})
        self._welcomed = True
        if not self.ready.done():
            self.ready.set_result(self._machine)
        if not self._stopped:
            period = self._heartbeat_ms if self._own_heartbeat_ms is None else min(self._heartbeat_ms, self._own_heartbeat_ms)
            self._beat_every(period)

    def _push(self, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "job.start":
            # a robot that is leaving does not acknowledge it: the platform hands it back at the bye
            job = msg.get("job")
            if not self._closing and not self._stopped and isinstance(job, dict):
                self._start(job)
        elif kind == "job.stop":
            run = self._runs.get(str(msg.get("job_id")))
            if run is not None:
                # a timeout or a loss announced by the platform ended the run there
                run.abort("stop" if msg.get("reason") == "stop" else "lost")
        elif kind == "job.input":
            run = self._runs.get(str(msg.get("job_id")))
            if run is not None:
                run.on_input()

    def _disconnected(self, code: int, reason: str, retry_in_ms: float) -> None:
        self._log.warning(
            "connection lost (code %s: %s); trying again in %d ms", code, reason or "-", round(retry_in_ms),
            extra={"code": code, "reason": reason, "retry_in_ms": round(retry_in_ms)},
        )

    def _refused(self, reason: str, why: str) -> None:
        if why == "key":
            self._log.warning("machine key refused (%s)", reason)
            error = PlatformError("UNAUTHORIZED", f"the platform refused the machine key ({reason})")
        else:
            self._log.warning("the same machine connected from another process or host with this key: this robot stops (%s)", reason)
            error = PlatformError("REPLACED", f"the machine connected from elsewhere with the same key ({reason})")
        if not self.ready.done():
            self.ready.set_exception(error)
        self._stop_timers()
        for run in list(self._runs.values()):
            run.abort("lost")
        if not self.refused.done():
            self.refused.set_result({"why": why, "reason": reason})

    # ------------------------------------------------------------------ heartbeats and the clock

    def _heartbeat_message(self) -> dict[str, Any]:
        # a run this robot gave up as lost is not renewed: the platform ends it once its lease lapses
        now = monotonic_ms()
        running = [{"job_id": r.info.id, "attempt": r.info.attempt, "alive": r.alive(now)} for r in self._runs.values() if not r.lost]
        message: dict[str, Any] = {"type": "heartbeat"}
        if self._fresh and not running:
            message["fresh"] = True
        message["running"] = running
        message["agent_version"] = self._agent_version
        message["host"] = {"hostname": socket.gethostname(), "pid": os.getpid(), "platform": platform.system().lower()}
        self._fresh = False
        return message

    def _on_beat(self, result: Any, sent_at: float, message: dict[str, Any]) -> None:
        """
        The answer to a heartbeat sent at ``sent_at``: runs the platform no longer gives this robot
        are aborted; those it renewed (listed alive, and owned) are confirmed from the moment the
        heartbeat left, never from its answer's arrival.
        """
        if not isinstance(result, dict):
            return
        renewed = {(r["job_id"], r["attempt"]) for r in message["running"] if r["alive"]}
        for r in result.get("runs") or []:
            if not isinstance(r, dict):
                continue
            run = self._runs.get(str(r.get("job_id")))
            if run is None:
                continue
            if not r.get("owned"):
                run.abort("lost")
                continue
            if (run.info.id, run.info.attempt) in renewed:
                run.confirm(sent_at)
            if r.get("stop_requested"):
                run.abort("stop")

    def _send_beat(self) -> None:
        """One heartbeat on the connection open now; none while there is none (the next welcome sends one)."""
        if self._stopped or not self._conn.is_ready:
            return
        message = self._heartbeat_message()
        sent_at = monotonic_ms()
        pending = self._conn.request_once(message)

        def answered(fut: asyncio.Future[Any]) -> None:
            if fut.cancelled():
                return
            err = fut.exception()
            if err is None:
                self._on_beat(fut.result(), sent_at, message)
            elif not (isinstance(err, PlatformError) and err.code in ("CONNECTION_LOST", "NOT_CONNECTED", "CLOSED")):
                self._log.warning("heartbeat failed: %s", err)

        pending.future.add_done_callback(answered)

    def _beat_every(self, ms: float) -> None:
        """Heartbeats on a fixed period: a late answer does not hold the next one back."""
        if self._beat_task is not None and ms == self._beat_ms:
            return
        if self._beat_task is not None:
            self._beat_task.cancel()
        self._beat_ms = ms
        self._beat_task = self._loop.create_task(self._beats(ms / 1000), name="svc_agent heartbeats")

    async def _beats(self, period: float) -> None:
        next_at = self._loop.time() + period
        while True:
            await asyncio.sleep(max(0.0, next_at - self._loop.time()))
            next_at += period
            if next_at < self._loop.time():  # the loop was blocked: no burst of late beats
                next_at = self._loop.time() + period
            self._send_beat()

    async def _clock(self) -> None:
        while True:
            await asyncio.sleep(CLOCK_SECONDS)
            try:
                self._tick()
            except Exception:  # noqa: BLE001 - the clock must keep going
                self._log.exception("the robot's clock failed")

    def _tick(self) -> None:
        """
        The robot's own clock: a silent connection is destroyed (and opened again), and a run
        whose ownership was last confirmed longer ago than ``lease − heartbeat`` is aborted as
        lost, before the platform may hand its job or items to another robot.
        """
        now = monotonic_ms()
        self._conn.check(now)
        if self._lease_ms is None:
            return
        abort_after = self._lease_ms - self._heartbeat_ms
        for run in list(self._runs.values()):
            if run.lost or run.confirmed_at is None or now - run.confirmed_at <= abort_after:
                continue
            unconfirmed = round(now - run.confirmed_at)
            self._log.warning(
                "run aborted: the platform has not confirmed it for too long (job %s, attempt %s, unconfirmed for %d ms)",
                run.info.id, run.info.attempt, unconfirmed,
                extra={"job_id": run.info.id, "attempt": run.info.attempt, "unconfirmed_ms": unconfirmed},
            )
            run.abort("lost")

    def _liveness(self) -> float | None:
        """The longest silence of a run still renewed, in ms (None: every run is renewed)."""
        return self._lease_ms if self._own_liveness_ms == "lease" else self._own_liveness_ms

    def _stop_timers(self) -> None:
        self._stopped = True
        if self._beat_task is not None:
            self._beat_task.cancel()
            self._beat_task = None

    # ------------------------------------------------------------------ runs

    def _start(self, job: dict[str, Any]) -> None:
        try:
            info = JobInfo.from_message(job)
        except (KeyError, TypeError, ValueError):
            self._log.warning("a job.start without a usable job was ignored")
            return
        if info.id in self._runs:
            return
        # a consumer job (with the item handler or a handler of its own) finishes its current item
        # on a stop or a shutdown: only a timeout or a lost run cancels it at once
        run = Run(info, self._machine, self._conn, consumer=bool(info.queue_id), liveness_ms=self._liveness, trace_carrier=self._trace_carrier)
        self._runs[info.id] = run
        run.done = self._loop.create_task(self._lifecycle(run), name=f"svc_agent run {info.id}")

    async def _lifecycle(self, run: Run) -> None:
        try:
            # the run starts once the platform has its acknowledgement: a run never acknowledged is
            # handed out again, so it must not have done anything. An accepted acknowledgement
            # renews the lease: ownership is confirmed from the moment it went out (its last
            # sending, when it was asked again on another connection)
            sent_at = monotonic_ms()

            def on_sent(at: float) -> None:
                nonlocal sent_at
                sent_at = at

            go = True
            try:
                r = await run.request({"type": "job.started"}, on_sent=on_sent)
                run.confirm(sent_at)
                # an answer that took longer than the run may go unconfirmed: given up before it starts
                self._tick()
                if isinstance(r, dict) and r.get("stop_requested"):
                    run.abort("stop")
            except PlatformError:
                # any refusal (stale, not this connection's, or an error of the platform's) leaves
                # the run unconfirmed: it never starts, so no robot works on a run this one cannot confirm
                go = False
            if not go or run.lost:
                self._ended(run.info, None, run.lost)
                return
            if self._around is not None:
                await self._around(run.info, lambda: self._execute(run))
            else:
                await self._execute(run)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001 - a run's end must never end the robot
            self._log.warning("run %s ended with an error: %s", run.info.id, err)
        finally:
            run.end()
            self._runs.pop(run.info.id, None)

    async def _execute(self, run: Run) -> None:
        ctx = JobContext(run)
        end: dict[str, Any]
        end_log: str | None = None
        on_item = self._on_item

        async def work() -> Any:
            if run.info.queue_id and on_item is not None:
                return await consume_items(run, ctx, on_item)
            result = self._on_job(ctx)
            return await result if inspect.isawaitable(result) else result

        run.task = self._loop.create_task(work(), name=f"svc_agent job {run.info.id}")
        if run.reason is not None:
            # aborted before it started (a stop answered with its acknowledgement)
            run.abort(run.reason)
        try:
            result = await asyncio.shield(run.task)
        except BaseException as err:  # noqa: BLE001 - CancelledError is how a stop ends a handler
            if isinstance(err, asyncio.CancelledError) and not run.task.done():
                run.task.cancel()  # the robot itself is being torn down
                raise
            if not isinstance(err, (Exception, asyncio.CancelledError)):
                raise
            reason = run.reason
            if reason == "stop":
                end = {"status": "stopped"}
            elif reason == "timeout":
                end = {
                    "status": "timed_out",
                    "error_message": f"Tiempo de ejecución agotado: superó timeout_seconds ({run.info.timeout_seconds} s)",
                }
            elif isinstance(err, asyncio.CancelledError):
                end = {"status": "failed", "error_message": SHUTDOWN_MESSAGE if reason == "shutdown" else "El trabajo fue cancelado", "exception": "application"}
            else:
                end = {"status": "failed", "error_message": (str(err) or type(err).__name__)[:ERROR_MAX_CHARS], "exception": exception_of(err)}
        else:
            if isinstance(result, JobEnd):
                end = {"status": result.status, "output_data": result.output, "error_message": result.error}
                if result.status == "failed":
                    # a kind of failure only goes with a failure: the platform refuses it on any other end
                    end["exception"] = result.exception or "application"
                if result.percent is not None:
                    end["progress_percent"] = percent_value(result.percent)
                if result.message is not None:
                    end["progress_message"] = result.message[:MESSAGE_MAX_CHARS]
                if result.metrics is not None:
                    end["resource_metrics"] = result.metrics
                end_log = result.log
            else:
                end = {"status": "completed", "output_data": result}
            output = end.get("output_data")
            if output is not None and not isinstance(output, dict):
                end = {"status": "failed", "error_message": f"El trabajo devolvió {type(output).__name__}: output_data debe ser un objeto (dict)", "exception": "application"}
            else:
                try:
                    json.dumps(end, allow_nan=False)
                except (TypeError, ValueError) as err:
                    end = {"status": "failed", "error_message": f"El resultado del trabajo no es JSON: {err}"[:ERROR_MAX_CHARS], "exception": "application"}
        # lost (the platform ended the run, or could not confirm it in time): its end would be
        # refused, or would race whatever robot holds the job now; the platform ends it by its lease
        if run.lost:
            self._ended(run.info, None, True)
            return
        status: str | None = None
        try:
            try:
                status = await run.finish(end, end_log)
            except PlatformError as err:
                if err.code != "VALIDATION_ERROR" or end.get("status") == "failed":
                    raise
                # an end the platform cannot take (an output over its bound): the run fails instead
                self._log.warning("the platform refused the end of job %s: %s", run.info.id, err.message)
                status = await run.finish({"status": "failed", "error_message": f"El final del trabajo fue rechazado: {err.message}"[:ERROR_MAX_CHARS], "exception": "application"}, None)
        except PlatformError as err:
            # a run the platform already ended (timeout, lost), or lost while its end waited: dropped
            if err.code not in DROPPED:
                raise
            self._log.info("result of a run that no longer owns its job dropped (job %s: %s)", run.info.id, err.code)
        self._ended(run.info, status, run.lost)

    def _ended(self, info: JobInfo, status: str | None, lost: bool) -> None:
        if self._on_job_end is not None:
            try:
                self._on_job_end(info, status, lost)
            except Exception:  # noqa: BLE001
                self._log.exception("on_job_end failed")

    async def _say_bye(self, deadline: float) -> bool:
        """The bye, asked again after an error answer until ``deadline``; True once the platform answered it."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            pending = self._conn.request({"type": "bye"})
            try:
                await asyncio.wait_for(asyncio.shield(pending.future), left)
                return True
            except asyncio.TimeoutError:
                return False
            except PlatformError as err:
                if err.code == "CLOSED":
                    return False
                self._log.warning("bye refused: asking again (%s)", err.message)
                if time.monotonic() + 0.25 >= deadline:
                    return False
                await asyncio.sleep(0.25)


def connect(
    url: str,
    machine_key: str,
    on_job: JobHandler,
    on_item: ItemHandler | None = None,
    *,
    allow_insecure: bool = False,
    ca_file: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    proxy: ProxySetting = FROM_ENVIRONMENT,
    agent_version: str = AGENT_VERSION,
    heartbeat_ms: float | None = None,
    liveness_ms: float | Literal["lease"] | None = None,
    around: AroundHandler | None = None,
    trace_carrier: TraceCarrier | None = None,
    on_job_end: JobEndHandler | None = None,
    backoff: Backoff | None = None,
    logger: logging.Logger | None = None,
) -> Robot:
    """
    Connects a machine to the platform with its machine key alone and runs the jobs it is given.
    Call it inside a running event loop; ``await robot.ready`` waits for the first welcome.

    :param url: the platform's base URL (``https://…``); several separated by commas are tried in
        turn. A plain ``http://`` URL to another host is refused unless ``allow_insecure``.
    :param machine_key: the machine's key (``svc_mk_…``); keep it in the environment or a file.
    :param on_job: ``async def on_job(ctx)`` runs a job (a consumer job too, unless ``on_item``:
        such a handler is not cancelled by a stop or a shutdown but sees ``ctx.stopped`` set, so
        that it finishes its current item, settles it and hands back what it took and did not start).
    :param on_item: ``async def on_item(item, ctx)`` processes one item of a queue this machine
        consumes: its return is the item's result, ``Review(result)`` a review, a raise a failure.
    :param ca_file: the certificate authority (PEM) that signed the platform's certificate, when
        not a public one (or give a whole ``ssl_context``).
    :param proxy: the outbound HTTP proxy the network requires (``http://user:password@proxy:3128``),
        tunnelled through with ``CONNECT``; None for never. By default it is read at each connection
        from ``HTTPS_PROXY`` (``HTTP_PROXY`` for an ``http://`` URL) or ``ALL_PROXY``, unless
        ``NO_PROXY`` names the host, by the TypeScript robot's rules (``svc_agent.transport.proxy_for_url``).
    :param heartbeat_ms: heartbeat more often than the platform asks (never less often).
    :param liveness_ms: renew a run's lease only while it shows a sign of life (``ctx.alive()``,
        or any request of it) within this many ms (``"lease"``: the lease the platform gives), so a
        robot stuck in its work loses the job to a retry; None renews every run while connected.
    :param around: runs each job's whole execution (handler and end) inside it:
        ``async def around(job, execute)`` must ``await execute()`` (e.g. in a span continuing
        ``job.trace``).
    :param trace_carrier: the W3C trace context (``{"traceparent": …}``) to send with each request
        of a run, called where the request is made, so the platform's work for it joins the trace.
    :param on_job_end: told when a run ended (job, final status or None, lost).
    :param backoff: reconnection delays (see :class:`Backoff`).
    :param logger: where the robot says what happens (default: the ``svc_agent`` logger).
    """
    urls = [u.strip() for u in url.split(",") if u.strip()]
    if not urls:
        raise ValueError("connect: url is empty")
    for u in urls:
        refusal = url_refusal(u, allow_insecure)
        if refusal:
            raise ValueError(f"connect: {refusal}")
    if not machine_key:
        raise ValueError("connect: machine_key is empty")
    if ssl_context is None and ca_file is not None:
        ssl_context = ssl.create_default_context(cafile=ca_file)
    return Robot(
        urls,
        machine_key,
        on_job,
        on_item,
        agent_version=agent_version,
        heartbeat_ms=heartbeat_ms,
        liveness_ms=liveness_ms,
        on_job_end=on_job_end,
        backoff=backoff or TIMING.reconnect,
        ssl_context=ssl_context,
        logger=logger or logging.getLogger("svc_agent"),
        proxy=proxy,
        around=around,
        trace_carrier=trace_carrier,
    )
