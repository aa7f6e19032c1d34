"""
``python3 -m svc_agent.sim``: simulated robot machines on the Python SDK, interchangeable with
agent-sim (same flags, environment, config file, journal and log lines; docs/agent-sim.md).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from typing import Any

from ..connection import PlatformError
from ..robot import Robot, connect
from ..run import JobContext, JobEnd, JobInfo
from .behaviour import create_random
from .formats import compact_json, iso_now
from .journal import Journal
from .options import SimOptions, UsageError, behaviour_for, parse_options
from .runs import RunContext, consume_queue, run_simulated_job

AGENT_VERSION = "agent-sim-python/0.1.0"
#: how long running jobs get to finish on the first signal, in seconds
GRACE_SECONDS = 10

#: logging's record attributes; anything else on a record is a field of its line
_RECORD_FIELDS = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime", "taskName"}
_LEVELS = {"error": logging.ERROR, "warn": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}


class JsonLines(logging.Formatter):
    """One JSON object a line, with the fields the platform's processes write (level, message, service, timestamp)."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a line."""
        level = {"WARNING": "warn", "CRITICAL": "error"}.get(record.levelname, record.levelname.lower())
        line: dict[str, Any] = {"level": level, "message": record.getMessage(), "service": "agent-sim", "sdk": "python"}
        line.update({k: v for k, v in vars(record).items() if k not in _RECORD_FIELDS})
        if record.exc_info:
            line["err"] = self.formatException(record.exc_info)
        line["timestamp"] = iso_now()
        return compact_json(line)


def _logger(level: str) -> logging.Logger:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonLines())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(_LEVELS.get(level, logging.INFO))
    return logging.getLogger("agent-sim")


class MachineRobot:
    """One simulated machine: the SDK's robot, playing agent-sim's part in each run."""

    def __init__(self, options: SimOptions, key: str, journal: Journal, items_processed: list[int], log: logging.Logger) -> None:
        """A machine for ``key`` (connected by :meth:`start`)."""
        self._options = options
        self._key = key
        self._journal = journal
        self._items_processed = items_processed
        self._log = log
        self._random = create_random(options.seed)
        self._machine_id = ""
        #: the kind of failure each run ending failed reported, for its job-end line in the journal
        self._exceptions: dict[str, str] = {}
        self.robot: Robot | None = None

    async def start(self) -> dict[str, Any]:
        """Connects; returns the machine once the platform welcomed it (raises when it refuses the key)."""
        self.robot = connect(
            self._options.url,
            self._key,
            self._run,
            allow_insecure=self._options.allow_insecure,
            ca_file=self._options.ca_file,
            agent_version=AGENT_VERSION,
            heartbeat_ms=self._options.heartbeat_ms,
            # a run's lease is renewed only while it shows signs of life (a stalled robot loses its job)
            liveness_ms="lease",
            on_job_end=self._ended,
            logger=self._log,
        )
        machine = await self.robot.ready
        self._log.info("machine agent started", extra={"machine_id": machine.get("id"), "machine": machine.get("name"), "slots": machine.get("slots")})
        return machine

    async def _run(self, job: JobContext) -> JobEnd:
        info = job.job
        self._machine_id = str(job.machine.get("id", ""))
        self._journal.write("job-start", job_id=info.id, machine_id=self._machine_id, attempt=info.attempt)
        ctx = RunContext(
            job=job,
            behaviour=behaviour_for(self._options, info.process_id, info.process_name),
            random=self._random,
            journal=self._journal,
            items_processed=self._items_processed,
        )
        try:
            end = await (consume_queue(ctx) if info.queue_id else run_simulated_job(ctx))
        except (asyncio.CancelledError, PlatformError):
            raise
        except Exception as err:  # noqa: BLE001 - whatever broke the run, its job must not stay running
            if job.stop_reason is not None:
                raise
            self._log.error("run broke off", extra={"job_id": info.id, "err": str(err)})
            end = JobEnd(status="failed", error=f"El agente de la máquina {job.machine.get('name')} no pudo terminar el job: {err}")
        # the SDK sends application for a failure that names no kind: the journal says the same
        if end.status == "failed":
            self._exceptions[info.id] = end.exception or "application"
        return end

    def _ended(self, info: JobInfo, status: str | None, lost: bool) -> None:
        exception = self._exceptions.pop(info.id, None)
        self._journal.write(
            "job-end", job_id=info.id, machine_id=self._machine_id, attempt=info.attempt, status=status or "refused",
            **({"outcome": "aborted"} if lost else {}),
            **({"exception": exception} if status == "failed" and exception else {}),
        )
        if status is None:
            self._log.info("result of a run that no longer owns its job dropped", extra={"job_id": info.id, "attempt": info.attempt})

    async def close(self, grace_seconds: float) -> None:
        """Graceful stop: consumers finish their item and hand back the rest, other runs get the grace period."""
        if self.robot is not None:
            await self.robot.close(grace_seconds)
        self._log.info("machine agent stopped")


