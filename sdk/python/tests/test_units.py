"""Unit tests of the SDK's pure rules (run by sdk/python/test/readme-robot.test.ts, or with
``/usr/bin/python3 -m unittest discover -s sdk/python/tests -t sdk/python``)."""

from __future__ import annotations

import unittest

from svc_agent import log_chunks, url_refusal
from svc_agent.connection import _retry_after_ms
from svc_agent.run import percent_value
from svc_agent.transport import websocket_url


class LogChunksTest(unittest.TestCase):
    """Log text goes out in appends of at most 64 KiB of UTF-8, cut at line ends, in order."""

    def test_short_text_is_one_chunk(self) -> None:
        self.assertEqual(log_chunks("hola\n"), ["hola\n"])
        self.assertEqual(log_chunks(""), [])

    def test_long_text_is_cut_at_line_ends_within_the_bound(self) -> None:
        line = "ñ" * 99 + "\n"  # 199 bytes
        text = line * 1000
        chunks = log_chunks(text, 1000)
        self.assertEqual("".join(chunks), text)
        for c in chunks:
            self.assertLessEqual(len(c.encode("utf-8")), 1000)
            self.assertTrue(c.endswith("\n"))

    def test_a_line_longer_than_the_bound_is_cut(self) -> None:
        chunks = log_chunks("é" * 5000 + "\nfin\n", 1000)
        for c in chunks:
            self.assertLessEqual(len(c.encode("utf-8")), 1000)
        self.assertEqual(chunks[-1][-4:], "fin\n")


class UrlTest(unittest.TestCase):
    """Plain HTTP only to this machine, unless allowed; http → ws, https → wss."""

    def test_refusals(self) -> None:
        self.assertIsNone(url_refusal("http://127.0.0.1:3000"))
        self.assertIsNone(url_refusal("http://localhost:3000"))
        self.assertIsNone(url_refusal("http://[::1]:3000"))
        self.assertIsNone(url_refusal("https://svc.example.com"))
        self.assertIsNotNone(url_refusal("http://svc.example.com"))
        self.assertIsNone(url_refusal("http://svc.example.com", allow_insecure=True))
        self.assertIsNotNone(url_refusal("ftp://svc.example.com"))

    def test_websocket_url(self) -> None:
        self.assertEqual(websocket_url("http://127.0.0.1:3000/"), "ws://127.0.0.1:3000/api/v1/agent/connect")
        self.assertEqual(websocket_url("https://svc.example.com"), "wss://svc.example.com/api/v1/agent/connect")


class MiscTest(unittest.TestCase):
    """Retry-After and progress values."""

    def test_retry_after(self) -> None:
        self.assertEqual(_retry_after_ms("2"), 2000)
        self.assertEqual(_retry_after_ms(None), 0)
        self.assertEqual(_retry_after_ms("nonsense"), 0)
        self.assertEqual(_retry_after_ms("100000"), 600_000)

    def test_percent(self) -> None:
        self.assertEqual(percent_value(33.4), 33)
        self.assertEqual(percent_value(140), 100)
        self.assertEqual(percent_value(-3), 0)


if __name__ == "__main__":
    unittest.main()
