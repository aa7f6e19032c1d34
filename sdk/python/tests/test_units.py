"""Unit tests of the SDK's pure rules (run by sdk/python/test/readme-robot.test.ts, or with
``/usr/bin/python3 -m unittest discover -s sdk/python/tests -t sdk/python``)."""

from __future__ import annotations

import asyncio
import base64
import unittest

from svc_agent import log_chunks, url_refusal
from svc_agent.connection import _retry_after_ms
from svc_agent.run import percent_value
from svc_agent.transport import FROM_ENVIRONMENT, ProxyError, connect_request, open_tunnel, proxy_for_url, resolve_proxy, websocket_url


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


class ProxyChoiceTest(unittest.TestCase):
    """The proxy from the environment, by the TypeScript robot's rules (proxy-from-env)."""

    P = "http://proxy:3128"

    def test_by_the_base_urls_scheme(self) -> None:
        env = {"HTTPS_PROXY": "http://secure:1", "HTTP_PROXY": "http://plain:2"}
        self.assertEqual(proxy_for_url("https://svc.example.com", env), "http://secure:1")
        self.assertEqual(proxy_for_url("http://svc.example.com", env), "http://plain:2")
        self.assertEqual(proxy_for_url("https://svc.example.com", {"HTTP_PROXY": self.P}), "")
        self.assertEqual(proxy_for_url("https://svc.example.com", {"ALL_PROXY": self.P}), self.P)
        self.assertEqual(proxy_for_url("https://svc.example.com", {"all_proxy": "http://all:1", "HTTPS_PROXY": self.P}), self.P)
        self.assertEqual(proxy_for_url("https://svc.example.com", {}), "")

    def test_lower_case_first(self) -> None:
        env = {"https_proxy": "http://lower:1", "HTTPS_PROXY": "http://upper:2"}
        self.assertEqual(proxy_for_url("https://svc.example.com", env), "http://lower:1")
        env = {"HTTPS_PROXY": self.P, "no_proxy": "svc.example.com", "NO_PROXY": "other"}
        self.assertEqual(proxy_for_url("https://svc.example.com", env), "")

    def test_a_proxy_without_scheme_is_plain_http(self) -> None:
        self.assertEqual(proxy_for_url("https://svc.example.com", {"HTTPS_PROXY": "proxy:3128"}), self.P)

    def test_no_proxy_hosts(self) -> None:
        def via(url: str, no_proxy: str) -> bool:
            return proxy_for_url(url, {"HTTPS_PROXY": self.P, "HTTP_PROXY": self.P, "NO_PROXY": no_proxy}) != ""

        self.assertFalse(via("https://svc.example.com", "*"))
        self.assertFalse(via("https://svc.example.com", "other.org, svc.example.com"))
        self.assertFalse(via("https://svc.example.com", "other.org svc.example.com"))
        self.assertFalse(via("https://SVC.Example.com", "svc.EXAMPLE.com"))
        self.assertFalse(via("https://127.0.0.1:8443", "127.0.0.1"))
        # an exact host is that host alone; a leading . or * makes a suffix, which the bare domain is not
        self.assertTrue(via("https://svc.example.com", "example.com"))
        self.assertFalse(via("https://svc.example.com", ".example.com"))
        self.assertFalse(via("https://svc.example.com", "*.example.com"))
        self.assertFalse(via("https://svc.example.com", "*example.com"))
        self.assertTrue(via("https://example.com", ".example.com"))
        self.assertTrue(via("https://svc.example.com", "example.internal"))
        self.assertTrue(via("https://svc.example.com", ""))
        self.assertTrue(via("https://svc.example.com", " , "))

    def test_no_proxy_ports(self) -> None:
        def via(url: str, no_proxy: str) -> bool:
            return proxy_for_url(url, {"HTTPS_PROXY": self.P, "HTTP_PROXY": self.P, "NO_PROXY": no_proxy}) != ""

        self.assertFalse(via("https://svc.example.com:8443", "svc.example.com:8443"))
        self.assertTrue(via("https://svc.example.com:8443", "svc.example.com:443"))
        # the scheme's port when the URL names none
        self.assertFalse(via("https://svc.example.com", "svc.example.com:443"))
        self.assertFalse(via("http://svc.example.com", "svc.example.com:80"))
        self.assertTrue(via("http://svc.example.com", "svc.example.com:443"))
        self.assertFalse(via("https://[::1]:8443", "[::1]"))
        self.assertFalse(via("https://[::1]:8443", "[::1]:8443"))

    def test_given_or_never(self) -> None:
        env = {"HTTPS_PROXY": self.P}
        self.assertEqual(resolve_proxy("https://svc.example.com", FROM_ENVIRONMENT, env), self.P)
        self.assertIsNone(resolve_proxy("https://svc.example.com", None, env))
        self.assertIsNone(resolve_proxy("https://svc.example.com", "", env))
        self.assertEqual(resolve_proxy("https://svc.example.com", "http://other:1", {"NO_PROXY": "*"}), "http://other:1")
        self.assertIsNone(resolve_proxy("https://svc.example.com", FROM_ENVIRONMENT, {**env, "NO_PROXY": "*"}))