async def _main(options: SimOptions, log: logging.Logger) -> int:
    if os.environ.get("METRICS_PORT"):
        # Prometheus metrics of the robot process are agent-sim's (Node's prom-client); this one has none to serve
        log.warning("METRICS_PORT is ignored: the Python simulator serves no metrics (agent-sim does)")
    if options.keys_on_command_line:
        log.warning("a machine key on the command line is readable by every user of this host: pass keys in AGENT_MACHINE_KEYS or a file (--machine-key-file)")
    loop = asyncio.get_running_loop()
    journal = Journal(options.journal)
    items_processed = [0]
    robots = [MachineRobot(options, key, journal, items_processed, log) for key in options.machine_keys]
    exit_code: asyncio.Future[int] = loop.create_future()

    def finish(code: int) -> None:
        if not exit_code.done():
            exit_code.set_result(code)

    started = asyncio.ensure_future(asyncio.gather(*(r.start() for r in robots)))
    # handlers before the start finishes: a signal meanwhile drains once the start is done
    stopping = False

    async def drain(name: str) -> None:
        log.info("draining", extra={"signal": name})
        try:
            await asyncio.gather(started, return_exceptions=True)
            await asyncio.gather(*(r.close(GRACE_SECONDS) for r in robots))
            journal.close()
        except Exception as err:  # noqa: BLE001 - a failed drain exits 1
            log.error("drain failed: exiting", extra={"signal": name, "err": str(err)})
            finish(1)
            return
        log.info("stopped")
        finish(0)

    def on_signal(name: str) -> None:
        nonlocal stopping
        if stopping:
            log.warning("second signal: exiting now", extra={"signal": name})
            finish(1)
            return
        stopping = True
        loop.create_task(drain(name))

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig.name)

    def watch_refusal(robot: MachineRobot) -> None:
        assert robot.robot is not None

        def refused(f: asyncio.Future[dict[str, str]]) -> None:
            if f.cancelled() or f.result().get("why") != "replaced":
                return
            # two processes holding one machine key (a cloned VM): this one stops instead of taking the connection back for ever
            log.error(f"machine {robot.robot.machine.get('name') or '?'} connected from another process or host with the same key ({f.result().get('reason')}): this robot stops")
            journal.close()
            finish(3)

        robot.robot.refused.add_done_callback(refused)

    try:
        machines = await started
    except PlatformError as err:
        if err.code == "UNAUTHORIZED":
            print(f"A machine key does not belong to an active machine: {err.message}", file=sys.stderr)
            return 2
        print(f"The platform turned a machine away: {err.message}", file=sys.stderr)
        return 1
    for r in robots:
        watch_refusal(r)
    log.info("agent-sim running", extra={"machines": [m.get("name") for m in machines], "url": options.url})
    return await exit_code


def main() -> None:
    """The command line's entry point."""
    try:
        options = parse_options(sys.argv[1:], os.environ)
    except UsageError as err:
        print(err, file=sys.stderr)
        sys.exit(2)
    log = _logger(os.environ.get("LOG_LEVEL", "info"))
    code = asyncio.run(_main(options, log))
    sys.stdout.flush()
    # tasks of a robot cut off (a refused key, a second signal) must not hold the exit
    os._exit(code)


if __name__ == "__main__":
    main()
