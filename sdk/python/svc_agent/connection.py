"""
One robot's link to the platform (docs/agent-protocol.md): a WebSocket to one of its base URLs,
opened again with back-off whenever it drops, carrying numbered requests and their replies.

A port of ``packages/agent/src/connection.ts``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import random
import ssl
import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, Awaitable, Callable, cast
from urllib.parse import urlsplit

from websockets.exceptions import ConnectionClosed, InvalidStatusCode

# websockets 10.4+: the asyncio client below is the "legacy" one (still there, deprecated, in 14+)
from websockets.legacy.client import WebSocketClientProtocol
from websockets.legacy.client import connect as _ws_connect

from .transport import FROM_ENVIRONMENT, ProxyError, ProxySetting, open_tunnel, resolve_proxy, websocket_url

__all__ = ["PlatformError", "Timing", "TIMING", "Backoff", "Connection", "monotonic_ms"]


class PlatformError(Exception):
    """An error the platform answered a request with (the API's codes and Spanish messages)."""

    def __init__(self, code: str, message: str, details: Any = None) -> None:
        """Keeps the error's ``code`` (``CONFLICT``, ``NOT_FOUND``, …), its message and details."""
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details

    def __repr__(self) -> str:
        """The error with its code, for logs."""
        return f"PlatformError({self.code!r}, {self.message!r})"


@dataclass(frozen=True)
class Backoff:
    """
    Reconnection: after a working connection dropped, a random delay up to ``spread_ms``; each
    failed try then waits ``min_ms / 2`` plus a random share of a bound that doubles from
    ``min_ms`` up to ``max_ms``.
    """

    min_ms: float = 200
    max_ms: float = 5000
    spread_ms: float = 3000


@dataclass(frozen=True)
class Timing:
    """The robot's side of the protocol's timing rules (docs/agent-protocol.md, "Timing rules")."""

    #: the server's ping period when its welcome names none
    default_ping_ms: float = 15_000
    #: nothing heard for ``2 × ping_ms + silent_margin_ms``: the connection is dead, open another
    silent_margin_ms: float = 1000
    #: a request unanswered this long means the connection is broken although frames still come
    request_timeout_ms: float = 120_000
    #: the WebSocket upgrade
    handshake_timeout_ms: float = 10_000
    #: reconnecting (see Backoff)
    reconnect: Backoff = Backoff()


#: The timing rules as this package ships them.
TIMING = Timing()

#: Largest message the platform accepts or sends.
MAX_MESSAGE_BYTES = 1024 * 1024


def monotonic_ms() -> float:
    """The monotonic clock, in milliseconds (every deadline of the robot is measured on it)."""
    return time.monotonic() * 1000


def _retry_after_ms(value: str | None) -> float:
    """A Retry-After header (seconds, or an HTTP date) in ms; 0 when absent or unreadable."""
    if not value:
        return 0
    try:
        ms = float(value) * 1000
    except ValueError:
        try:
            ms = (parsedate_to_datetime(value).timestamp() - time.time()) * 1000
        except (TypeError, ValueError, IndexError, OverflowError):
            return 0
    if not math.isfinite(ms) or ms <= 0:
        return 0
    return min(ms, 10 * 60_000)


def _consume_result(fut: asyncio.Future[Any]) -> None:
    """Marks a future's exception as retrieved (nobody may be waiting for a request any more)."""
    if not fut.cancelled():
        fut.exception()


class _HeardProtocol(WebSocketClientProtocol):
    """The websockets client protocol, telling when any frame (a ping included) comes in."""

    def __init__(self, *, on_heard: Callable[[], None], **kwargs: Any) -> None:
        """``on_heard`` is called for every frame read from the server."""
        super().__init__(**kwargs)
        self._on_heard = on_heard

    async def read_frame(self, max_size: int | None) -> Any:
        """Reads one frame (data or control) and tells that the server was heard."""
        frame = await super().read_frame(max_size)
        self._on_heard()
        return frame


@dataclass(eq=False)
class Pending:
    """A request waiting for its reply (or for a connection to go out on)."""

    message: dict[str, Any]
    future: asyncio.Future[Any]
    #: not asked again on the next connection: its answer is only worth having from this one
    once: bool = False
    #: told each time the request goes out (monotonic ms), a repeat included
    on_sent: Callable[[float], None] | None = None
    #: when it last went out on a socket (monotonic ms)
    sent_at: float | None = None
    #: given up by its caller (its run was lost): never sent again, no longer waited for
    abandoned: bool = False


WelcomeHandler = Callable[[dict[str, Any]], Awaitable[None]]
PushHandler = Callable[[dict[str, Any]], None]
DisconnectedHandler = Callable[[int, str, float], None]
RefusedHandler = Callable[[str, str], None]


class Connection:
    """
    A WebSocket to one of ``urls``, opened again with exponential back-off and full jitter
    whenever it drops (each try moves to the next URL). Requests wait for an open, welcomed
    connection; a request whose answer was lost with its connection is sent again on the next one
    marked ``repeat: true``.

    A connection that has not closed is not taken for alive: :meth:`check` (called on the robot's
    clock) destroys one from which nothing came (no message, no ping) for twice the server's ping
    period plus a second, or whose oldest request went unanswered for 120 s, and opens another.
    """

    def __init__(
        self,
        urls: list[str],
        machine_key: str,
        *,
        on_welcome: WelcomeHandler,
        on_push: PushHandler,
        on_disconnected: DisconnectedHandler,
        on_refused: RefusedHandler,
        backoff: Backoff = TIMING.reconnect,
        ssl_context: ssl.SSLContext | None = None,
        proxy: ProxySetting = FROM_ENVIRONMENT,
        logger: logging.Logger | None = None,
    ) -> None:
        """
        Prepares the link; nothing is opened before :meth:`open`. ``proxy`` is the outbound HTTP
        proxy to tunnel through (``http://user:password@proxy:3128``), None for never, or (the
        default) :data:`~svc_agent.transport.FROM_ENVIRONMENT`: read from ``HTTPS_PROXY`` /
        ``HTTP_PROXY`` / ``ALL_PROXY`` and ``NO_PROXY`` at each connection.
        """
        self._urls = urls
        self._machine_key = machine_key
        self._on_welcome = on_welcome
        self._on_push = on_push
        self._on_disconnected = on_disconnected
        self._on_refused = on_refused
        self._backoff = backoff
        self._ssl = ssl_context
        self._proxy = proxy
        self._log = logger or logging.getLogger("svc_agent")
        self._ws: _HeardProtocol | None = None
        self._outbox: asyncio.Queue[str] | None = None
        self._ready = False
        self._next_id = 1
        self._in_flight: dict[int, Pending] = {}
        self._queue: list[Pending] = []
        self._attempt = 0
        self._url_index = 0
        self._closed = False
        #: the robot said bye: the server's normal close that follows is no disconnection
        self._leaving = False
        self._task: asyncio.Task[None] | None = None
        self._last_heard = 0.0
        self._silent_after_ms = 2 * TIMING.default_ping_ms + TIMING.silent_margin_ms
        self._cut_reason = ""
        self._welcomed_here = False
        self._retry_after_ms = 0.0
        self._background: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ lifecycle

    def open(self) -> None:
        """Starts connecting (and reconnecting) in the running event loop."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="svc_agent connection")

    @property
    def is_ready(self) -> bool:
        """Whether a welcomed connection is open (a request now goes out at once)."""
        return self._ready

    @property
    def closed(self) -> bool:
        """Whether the link was closed for good (by :meth:`close` or a refusal)."""
        return self._closed

    async def _run(self) -> None:
        while not self._closed:
            base = self._urls[self._url_index % len(self._urls)]
            self._url_index += 1
            self._cut_reason = ""
            self._retry_after_ms = 0
            self._welcomed_here = False
            self._silent_after_ms = 2 * TIMING.default_ping_ms + TIMING.silent_margin_ms
            code, reason, refused_status = 1006, "", 0
            try:
                ws = await self._open_websocket(base)
            except asyncio.CancelledError:
                raise
            except InvalidStatusCode as err:
                refused_status = err.status_code
                self._retry_after_ms = _retry_after_ms(err.headers.get("Retry-After"))
                reason = f"HTTP {err.status_code}"
            except asyncio.TimeoutError:
                reason = "the WebSocket upgrade timed out"
            except Exception as err:  # noqa: BLE001 - any failure to connect is retried
                reason = str(err) or type(err).__name__
            else:
                code, reason = await self._serve(ws)
            if self._closed or (self._leaving and code == 1000):
                return
            if refused_status == 401 or code in (4001, 4002):
                why = "replaced" if code == 4002 else "key"
                self._closed = True
                self._fail_all(
                    PlatformError("UNAUTHORIZED", f"the platform refused the machine key ({reason})")
                    if why == "key"
                    else PlatformError("REPLACED", f"the machine connected from elsewhere with the same key ({reason})")
                )
                self._on_refused(reason, why)
                return
            # a connection that was up and dropped: every robot of a replica that died comes back
            # at once, so the first try is spread over `spread_ms`
            retry_in = self._spread_delay() if self._welcomed_here and code != 1000 else self._retry_delay()
            self._on_disconnected(code, reason, retry_in)
            await asyncio.sleep(retry_in / 1000)

    async def _open_websocket(self, base: str) -> _HeardProtocol:
        """
        The WebSocket to ``base``, direct or through the proxy's tunnel; the tunnel, TLS and the
        upgrade all within the handshake timeout (as the TypeScript robot's, which counts from
        the request).
        """
        url = websocket_url(base)
        secure = url.startswith("wss:")
        kwargs: dict[str, Any] = {}
        if secure and self._ssl is not None:
            kwargs["ssl"] = self._ssl
        timeout = TIMING.handshake_timeout_ms / 1000
        started = time.monotonic()
        sock = None
        # chosen by the http(s) base URL, as the TypeScript robot does: HTTPS_PROXY for https
        proxy = resolve_proxy(base, self._proxy)
        if proxy is not None:
            parsed = urlsplit(url)
            host = parsed.hostname or ""
            port = parsed.port or (443 if secure else 80)
            try:
                sock = await asyncio.wait_for(open_tunnel(proxy, host, port), timeout)
            except asyncio.TimeoutError:
                raise ProxyError(f"the proxy did not open a tunnel to {host}:{port} within {timeout:g} s") from None
            kwargs["sock"] = sock
            if secure:
                # the socket carries no host: TLS is verified against the platform's, not the proxy's
                kwargs["server_hostname"] = host
        # the tunnel is asyncio's from the moment the connection starts (it is closed with its
        # transport on any failure); until then it is ours to close
        try:
            remaining = timeout - (time.monotonic() - started)
            if remaining <= 0:
                raise asyncio.TimeoutError()
            connecting = _ws_connect(
                url,
                create_protocol=functools.partial(_HeardProtocol, on_heard=self._heard),
                extra_headers={"Authorization": f"Bearer {self._machine_key}"},
                ping_interval=None,
                max_size=MAX_MESSAGE_BYTES,
                open_timeout=remaining,
                close_timeout=2,
                compression=None,
                **kwargs,
            )
        except BaseException:
            if sock is not None:
                sock.close()
            raise
        return cast(_HeardProtocol, await connecting)

    async def _serve(self, ws: _HeardProtocol) -> tuple[int, str]:
        """Reads one open connection until it closes; returns its close code and reason."""
        self._ws = ws
        self._heard()
        outbox: asyncio.Queue[str] = asyncio.Queue()
        self._outbox = outbox
        writer = asyncio.get_running_loop().create_task(self._write_loop(ws, outbox))
        try:
            async for raw in ws:
                if isinstance(raw, str):
                    self._on_message(raw, ws)
        except ConnectionClosed:
            pass
        except Exception as err:  # noqa: BLE001 - whatever broke the connection, it is opened again
            self._cut_reason = self._cut_reason or f"{type(err).__name__}: {err}"
        finally:
            writer.cancel()
            self._ready = False
            self._ws = None
            self._outbox = None
            # answers lost with the connection: asked again on the next one, marked as repeats
            in_flight = list(self._in_flight.values())
            self._in_flight.clear()
            for p in in_flight:
                if p.once:
                    self._fail(p, PlatformError("CONNECTION_LOST", "the connection dropped before the answer"))
            lost = [p for p in in_flight if not p.once and not p.abandoned and not p.future.done()]
            for p in lost:
                p.message = {**p.message, "repeat": True}
            self._queue = lost + self._queue
            transport = ws.transport
            if transport is not None and not transport.is_closing():
                transport.abort()
        try:
            await asyncio.wait_for(asyncio.shield(ws.wait_closed()), 3)
        except (asyncio.TimeoutError, Exception):  # noqa: BLE001
            pass
        code = ws.close_code if ws.close_code is not None else 1006
        reason = ws.close_reason or self._cut_reason
        return code, reason

    async def _write_loop(self, ws: _HeardProtocol, outbox: asyncio.Queue[str]) -> None:
        """Writes the connection's messages in the order they were sent."""
        try:
            while True:
                data = await outbox.get()
                await ws.send(data)
        except ConnectionClosed:
            pass
        except asyncio.CancelledError:
            raise
        except Exception as err:  # noqa: BLE001
            self._cut(f"writing failed: {err}")

    def _heard(self) -> None:
        self._last_heard = monotonic_ms()

    def check(self, now: float) -> None:
        """
        Destroys a connection that went silent (see the class docstring); its close opens the
        next one. ``now`` is :func:`monotonic_ms`.
        """
        ws = self._ws
        if ws is None or not ws.open:
            return
        if now - self._last_heard > self._silent_after_ms:
            self._cut(f"nothing heard from the platform for {round(now - self._last_heard)} ms")
            return
        for p in self._in_flight.values():
            if p.sent_at is not None and now - p.sent_at > TIMING.request_timeout_ms:
                self._cut(f"a {p.message.get('type')} request unanswered for {round(now - p.sent_at)} ms")
                return

    def _cut(self, reason: str) -> None:
        """Destroys the current socket at once (no closing handshake over a dead network)."""
        ws = self._ws
        if ws is None:
            return
        self._cut_reason = reason
        transport = ws.transport
        if transport is not None:
            transport.abort()

    def _retry_delay(self) -> float:
        cap = float(min(self._backoff.max_ms, self._backoff.min_ms * 2.0 ** min(self._attempt, 20)))
        self._attempt += 1
        delay = self._backoff.min_ms / 2 + random.random() * cap
        # a server that said when to come back: not before, and spread over a second after it
        if self._retry_after_ms > 0:
            return max(delay, self._retry_after_ms + random.random() * 1000)
        return delay

    def _spread_delay(self) -> float:
        delay = random.random() * self._backoff.spread_ms
        if self._retry_after_ms > 0:
            return max(delay, self._retry_after_ms + random.random() * 1000)
        return delay

    # ------------------------------------------------------------------ messages

    def _on_message(self, raw: str, ws: _HeardProtocol) -> None:
        try:
            msg = json.loads(raw)
        except ValueError:
            return
        if not isinstance(msg, dict):
            return
        kind = msg.get("type")
        if kind == "welcome":
            self._attempt = 0
            self._welcomed_here = True
            ping_ms = msg.get("ping_ms")
            if not isinstance(ping_ms, (int, float)) or isinstance(ping_ms, bool) or ping_ms <= 0:
                ping_ms = TIMING.default_ping_ms
            self._silent_after_ms = 2 * ping_ms + TIMING.silent_margin_ms
            self._spawn(self._welcome(msg, ws))
            return
        if kind == "reply":
            re = msg.get("re")
            pending = self._in_flight.pop(re, None) if isinstance(re, int) and not isinstance(re, bool) else None
            if pending is None:
                return
            error = msg.get("error")
            if isinstance(error, dict):
                code = str(error.get("code"))
                if code == "RATE_LIMIT_EXCEEDED":
                    # over the connection's message rate: the request was not run; sent again once
                    # the second turns
                    details = error.get("details") if isinstance(error.get("details"), dict) else {}
                    wait = details.get("retry_after_ms") if isinstance(details, dict) else None
                    wait_ms = float(wait) if isinstance(wait, (int, float)) and wait > 0 else 1000.0
                    asyncio.get_running_loop().call_later(
                        (min(wait_ms, 1000) + random.random() * 50) / 1000, self._send_or_queue, pending
                    )
                else:
                    self._fail(pending, PlatformError(code, str(error.get("message", "")), error.get("details")))
            else:
                if not pending.future.done():
                    pending.future.set_result(msg.get("result"))
            return
        if isinstance(kind, str):
            try:
                self._on_push(msg)
            except Exception:  # noqa: BLE001 - a faulty handler must not end the connection
                self._log.exception("handling a %s push failed", kind)

    async def _welcome(self, msg: dict[str, Any], ws: _HeardProtocol) -> None:
        try:
            await self._on_welcome(msg)
        except Exception as err:  # noqa: BLE001
            # a welcome that failed ends its own connection, never a newer one
            if self._ws is ws:
                self._cut(f"the welcome failed: {err}")
            return
        if self._ws is ws and not self._closed:
            self._ready = True
            self._flush()

    def _send_or_queue(self, p: Pending) -> None:
        """Sends ``p`` on the welcomed connection, or queues it until one is; a ``once`` request
        (its answer only worth having from one connection) fails instead of waiting."""
        if self._closed:
            self._fail(p, PlatformError("CLOSED", "the robot is closed"))
        elif p.once:
            self._fail(p, PlatformError("RATE_LIMIT_EXCEEDED", "over the connection's message rate"))
        elif self._ready:
            self._send(p)
        else:
            self._queue.append(p)

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ requests

    def _new(self, message: dict[str, Any], *, once: bool = False, on_sent: Callable[[float], None] | None = None) -> Pending:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        fut.add_done_callback(_consume_result)
        return Pending(message=message, future=fut, once=once, on_sent=on_sent)

    def request(self, message: dict[str, Any], *, on_sent: Callable[[float], None] | None = None) -> Pending:
        """
        A request sent once a welcomed connection is open (at once when one is), and sent again
        on the next connection when its answer is lost. Await ``.future`` for the result; it
        raises :class:`PlatformError` for an error reply.
        """
        p = self._new(message, on_sent=on_sent)
        self._send_or_queue(p)
        return p

    def request_now(self, message: dict[str, Any]) -> Pending:
        """A request on the connection being welcomed (the first heartbeat), never asked again."""
        p = self._new(message, once=True)
        self._send(p)
        return p

    def request_once(self, message: dict[str, Any]) -> Pending:
        """
        A request on the welcomed connection open now, never queued nor asked again on another one
        (a heartbeat: the next one is due anyway); fails at once when no connection is ready.
        """
        p = self._new(message, once=True)
        if not self._ready:
            self._fail(p, PlatformError("NOT_CONNECTED", "no connection to the platform"))
        else:
            self._send(p)
        return p

    def abandon(self, p: Pending, error: PlatformError) -> None:
        """Gives a request up: never sent (again), its future fails with ``error``."""
        p.abandoned = True
        if p in self._queue:
            self._queue.remove(p)
        self._fail(p, error)

    def _send(self, p: Pending) -> None:
        if p.abandoned or p.future.done():
            return
        ws, outbox = self._ws, self._outbox
        if ws is None or outbox is None or not ws.open:
            if p.once:
                self._fail(p, PlatformError("NOT_CONNECTED", "no connection to the platform"))
            else:
                self._queue.append(p)
            return
        rid = self._next_id
        self._next_id += 1
        try:
            data = json.dumps({**p.message, "id": rid}, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as err:
            self._fail(p, PlatformError("VALIDATION_ERROR", f"the message is not JSON: {err}"))
            return
        p.sent_at = monotonic_ms()
        self._in_flight[rid] = p
        outbox.put_nowait(data)
        if p.on_sent is not None:
            p.on_sent(p.sent_at)

    def _flush(self) -> None:
        queued, self._queue = self._queue, []
        for p in queued:
            self._send(p)

    @staticmethod
    def _fail(p: Pending, err: BaseException) -> None:
        if not p.future.done():
            p.future.set_exception(err)

    def _fail_all(self, err: PlatformError) -> None:
        for p in [*self._in_flight.values(), *self._queue]:
            self._fail(p, err)
        self._in_flight.clear()
        self._queue = []

    def leaving(self) -> None:
        """The robot is saying bye: a normal close of the connection is expected, not retried."""
        self._leaving = True

    async def close(self) -> None:
        """Closes for good: what is still waiting is refused, the socket closed normally."""
        self._closed = True
        self._ready = False
        self._fail_all(PlatformError("CLOSED", "the robot is closed"))
        ws = self._ws
        if ws is not None:
            try:
                await asyncio.wait_for(ws.close(1000, "bye"), 3)
            except (asyncio.TimeoutError, Exception):  # noqa: BLE001
                if ws.transport is not None:
                    ws.transport.abort()
        task = self._task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
