"""How a robot reaches the platform: which base URLs it may use, and their WebSocket address."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["is_loopback_host", "url_refusal", "websocket_url"]

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
