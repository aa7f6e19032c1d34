"""
The robot against a scripted platform (a local WebSocket server speaking the machine protocol):
repeats after a lost answer, the first heartbeat of a new connection, the ownership rule, silent
connections, pings, refusals and Retry-After. Run by sdk/python/test/readme-robot.test.ts, or with
``/usr/bin/python3 -m unittest discover -s sdk/python/tests -t sdk/python``.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import http
import json
import logging
import time
import unittest
import unittest.mock
from typing import Any, AsyncIterator, Awaitable, Callable

from websockets.legacy.server import WebSocketServerProtocol, serve

import svc_agent.connection as connection_module
from svc_agent import Backoff, BusinessException, JobContext, JobEnd, QueueItem, Review, connect, is_business_exception

FAST = Backoff(min_ms=10, max_ms=50, spread_ms=50)
JOB = {
    "id": "j1", "attempt": 1, "process_id": "p1", "process_name": "proceso", "input_data": {"n": 1},
    "queue_id": None, "timeout_seconds": None, "retry_count": 0, "timeout_at": None, "started_at": "2026-01-01T00:00:00Z",
}

logging.getLogger("svc_agent").setLevel(logging.CRITICAL)


def welcome(heartbeat_ms: int = 200, lease_seconds: float = 30, ping_ms: int = 15_000) -> str:
    """The server's first message."""
    return json.dumps({
        "type": "welcome", "machine": {"id": "m1", "name": "robot-01", "slots": 1},
        "heartbeat_ms": heartbeat_ms, "lease_seconds": lease_seconds, "ping_ms": ping_ms,
    })


def reply(msg: dict[str, Any], result: Any) -> str:
    """A reply to ``msg``."""
    return json.dumps({"type": "reply", "re": msg["id"], "result": result})


def owned(msg: dict[str, Any]) -> dict[str, Any]:
    """A heartbeat's answer owning every run it listed."""
    return {"slots": 1, "is_active": True, "runs": [{"job_id": r["job_id"], "owned": True, "stop_requested": False} for r in msg["running"]]}


Handler = Callable[[WebSocketServerProtocol, int], Awaitable[None]]


