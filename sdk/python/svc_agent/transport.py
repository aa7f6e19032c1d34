"""
How a robot reaches the platform: which base URLs it may use, their WebSocket address, and the
outbound proxy (an HTTP ``CONNECT`` tunnel) a customer's network may require.
"""

from __future__ import annotations

import asyncio
import base64
import enum
import os
import re
import socket
from typing import Mapping, Union
from urllib.parse import unquote, urlsplit

__all__ = [
    "FROM_ENVIRONMENT",
    "FromEnvironment",
    "ProxyError",
    "is_loopback_host",
    "open_tunnel",
    "proxy_for_url",
    "resolve_proxy",
    "url_refusal",
    "websocket_url",
]

_IPV4_LOOPBACK = re.compile(r"^127(\.\d{1,3}){3}$")


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a URL's hostname) is this machine."""
    h = host.strip("[]").lower()
    return h == "localhost" or h.endswith(".localhost") or h == "::1" or bool(_IPV4_LOOPBACK.match(h))


def url_refusal(url: str, allow_insecure: bool = False) -> str | None:
    """
    Why ``url`` may not be used, or None when it may.

    Refused: anything but an http(s) URL, and a plain ``http://`` URL to a host other than this
    one unless ``allow_insecure`` (the machine key and every credential a run reads would cross
    the network in clear).
    """
    try:
        parsed = urlsplit(url)
    except ValueError:
        return f'"{url}" is not an http(s) URL'
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return f'"{url}" is not an http(s) URL'
    if parsed.scheme == "http" and not allow_insecure and not is_loopback_host(parsed.hostname):
        return f'"{url}" is plain HTTP to another host: use https://, or allow it explicitly (allow_insecure=True)'
    return None


def websocket_url(base: str) -> str:
    """The robot endpoint of a platform base URL: http → ws, https → wss."""
    base = base.rstrip("/")
    return re.sub(r"^http", "ws", base) + "/api/v1/agent/connect"


class FromEnvironment(enum.Enum):
    """The type of :data:`FROM_ENVIRONMENT` (an enum so that type checkers know its one value)."""

    FROM_ENVIRONMENT = "from the environment"


#: ``proxy=FROM_ENVIRONMENT`` (the default): the proxy is read from ``HTTPS_PROXY`` /
#: ``HTTP_PROXY`` / ``ALL_PROXY`` and ``NO_PROXY`` at each connection; ``None`` means never a proxy.
FROM_ENVIRONMENT = FromEnvironment.FROM_ENVIRONMENT

#: A proxy setting: a proxy URL, None (never), or FROM_ENVIRONMENT.
ProxySetting = Union[str, None, FromEnvironment]

_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def _env(environ: Mapping[str, str], key: str) -> str:
    # lower case first, as proxy-from-env (the TypeScript SDK's reader) and curl do
    return environ.get(key.lower()) or environ.get(key.upper()) or ""


def _should_proxy(hostname: str, port: int, environ: Mapping[str, str]) -> bool:
    no_proxy = _env(environ, "no_proxy").lower()
    if not no_proxy:
        return True
    if no_proxy == "*":
        return False
    for entry in re.split(r"[,\s]", no_proxy):
        if not entry:
            continue
        m = re.match(r"^(.+):(\d+)$", entry)
        entry_host = m.group(1) if m else entry
        entry_port = int(m.group(2)) if m else 0
        if entry_port and entry_port != port:
            continue
        if not re.match(r"^[.*]", entry_host):
            if hostname == entry_host:
                return False
            continue
        if entry_host.startswith("*"):
            entry_host = entry_host[1:]
        if hostname.endswith(entry_host):
            return False
    return True


def proxy_for_url(url: str, environ: Mapping[str, str] | None = None) -> str:
    """
    The proxy URL the environment gives for connecting to ``url`` (a platform base URL, http or
    https), or ``""`` for none: ``https_proxy`` for an https URL, ``http_proxy`` for an http one,
    else ``all_proxy`` (each in lower case, then upper case), unless ``no_proxy`` names the host.

    The same rules as the TypeScript SDK (its ``proxy-from-env``), so that both robots on one
    machine agree: ``NO_PROXY`` is ``*``, or entries separated by commas or spaces, each a host
    that must match exactly, or a suffix when it starts with ``.`` or ``*`` (``*.corp`` and
    ``.corp`` match ``a.corp``, not ``corp``), optionally with ``:port`` (then only that port).
    A proxy without a scheme is taken as ``http://`` (what curl does; a plain proxy is what it
    almost always means).
    """
    environ = os.environ if environ is None else environ
    try:
        parsed = urlsplit(url)
        hostname = parsed.hostname
        port = parsed.port
    except ValueError:
        return ""
    scheme = parsed.scheme.lower()
    if not scheme or not hostname:
        return ""
    # an IPv6 host keeps its brackets, as a URL's host does (and NO_PROXY writes it)
    if ":" in hostname:
        hostname = f"[{hostname}]"
    if not _should_proxy(hostname, port or _DEFAULT_PORTS.get(scheme, 0), environ):
        return ""
    proxy = _env(environ, f"{scheme}_proxy") or _env(environ, "all_proxy")
    if proxy and "://" not in proxy:
        proxy = "http://" + proxy
    return proxy


