"""
The simulator's runs against a scripted platform (the rest of it is tested as a process against
the real platform: the *.python.test.ts variants of the robot suites).
"""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
from datetime import datetime, timedelta, timezone
from typing import Any

from websockets.legacy.server import WebSocketServerProtocol

from svc_agent.sim.__main__ import MachineRobot
from svc_agent.sim.journal import Journal
from svc_agent.sim.options import parse_options

from .test_fake_platform import JOB, FakePlatformTest, owned, reply, welcome


class SimulatorTest(FakePlatformTest):
    """One simulated machine on a scripted platform."""

    async def test_a_consumer_timed_out_while_its_take_is_out_counts_the_answer_and_hands_the_items_back(self) -> None:
        """The take's answer comes after the job's timeout: what it settled is counted, what it gave is released."""
        timeout_at = (datetime.now(timezone.utc) + timedelta(seconds=0.4)).isoformat()
        items = [{"id": i, "attempt": 1, "reference": None, "data": {}, "retry_count": 0} for i in ("A", "B", "C")]

        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome())
            async for msg in self.messages(ws, n):
                kind = msg["type"]
                if kind == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                    if len(self.sent(n, "heartbeat")) == 1:
                        await ws.send(json.dumps({"type": "job.start", "job": {**JOB, "queue_id": "q1", "timeout_at": timeout_at, "timeout_seconds": 1}}))
                elif kind == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "items.take":
                    k = len(self.sent(n, "items.take"))
                    settled = [{"id": o["id"], "status": o["status"]} for o in msg["outcomes"]]
                    if k == 1:
                        await ws.send(reply(msg, {"settled": settled, "items": items[:1], "released_unknown": 0}))
                    elif k == 2:
                        # answered after the job's own time ran out on the robot
                        await asyncio.sleep(0.8)
                        await ws.send(reply(msg, {"settled": settled, "items": items[1:], "released_unknown": 0}))
                    else:
                        await ws.send(reply(msg, {"settled": settled, "items": [], "released_unknown": 0}))
                elif kind == "items.release":
                    await ws.send(reply(msg, {"released": len(msg["items"])}))
                elif kind == "job.progress":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "job.finish":
                    await ws.send(reply(msg, {"status": msg["status"]}))

        url = await self.start(platform)
        options = parse_options(["--machine-key", "svc_mk_test", "--item-duration", "1ms", "--prefetch", "2"], {"SVC_URL": url})
        with tempfile.NamedTemporaryFile(suffix=".jsonl") as journal_file:
            journal = Journal(journal_file.name)
            machine = MachineRobot(options, "svc_mk_test", journal, [0], logging.getLogger("svc_agent"))
            await asyncio.wait_for(machine.start(), 5)
            await self.wait("the run to end", lambda: self.sent(1, "job.finish"), timeout=10)
            [finish] = self.sent(1, "job.finish")
            self.assertEqual(finish["status"], "timed_out")
            takes = self.sent(1, "items.take")
            # A's outcome went with the second take, whose answer came late: it is counted, not sent again
            self.assertEqual([[o["id"] for o in t["outcomes"]] for t in takes], [[], ["A"]])
            self.assertEqual([[i["id"] for i in r["items"]] for r in self.sent(1, "items.release")], [["B", "C"]])
            self.assertEqual(finish["output_data"]["items_completed"], 1)
            self.assertEqual(finish["output_data"]["items_refused"], 0)
            assert machine.robot is not None
            await machine.robot.close(0.1)
            journal.close()

    async def test_business_failures_carry_their_kind_message_log_line_and_journal_lines(self) -> None:
        """business_failure_rate 1: the job and its items fail as business; a forced failure is application unless it says business."""
        items = [{"id": i, "attempt": 1, "reference": None, "data": d, "retry_count": 0} for i, d in (
            ("drawn", {}),
            ("forced", {"_sim": {"outcome": "fail"}}),
            ("forced-business", {"_sim": {"outcome": "fail", "exception": "business", "error_message": "Cliente inexistente"}}),
        )]

        async def platform(ws: WebSocketServerProtocol, n: int) -> None:
            await ws.send(welcome())
            async for msg in self.messages(ws, n):
                kind = msg["type"]
                if kind == "heartbeat":
                    await ws.send(reply(msg, owned(msg)))
                    if len(self.sent(n, "heartbeat")) == 1:
                        await ws.send(json.dumps({"type": "job.start", "job": {**JOB, "id": "consumer", "queue_id": "q1"}}))
                        await ws.send(json.dumps({"type": "job.start", "job": {**JOB, "id": "job"}}))
                elif kind == "job.started":
                    await ws.send(reply(msg, {"stop_requested": False}))
                elif kind == "items.take":
                    k = len(self.sent(n, "items.take"))
                    settled = [{"id": o["id"], "status": o["status"]} for o in msg["outcomes"]]
                    await ws.send(reply(msg, {"settled": settled, "items": items[k - 1 : k] if msg["take"] else [], "released_unknown": 0}))
                elif kind in ("job.progress", "jobs.waiting"):
                    await ws.send(reply(msg, {"stop_requested": False, "waiting": False}))
                elif kind == "job.finish":
                    await ws.send(reply(msg, {"status": msg["status"]}))

        url = await self.start(platform)
        argv = ["--machine-key", "svc_mk_test", "--duration", "1ms", "--item-duration", "1ms", "--prefetch", "1", "--progress-steps", "1"]
        options = parse_options(argv, {"SVC_URL": url, "AGENT_BUSINESS_FAILURE_RATE": "1"})
        with tempfile.NamedTemporaryFile(suffix=".jsonl") as journal_file:
            journal = Journal(journal_file.name)
            machine = MachineRobot(options, "svc_mk_test", journal, [0], logging.getLogger("svc_agent"))
            await asyncio.wait_for(machine.start(), 5)
            await self.wait("both runs to end", lambda: len(self.sent(1, "job.finish")) == 2, timeout=10)
            outcomes = [o for t in self.sent(1, "items.take") for o in t["outcomes"]]
            self.assertEqual([(o["id"], o["status"], o["error_message"], o["exception"]) for o in outcomes], [
                ("drawn", "failed", "Error de negocio simulado: los datos no son válidos", "business"),
                ("forced", "failed", "Error simulado del robot", "application"),
                ("forced-business", "failed", "Cliente inexistente", "business"),
            ])
            finishes = {f["job_id"]: f for f in self.sent(1, "job.finish")}
            self.assertEqual((finishes["job"]["status"], finishes["job"]["error_message"], finishes["job"]["exception"]), ("failed", "Error de negocio simulado: los datos no son válidos", "business"))
            self.assertIn("Error de negocio: Error de negocio simulado", finishes["job"]["log"]["text"])
            self.assertEqual(finishes["consumer"]["status"], "completed")
            self.assertNotIn("exception", finishes["consumer"])
            assert machine.robot is not None
            await machine.robot.close(0.1)
            journal.close()
            with open(journal_file.name, encoding="utf-8") as f:
                lines = [json.loads(line) for line in f]
            ends = [(e.get("item_id") or e["job_id"], e.get("outcome") or e.get("status"), e.get("exception")) for e in lines if e["event"] in ("item-end", "job-end")]
            self.assertEqual(sorted(ends, key=str), sorted([
                ("drawn", "failed", "business"), ("forced", "failed", "application"), ("forced-business", "failed", "business"),
                ("job", "failed", "business"), ("consumer", "completed", None),
            ], key=str))