class FakePlatformTest(unittest.IsolatedAsyncioTestCase):
    """Each test scripts the platform's side of each connection (numbered from 1)."""

    async def start(self, handler: Handler, **server_options: Any) -> str:
        """Serves ``handler``; returns the base URL."""
        self.connections = 0
        self.received: list[tuple[int, dict[str, Any]]] = []

        async def serve_one(ws: WebSocketServerProtocol, path: str = "") -> None:
            self.connections += 1
            try:
                await handler(ws, self.connections)
            except Exception:  # noqa: BLE001 - a connection the robot dropped
                pass

        options = {"ping_interval": None, **server_options}
        self.server = await serve(serve_one, "127.0.0.1", 0, **options)
        self.addAsyncCleanup(self._stop_server)
        port = list(self.server.sockets)[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def _stop_server(self) -> None:
        self.server.close()
        await self.server.wait_closed()

    async def messages(self, ws: WebSocketServerProtocol, n: int) -> AsyncIterator[dict[str, Any]]:
        """The robot's messages on connection ``n``, recorded."""
        async for raw in ws:
            msg = json.loads(raw)
            self.received.append((n, msg))
            if msg["type"] == "bye":  # every scripted platform lets the robot go
                await ws.send(reply(msg, {}))
                await ws.close()
                return
            yield msg

    def sent(self, n: int, kind: str) -> list[dict[str, Any]]:
        """What the robot sent of ``kind`` on connection ``n``."""
        return [m for c, m in self.received if c == n and m["type"] == kind]

    async def wait(self, what: str, probe: Callable[[], Any], timeout: float = 5) -> Any:
        """Waits for ``probe()`` to be truthy."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = probe()
            if value:
                return value
            await asyncio.sleep(0.02)
        self.fail(f"timed out waiting for {what}; received: {self.received}")

    async def test_an_answer_lost_with_its_connection_is_asked_again_as_a_repeat_and_the_run_goes_on(self) -> None:
        """The first heartbeat of the new connection lists the run; the progress goes again, marked repeat."""
        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome())
            async for msg in self.messages(ws, n):
                kind = msg["type"]
                if kind == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                    if n == 1 and len(self.sent(1, "heartbeat")) == 1:
                        await ws.send(json.dumps({"type": "job.start", "job": JOB}))
                elif kind == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "job.progress":
                    if n == 1:
                        await ws.close(1011, "a fault")  # the answer is lost
                        return
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "job.finish":
                    await ws.send(reply(msg, {"status": "completed"}))
                elif kind == "bye":
                    await ws.send(reply(msg, {}))
                    await ws.close()
                    return

        url = await self.start(platform)
        ends: list[tuple[str, Any, bool]] = []

        async def on_job(ctx: JobContext) -> dict[str, Any]:
            await ctx.progress(50, "a mitad")
            await ctx.log("hola")
            return {"doubled": (ctx.job.input or {})["n"] * 2}

        robot = connect(url, "svc_mk_test", on_job, backoff=FAST, on_job_end=lambda job, status, lost: ends.append((job.id, status, lost)))
        self.assertEqual((await asyncio.wait_for(robot.ready, 5))["name"], "robot-01")
        await self.wait("the run to end", lambda: ends)
        self.assertEqual(ends, [("j1", "completed", False)])
        first = self.sent(1, "heartbeat")[0]
        self.assertTrue(first.get("fresh"))
        self.assertEqual(first["running"], [])
        again = self.sent(2, "heartbeat")[0]
        self.assertNotIn("fresh", again)
        self.assertEqual(again["running"], [{"job_id": "j1", "attempt": 1, "alive": True}])
        [repeat, log] = self.sent(2, "job.progress")
        self.assertEqual((repeat.get("repeat"), repeat["progress_percent"], repeat["progress_message"]), (True, 50, "a mitad"))
        self.assertEqual(log["log"], {"text": "hola\n", "seq": 1})
        self.assertNotIn("repeat", log)
        [finish] = self.sent(2, "job.finish")
        self.assertEqual((finish["status"], finish["output_data"], finish["job_id"], finish["attempt"]), ("completed", {"doubled": 2}, "j1", 1))
        await robot.close(1)
        self.assertEqual(len(self.sent(2, "bye")), 1)

    async def test_a_run_unconfirmed_for_lease_minus_heartbeat_is_lost_and_nothing_more_is_sent_for_it(self) -> None:
        """Heartbeats go unanswered: the run is cancelled, not finished, and no longer listed."""
        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome(heartbeat_ms=100, lease_seconds=1))
            async for msg in self.messages(ws, n):
                if msg["type"] == "heartbeat" and len(self.sent(n, "heartbeat")) == 1:
                    await ws.send(reply(msg, owned(msg)))
                    await ws.send(json.dumps({"type": "job.start", "job": JOB}))
                elif msg["type"] == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                # later heartbeats: never answered (a platform that cannot confirm the run)

        url = await self.start(platform)
        ends: list[tuple[str, Any, bool]] = []
        cancelled = asyncio.Event()

        async def on_job(ctx: JobContext) -> None:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise

        robot = connect(url, "svc_mk_test", on_job, backoff=FAST, on_job_end=lambda job, status, lost: ends.append((job.id, status, lost)))
        await asyncio.wait_for(robot.ready, 5)
        await self.wait("the job to start", lambda: self.sent(1, "job.started"))
        started = time.monotonic()
        await self.wait("the run to be lost", lambda: ends)
        elapsed = time.monotonic() - started
        self.assertEqual(ends, [("j1", None, True)])
        self.assertTrue(cancelled.is_set())
        # lease − heartbeat = 900 ms after the last confirmation (job.started's sending)
        self.assertGreater(elapsed, 0.7)
        beats = len(self.sent(1, "heartbeat"))
        await self.wait("another heartbeat", lambda: len(self.sent(1, "heartbeat")) > beats + 1)
        self.assertEqual(self.sent(1, "heartbeat")[-1]["running"], [])
        self.assertEqual(self.sent(1, "job.finish"), [])
        self.assertEqual(robot.running, 0)
        await robot.close(0.1)

    async def test_a_run_whose_acknowledgement_is_refused_never_starts(self) -> None:
        """job.started answered with an error of the platform's: the handler never runs, nothing is finished."""
        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome())
            async for msg in self.messages(ws, n):
                if msg["type"] == "heartbeat" and len(self.sent(n, "heartbeat")) == 1:
                    await ws.send(reply(msg, owned(msg)))
                    await ws.send(json.dumps({"type": "job.start", "job": JOB}))
                elif msg["type"] == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                elif msg["type"] == "job.started":
                    await ws.send(json.dumps({"type": "reply", "re": msg["id"], "error": {"code": "INTERNAL_ERROR", "message": "Error interno"}}))

        url = await self.start(platform)
        ends: list[tuple[str, Any, bool]] = []
        ran: list[str] = []

        async def on_job(ctx: JobContext) -> None:
            ran.append(ctx.job.id)

        robot = connect(url, "svc_mk_test", on_job, backoff=FAST, on_job_end=lambda job, status, lost: ends.append((job.id, status, lost)))
        await asyncio.wait_for(robot.ready, 5)
        await self.wait("the run to end", lambda: ends)
        self.assertEqual(ends, [("j1", None, False)])
        self.assertEqual(ran, [])
        self.assertEqual(self.sent(1, "job.finish"), [])
        await robot.close(0.1)

    async def test_a_silent_connection_is_destroyed_and_opened_again(self) -> None:
        """Nothing heard for 2 × ping_ms + 1 s: the robot opens another connection."""
        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome(ping_ms=100))
            async for msg in self.messages(ws, n):
                if msg["type"] == "heartbeat" and len(self.sent(n, "heartbeat")) == 1:
                    await ws.send(reply(msg, owned(msg)))
                # then silence: no answer, no ping

        url = await self.start(platform)

        async def on_job(ctx: JobContext) -> None:
            return None

        robot = connect(url, "svc_mk_test", on_job, backoff=FAST)
        await asyncio.wait_for(robot.ready, 5)
        opened = time.monotonic()
        await self.wait("a second connection", lambda: self.connections >= 2)
        self.assertGreater(time.monotonic() - opened, 1.1)
        await self.wait("its first heartbeat", lambda: self.sent(2, "heartbeat"))
        await robot.close(0.1)

    async def test_a_request_unanswered_for_the_request_timeout_cuts_a_talking_connection_and_goes_again_as_a_repeat(self) -> None:
        """Heartbeats answered, a progress never: the connection is broken all the same; the next one gets the repeat."""
        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome(heartbeat_ms=50))
            async for msg in self.messages(ws, n):
                kind = msg["type"]
                if kind == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                    if n == 1 and len(self.sent(1, "heartbeat")) == 1:
                        await ws.send(json.dumps({"type": "job.start", "job": JOB}))
                elif kind == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "job.progress" and n > 1:  # on the first connection it is never answered
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "job.finish":
                    await ws.send(reply(msg, {"status": "completed"}))

        url = await self.start(platform)
        ends: list[tuple[str, Any, bool]] = []

        async def on_job(ctx: JobContext) -> None:
            await ctx.progress(50, "a mitad")

        timing = dataclasses.replace(connection_module.TIMING, request_timeout_ms=400)
        with unittest.mock.patch.object(connection_module, "TIMING", timing):
            robot = connect(url, "svc_mk_test", on_job, backoff=FAST, on_job_end=lambda job, status, lost: ends.append((job.id, status, lost)))
            await asyncio.wait_for(robot.ready, 5)
            await self.wait("a first progress", lambda: self.sent(1, "job.progress"))
            asked = time.monotonic()
            await self.wait("the run to end", lambda: ends)
            self.assertGreaterEqual(time.monotonic() - asked, 0.4)
            self.assertEqual(ends, [("j1", "completed", False)])
            self.assertEqual([m.get("repeat") for m in self.sent(2, "job.progress")], [True])
            await robot.close(0.1)

    async def test_around_wraps_the_whole_run_and_each_request_carries_the_trace_context_of_where_it_is_made(self) -> None:
        """around(job, execute) holds the handler and the end; trace_carrier() is read per request, in its context."""
        traced_job = {**JOB, "trace": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}

        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome())
            async for msg in self.messages(ws, n):
                kind = msg["type"]
                if kind == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                    if len(self.sent(n, "heartbeat")) == 1:
                        await ws.send(json.dumps({"type": "job.start", "job": traced_job}))
                elif kind == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "job.progress":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "job.finish":
                    await ws.send(reply(msg, {"status": "completed"}))

        url = await self.start(platform)
        span: contextvars.ContextVar[str | None] = contextvars.ContextVar("span", default=None)
        steps: list[str] = []
        ends: list[tuple[str, Any, bool]] = []

        async def around(job: Any, execute: Callable[[], Awaitable[None]]) -> None:
            token = span.set(f"run of {job.id} under {job.trace['traceparent'][3:35]}")
            steps.append("enter")
            try:
                await execute()
            finally:
                steps.append("exit")
                span.reset(token)

        def carrier() -> dict[str, str] | None:
            current = span.get()
            return {"traceparent": f"00-{current.split(' under ')[1]}-00f067aa0ba902b7-01"} if current else None

        async def on_job(ctx: JobContext) -> dict[str, Any]:
            steps.append(f"handler in {span.get()}")
            await ctx.progress(50)
            return {}

        robot = connect(url, "svc_mk_test", on_job, backoff=FAST, around=around, trace_carrier=carrier,
                        on_job_end=lambda job, status, lost: (steps.append("end"), ends.append((job.id, status, lost))))
        await asyncio.wait_for(robot.ready, 5)
        await self.wait("the run to end", lambda: "exit" in steps)
        self.assertEqual(steps, ["enter", "handler in run of j1 under 0af7651916cd43dd8448eb211c80319c", "end", "exit"])
        self.assertEqual(ends, [("j1", "completed", False)])
        trace = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"}
        self.assertEqual([m.get("trace") for m in self.sent(1, "job.progress") + self.sent(1, "job.finish")], [trace, trace])
        # the acknowledgement goes before the run's execution, outside around: no context to carry
        self.assertEqual([m.get("trace") for m in self.sent(1, "job.started")], [None])
        await robot.close(0.1)

    async def test_pings_keep_a_quiet_connection_alive(self) -> None:
        """A server that only pings (no message) is heard: the connection stays."""
        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome(ping_ms=100))
            async for msg in self.messages(ws, n):
                if msg["type"] == "heartbeat" and len(self.sent(n, "heartbeat")) == 1:
                    await ws.send(reply(msg, owned(msg)))

        url = await self.start(platform, ping_interval=0.1, ping_timeout=None)

        async def on_job(ctx: JobContext) -> None:
            return None

        robot = connect(url, "svc_mk_test", on_job, backoff=FAST)
        await asyncio.wait_for(robot.ready, 5)
        await asyncio.sleep(2)
        self.assertEqual(self.connections, 1)
        await robot.close(0.1)

    async def test_a_refused_key_ends_the_robot_for_good(self) -> None:
        """Close 4001: refused resolves, no other connection is tried."""
        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome())
            async for msg in self.messages(ws, n):
                if msg["type"] == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                    await ws.close(4001, "clave rotada")
                    return

        url = await self.start(platform)

        async def on_job(ctx: JobContext) -> None:
            return None

        robot = connect(url, "svc_mk_test", on_job, backoff=FAST)
        refused = await asyncio.wait_for(robot.refused, 5)
        self.assertEqual(refused, {"why": "key", "reason": "clave rotada"})
        await asyncio.sleep(0.3)
        self.assertEqual(self.connections, 1)

    async def test_an_upgrade_refused_with_retry_after_is_not_tried_again_before_it(self) -> None:
        """429 with Retry-After: 1 — the next try comes at least a second later."""
        tries: list[float] = []

        async def process_request(path: str, headers: Any) -> Any:
            tries.append(time.monotonic())
            if len(tries) == 1:
                return (http.HTTPStatus.TOO_MANY_REQUESTS, [("Retry-After", "1")], b"")
            return None

        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome())
            async for msg in self.messages(ws, n):
                if msg["type"] == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))

        url = await self.start(platform, process_request=process_request)

        async def on_job(ctx: JobContext) -> None:
            return None

        robot = connect(url, "svc_mk_test", on_job, backoff=FAST)
        await asyncio.wait_for(robot.ready, 5)
        self.assertEqual(len(tries), 2)
        self.assertGreaterEqual(tries[1] - tries[0], 1.0)
        await robot.close(0.1)

    async def test_a_stop_in_a_heartbeat_cancels_the_handler_and_ends_the_job_stopped(self) -> None:
        """stop_requested in a heartbeat's answer: the handler is cancelled, job.finish says stopped."""
        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome(heartbeat_ms=100))
            async for msg in self.messages(ws, n):
                kind = msg["type"]
                if kind == "heartbeat":
                    answer = owned(msg)
                    for r in answer["runs"]:
                        r["stop_requested"] = True
                    await ws.send(reply(msg, answer))
                    if len(self.sent(n, "heartbeat")) == 1:
                        await ws.send(json.dumps({"type": "job.start", "job": JOB}))
                elif kind == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "job.finish":
                    await ws.send(reply(msg, {"status": msg["status"]}))

        url = await self.start(platform)
        ends: list[tuple[str, Any, bool]] = []
        reasons: list[Any] = []

        async def on_job(ctx: JobContext) -> None:
            try:
                await asyncio.Event().wait()
            finally:
                reasons.append((ctx.stop_reason, ctx.stopped.is_set()))

        robot = connect(url, "svc_mk_test", on_job, backoff=FAST, on_job_end=lambda job, status, lost: ends.append((job.id, status, lost)))
        await asyncio.wait_for(robot.ready, 5)
        await self.wait("the run to end", lambda: ends)
        self.assertEqual(ends, [("j1", "stopped", False)])
        self.assertEqual(reasons, [("stop", True)])
        self.assertEqual(self.sent(1, "job.finish")[0]["status"], "stopped")
        await robot.close(0.1)

    async def test_a_consumer_settles_reviews_and_failures_and_hands_back_what_it_took_when_stopped(self) -> None:
        """Outcomes ride on the next take; a stop while taking hands the item back; the end counts."""
        items = [{"id": i, "attempt": 1, "reference": None, "data": {"k": i}, "retry_count": 0} for i in ("A", "B", "C")]

        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome())
            async for msg in self.messages(ws, n):
                kind = msg["type"]
                if kind == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                    if len(self.sent(n, "heartbeat")) == 1:
                        await ws.send(json.dumps({"type": "job.start", "job": {**JOB, "queue_id": "q1"}}))
                elif kind == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "items.take":
                    k = len(self.sent(n, "items.take"))
                    settled = [{"id": o["id"], "status": o["status"]} for o in msg["outcomes"]]
                    taken = items[k - 1 : k] if msg["take"] else []
                    await ws.send(reply(msg, {"settled": settled, "items": taken, "released_unknown": 0}))
                    if k == 3:  # a stop comes while the third item is being taken
                        await ws.send(json.dumps({"type": "job.stop", "job_id": "j1", "reason": "stop"}))
                elif kind == "items.release":
                    await ws.send(reply(msg, {"released": len(msg["items"])}))
                elif kind == "job.finish":
                    await ws.send(reply(msg, {"status": msg["status"]}))

        url = await self.start(platform)
        ends: list[tuple[str, Any, bool]] = []
        seen: list[str] = []

        async def on_job(ctx: JobContext) -> None:
            raise AssertionError("a consumer job goes to on_item")

        async def on_item(item: QueueItem, ctx: JobContext) -> Any:
            seen.append(item.id)
            if item.id == "A":
                return Review({"dudoso": True})
            raise ValueError("malo")

        robot = connect(url, "svc_mk_test", on_job, on_item, backoff=FAST, on_job_end=lambda job, status, lost: ends.append((job.id, status, lost)))
        await asyncio.wait_for(robot.ready, 5)
        await self.wait("the run to end", lambda: ends)
        self.assertEqual(ends, [("j1", "stopped", False)])
        self.assertEqual(seen, ["A", "B"])
        takes = self.sent(1, "items.take")
        self.assertEqual([t["outcomes"] for t in takes], [
            [],
            [{"id": "A", "attempt": 1, "status": "pending_review", "result": {"dudoso": True}}],
            [{"id": "B", "attempt": 1, "status": "failed", "error_message": "malo", "exception": "application"}],
        ])
        self.assertEqual([t["take"] for t in takes], [1, 1, 1])
        self.assertEqual([r["items"] for r in self.sent(1, "items.release")], [[{"id": "C", "attempt": 1}]])
        [finish] = self.sent(1, "job.finish")
        self.assertEqual(finish["status"], "stopped")
        self.assertEqual(finish["output_data"], {"items_completed": 0, "items_pending_review": 1, "items_failed": 1})
        await robot.close(0.1)

    async def test_with_liveness_a_silent_run_is_listed_not_alive_and_a_sign_of_life_renews_it(self) -> None:
        """liveness_ms: the heartbeat says alive only while the handler shows signs of life (ctx.alive)."""
        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome(heartbeat_ms=50))
            async for msg in self.messages(ws, n):
                kind = msg["type"]
                if kind == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                    if len(self.sent(n, "heartbeat")) == 1:
                        await ws.send(json.dumps({"type": "job.start", "job": JOB}))
                elif kind == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "job.finish":
                    await ws.send(reply(msg, {"status": msg["status"]}))

        url = await self.start(platform)
        ends: list[tuple[str, Any, bool]] = []
        stuck = asyncio.Event()
        wake = asyncio.Event()

        def flags() -> list[bool]:
            return [r["alive"] for m in self.sent(1, "heartbeat") for r in m["running"]]

        async def on_job(ctx: JobContext) -> None:
            stuck.set()
            await wake.wait()  # silent: no sign of life
            ctx.alive()
            await wake_again.wait()

        wake_again = asyncio.Event()
        robot = connect(url, "svc_mk_test", on_job, backoff=FAST, liveness_ms=300, on_job_end=lambda job, status, lost: ends.append((job.id, status, lost)))
        await asyncio.wait_for(robot.ready, 5)
        await asyncio.wait_for(stuck.wait(), 5)
        await self.wait("a heartbeat listing the silent run as not alive", lambda: False in flags())
        silent = len(flags())
        wake.set()
        await self.wait("a heartbeat listing it alive again", lambda: True in flags()[silent:])
        wake_again.set()
        await self.wait("the run to end", lambda: ends)
        self.assertEqual(ends, [("j1", "completed", False)])
        await robot.close(0.1)

    async def test_a_hand_written_consumer_is_not_cancelled_by_a_stop_and_ends_its_item_first(self) -> None:
        """A queue job run by on_job sees ctx.stopped, finishes the item it holds, and ends as it says."""
        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome())
            async for msg in self.messages(ws, n):
                kind = msg["type"]
                if kind == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                    if len(self.sent(n, "heartbeat")) == 1:
                        await ws.send(json.dumps({"type": "job.start", "job": {**JOB, "queue_id": "q1"}}))
                elif kind == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "items.take":
                    settled = [{"id": o["id"], "status": o["status"]} for o in msg["outcomes"]]
                    taken = [{"id": "A", "attempt": 1, "reference": None, "data": {}, "retry_count": 0}] if msg["take"] else []
                    await ws.send(reply(msg, {"settled": settled, "items": taken, "released_unknown": 0}))
                    if taken:  # a person stops the job while its robot works on the item
                        await ws.send(json.dumps({"type": "job.stop", "job_id": "j1", "reason": "stop"}))
                elif kind == "job.finish":
                    await ws.send(reply(msg, {"status": msg["status"]}))

        url = await self.start(platform)
        ends: list[tuple[str, Any, bool]] = []

        async def on_job(ctx: JobContext) -> Any:
            _settled, [item] = await ctx.take_items([], 1)
            await ctx.stopped.wait()
            await asyncio.sleep(0.05)  # the rest of the item's work, after the stop: a cancelled handler never gets here
            await ctx.take_items([{"id": item.id, "attempt": item.attempt, "status": "completed", "result": {}}], 0)
            return JobEnd(status="stopped" if ctx.stop_reason == "stop" else "completed", output={"done": item.id})

        robot = connect(url, "svc_mk_test", on_job, backoff=FAST, on_job_end=lambda job, status, lost: ends.append((job.id, status, lost)))
        await asyncio.wait_for(robot.ready, 5)
        await self.wait("the run to end", lambda: ends)
        self.assertEqual(ends, [("j1", "stopped", False)])
        self.assertEqual(self.sent(1, "items.take")[-1]["outcomes"], [{"id": "A", "attempt": 1, "status": "completed", "result": {}}])
        self.assertEqual(self.sent(1, "job.finish")[0]["output_data"], {"done": "A"})
        await robot.close(0.1)

    async def scripted(self, jobs: list[dict[str, Any]], items: list[dict[str, Any]], on_job: Any, on_item: Any = None) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
        """Runs ``jobs`` (consumers take ``items``) on a robot; the job.finish of each job by id, and every outcome sent."""
        taken_so_far = [0]

        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome())
            async for msg in self.messages(ws, n):
                kind = msg["type"]
                if kind == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                    if len(self.sent(n, "heartbeat")) == 1:
                        for job in jobs:
                            await ws.send(json.dumps({"type": "job.start", "job": {**JOB, **job}}))
                elif kind == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "items.take":
                    settled = [{"id": o["id"], "status": o["status"]} for o in msg["outcomes"]]
                    taken = items[taken_so_far[0] : taken_so_far[0] + msg["take"]]
                    taken_so_far[0] += len(taken)
                    await ws.send(reply(msg, {"settled": settled, "items": taken, "released_unknown": 0}))
                elif kind == "jobs.waiting":
                    await ws.send(reply(msg, {"waiting": False}))
                elif kind == "job.finish":
                    await ws.send(reply(msg, {"status": msg["status"]}))

        url = await self.start(platform)
        ends: list[str] = []
        robot = connect(url, "svc_mk_test", on_job, on_item, backoff=FAST, on_job_end=lambda job, status, lost: ends.append(job.id))
        await asyncio.wait_for(robot.ready, 5)
        await self.wait("every run to end", lambda: len(ends) == len(jobs))
        await robot.close(0.1)
        finishes = {m["job_id"]: m for m in self.sent(1, "job.finish")}
        outcomes = [o for t in self.sent(1, "items.take") for o in t["outcomes"]]
        return finishes, outcomes

    async def test_an_item_handler_raising_a_business_exception_fails_the_item_as_business_any_other_as_application(self) -> None:
        """exception: business for a BusinessException (or a class named so: a vendored copy), application otherwise, always sent."""
        items = [{"id": i, "attempt": 1, "reference": None, "data": {"raise": i}, "retry_count": 0} for i in ("business", "plain", "vendored", "none", "not-a-dict")]

        async def on_job(ctx: JobContext) -> None:
            raise AssertionError("a consumer job goes to on_item")

        async def on_item(item: QueueItem, ctx: JobContext) -> Any:
            kind = item.data["raise"]
            if kind == "business":
                raise BusinessException("La factura ya está pagada")
            if kind == "plain":
                raise ValueError("El portal no responde")
            if kind == "vendored":
                raise VendoredBusinessException("El cliente no existe")
            if kind == "not-a-dict":
                return [1]
            return {"ok": True}

        _finishes, outcomes = await self.scripted([{"queue_id": "q1"}], items, on_job, on_item)
        self.assertEqual(outcomes, [
            {"id": "business", "attempt": 1, "status": "failed", "error_message": "La factura ya está pagada", "exception": "business"},
            {"id": "plain", "attempt": 1, "status": "failed", "error_message": "El portal no responde", "exception": "application"},
            {"id": "vendored", "attempt": 1, "status": "failed", "error_message": "El cliente no existe", "exception": "business"},
            {"id": "none", "attempt": 1, "status": "completed", "result": {"ok": True}},
            {"id": "not-a-dict", "attempt": 1, "status": "failed", "error_message": "El elemento devolvió list: su resultado debe ser un objeto (dict)", "exception": "application"},
        ])

    async def test_a_job_handler_raising_a_business_exception_fails_the_job_as_business_any_other_as_application(self) -> None:
        """job.finish carries exception: business or application with failed, and none with another status."""
        kinds = ["business", "plain", "vendored", "ended", "ended-plain", "completed", "not-a-dict"]

        async def on_job(ctx: JobContext) -> Any:
            kind = (ctx.job.input or {})["kind"]
            if kind == "business":
                raise BusinessException("El cliente no existe")
            if kind == "plain":
                raise RuntimeError("El portal no responde")
            if kind == "vendored":
                raise VendoredBusinessException("La factura ya está pagada")
            if kind == "ended":
                return JobEnd(status="failed", error="Datos incompletos", exception="business")
            if kind == "ended-plain":
                return JobEnd(status="failed", error="Sin conexión")
            if kind == "not-a-dict":
                return "hecho"
            # a kind with a success means nothing: it is not sent (the platform would refuse the end)
            return JobEnd(status="completed", output={"ok": True}, exception="business")

        finishes, _outcomes = await self.scripted([{"id": k, "input_data": {"kind": k}} for k in kinds], [], on_job)
        self.assertEqual({k: (m["status"], m.get("error_message"), m.get("exception", "(none)")) for k, m in finishes.items()}, {
            "business": ("failed", "El cliente no existe", "business"),
            "plain": ("failed", "El portal no responde", "application"),
            "vendored": ("failed", "La factura ya está pagada", "business"),
            "ended": ("failed", "Datos incompletos", "business"),
            "ended-plain": ("failed", "Sin conexión", "application"),
            "completed": ("completed", None, "(none)"),
            "not-a-dict": ("failed", "El trabajo devolvió str: output_data debe ser un objeto (dict)", "application"),
        })

    def test_business_exception_is_known_by_class_subclass_or_name(self) -> None:
        """is_business_exception: the class, its subclasses, and a class of another copy named BusinessException (or a subclass of one)."""
        class InvoicePaid(BusinessException):
            pass

        class AlreadyPaid(VendoredBusinessException):
            pass

        self.assertEqual(
            [is_business_exception(e) for e in (BusinessException("x"), InvoicePaid("x"), VendoredBusinessException("x"), AlreadyPaid("x"))],
            [True, True, True, True],
        )
        self.assertEqual([is_business_exception(e) for e in (ValueError("x"), Exception("BusinessException"), asyncio.CancelledError())], [False, False, False])


def _vendored() -> type[Exception]:
    """A BusinessException of a second copy of the package (a robot that vendors it): not svc_agent's class."""
    class BusinessException(Exception):  # noqa: N818 - the name is the point
        pass

    return BusinessException


VendoredBusinessException = _vendored()


if __name__ == "__main__":
    unittest.main()