def resolve_proxy(url: str, proxy: ProxySetting, environ: Mapping[str, str] | None = None) -> str | None:
    """The proxy to reach ``url`` through (a given one, or the environment's), or None: direct."""
    chosen = proxy_for_url(url, environ) if proxy is FROM_ENVIRONMENT else proxy
    return chosen or None


class ProxyError(OSError):
    """The proxy could not be used: unreachable, or it did not open the tunnel (its answer says why)."""


def connect_request(proxy_url: str, host: str, port: int) -> bytes:
    """
    The ``CONNECT`` request asking the proxy at ``proxy_url`` for a tunnel to ``host:port``, with
    ``Proxy-Authorization: Basic`` when the proxy URL carries ``user:password``.
    """
    parsed = urlsplit(proxy_url)
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    lines = [f"CONNECT {target} HTTP/1.1", f"Host: {target}"]
    if parsed.username is not None:
        # percent-decoded: a URL carries a password's reserved characters escaped
        credentials = f"{unquote(parsed.username)}:{unquote(parsed.password or '')}"
        lines.append("Proxy-Authorization: Basic " + base64.b64encode(credentials.encode("utf-8")).decode("ascii"))
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _proxy_address(proxy_url: str) -> tuple[str, int]:
    try:
        parsed = urlsplit(proxy_url)
        host, port = parsed.hostname, parsed.port
    except ValueError as err:
        raise ProxyError(f'the proxy "{proxy_url}" is not a URL ({err})') from None
    if parsed.scheme.lower() != "http" or not host:
        # a TLS connection to the proxy itself cannot be handed on as a plain socket
        raise ProxyError(f'the proxy "{_redacted(proxy_url)}" is not an http:// URL (only plain HTTP proxies are supported)')
    return host, port or 80


def _redacted(proxy_url: str) -> str:
    """The proxy URL without its password, for messages and logs."""
    return re.sub(r"//([^/@:]*):[^/@]*@", r"//\1:***@", proxy_url)


#: The most a proxy's answer to CONNECT may take, in bytes (status line and headers).
_MAX_PROXY_ANSWER = 64 * 1024


async def open_tunnel(proxy_url: str, host: str, port: int) -> socket.socket:
    """
    A connected socket to ``host:port`` through the proxy at ``proxy_url``: the TCP connection to
    the proxy, on which ``CONNECT host:port`` was answered 2xx. Raises :class:`ProxyError` when the
    proxy cannot be reached or answers otherwise. Not bounded in time: the caller bounds it.

    The socket is non-blocking and the caller's; nothing past the proxy's answer was read from it
    (the platform's TLS handshake or HTTP upgrade goes on from its first byte).
    """
    loop = asyncio.get_running_loop()
    proxy_host, proxy_port = _proxy_address(proxy_url)
    shown = _redacted(proxy_url)
    try:
        infos = await loop.getaddrinfo(proxy_host, proxy_port, type=socket.SOCK_STREAM)
    except OSError as err:
        raise ProxyError(f"the proxy {shown} could not be found ({err})") from None
    sock: socket.socket | None = None
    errors: list[str] = []
    for family, kind, proto, _name, address in infos:
        candidate = socket.socket(family, kind, proto)
        candidate.setblocking(False)
        try:
            await loop.sock_connect(candidate, address)
        except OSError as err:
            candidate.close()
            errors.append(str(err))
            continue
        except BaseException:
            candidate.close()
            raise
        sock = candidate
        break
    if sock is None:
        raise ProxyError(f"the proxy {shown} could not be reached ({'; '.join(errors) or 'no address'})")
    try:
        await loop.sock_sendall(sock, connect_request(proxy_url, host, port))
        answer = b""
        # a byte at a time: what follows the answer belongs to the tunnel's user (an answer is short)
        while not answer.endswith(b"\r\n\r\n"):
            if len(answer) > _MAX_PROXY_ANSWER:
                raise ProxyError(f"the proxy {shown} answered CONNECT with over {_MAX_PROXY_ANSWER} bytes of headers")
            byte = await loop.sock_recv(sock, 1)
            if not byte:
                raise ProxyError(f"the proxy {shown} closed the connection before answering CONNECT {host}:{port}")
            answer += byte
        status_line = answer.split(b"\r\n", 1)[0].decode("latin-1")
        m = re.match(r"^HTTP/\d(?:\.\d)? (\d{3})(?: (.*))?$", status_line)
        if not m:
            raise ProxyError(f"the proxy {shown} answered CONNECT with no HTTP status ({status_line[:200]!r})")
        if not 200 <= int(m.group(1)) < 300:
            raise ProxyError(f"the proxy {shown} refused CONNECT {host}:{port}: {status_line[:200]}")
    except BaseException as err:
        sock.close()
        if isinstance(err, OSError) and not isinstance(err, ProxyError):
            raise ProxyError(f"the proxy {shown} failed during CONNECT {host}:{port} ({err})") from None
        raise
    return sock