class TunnelTest(unittest.TestCase):
    """The CONNECT request, and a proxy's answers."""

    def test_request_with_credentials(self) -> None:
        req = connect_request("http://ana:p%40ss@proxy:3128", "svc.example.com", 443).decode()
        self.assertTrue(req.startswith("CONNECT svc.example.com:443 HTTP/1.1\r\nHost: svc.example.com:443\r\n"))
        self.assertIn("Proxy-Authorization: Basic " + base64.b64encode(b"ana:p@ss").decode(), req)
        self.assertTrue(req.endswith("\r\n\r\n"))
        self.assertNotIn("Proxy-Authorization", connect_request("http://proxy:3128", "::1", 8443).decode())
        self.assertTrue(connect_request("http://proxy:3128", "::1", 8443).startswith(b"CONNECT [::1]:8443 HTTP/1.1\r\n"))

    def _through(self, answer: bytes, proxy_url: str = "http://127.0.0.1:{port}") -> tuple[bytes, bytes]:
        """What a proxy answering ``answer`` was asked, and what the tunnel then read first."""

        async def main() -> tuple[bytes, bytes]:
            asked = asyncio.get_running_loop().create_future()

            async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                asked.set_result(await reader.readuntil(b"\r\n\r\n"))
                try:
                    writer.write(answer + b"from the platform")
                    await writer.drain()
                    await reader.read()
                except ConnectionError:
                    pass  # a refused tunnel is closed with the platform's bytes unread: a reset
                writer.close()

            server = await asyncio.start_server(handle, "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            try:
                sock = await asyncio.wait_for(open_tunnel(proxy_url.format(port=port), "svc.example.com", 443), 5)
                try:
                    first = await asyncio.get_running_loop().sock_recv(sock, 100)
                finally:
                    sock.close()
                return await asyncio.wait_for(asked, 5), first
            finally:
                server.close()

        return asyncio.run(main())

    def test_a_tunnel_reads_nothing_past_the_answer(self) -> None:
        asked, first = self._through(b"HTTP/1.1 200 Connection Established\r\nVia: test\r\n\r\n", "http://ana:x@127.0.0.1:{port}")
        self.assertTrue(asked.startswith(b"CONNECT svc.example.com:443 HTTP/1.1\r\n"))
        self.assertIn(b"Proxy-Authorization: Basic ", asked)
        self.assertEqual(first, b"from the platform")

    def test_a_refusal_says_the_status(self) -> None:
        with self.assertRaisesRegex(ProxyError, r"refused CONNECT svc.example.com:443: HTTP/1.1 407 Proxy Authentication Required"):
            self._through(b"HTTP/1.1 407 Proxy Authentication Required\r\n\r\n")
        with self.assertRaisesRegex(ProxyError, r"no HTTP status"):
            self._through(b"SSH-2.0-OpenSSH\r\n\r\n")

    def test_unusable_proxies(self) -> None:
        with self.assertRaisesRegex(ProxyError, r"not an http:// URL"):
            asyncio.run(open_tunnel("https://ana:secret@proxy:3128", "svc.example.com", 443))
        try:
            asyncio.run(open_tunnel("https://ana:secret@proxy:3128", "svc.example.com", 443))
        except ProxyError as err:
            self.assertNotIn("secret", str(err))
        with self.assertRaisesRegex(ProxyError, r"could not be reached"):
            asyncio.run(open_tunnel("http://127.0.0.1:1", "svc.example.com", 443))


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
