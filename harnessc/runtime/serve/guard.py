"""Requests a web page could forge are refused before they reach an endpoint.

A server without a token listens on loopback only, but any page the user opens can
still send it requests: a ``text/plain`` POST from another origin needs no preflight,
and DNS rebinding points a page's own name at 127.0.0.1 so the page may read the
answers too. So, without a token:

- the ``Host`` must name the server as bound: its address, the address the
  connection came in on, or ``localhost`` (421 otherwise: a rebound name is refused);
- an ``Origin``, when the request has one, must be the server's own
  (``http://<one of those names>:<its port>``: the dev page's requests), 403 otherwise.

With or without a token, a request with a body must send it as JSON
(``Content-Type: application/json``): 415 otherwise. A browser cannot send JSON to
another origin without asking first (a CORS preflight, which this server never grants).
"""

from __future__ import annotations

import functools
import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

__all__ = ["JsonOnly", "LoopbackGuard", "host_name", "is_json"]

_LOCALHOST = "localhost"


def host_name(value: str) -> str:
    """The name of a ``Host`` value or URL netloc without its port, lower case, IPv6
    without brackets, without a trailing dot."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


# Every request asks for two names (its Host's and the address it came in on); a
# bounded cache of the recent ones spares the parse (0.08 ms a served run).
@functools.lru_cache(maxsize=256)
def _address(name: str) -> str:
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


async def _refuse(send: Any, status: int, kind: str, message: str) -> None:
    body = json.dumps(
        {"error": {"type": kind, "message": message, "param": None, "code": kind}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class LoopbackGuard:
    """ASGI middleware of a server without a token: the Host and Origin checks."""

    def __init__(self, app: Any, bound_host: str) -> None:
        self.app = app
        self.bound = _address(host_name(bound_host))

    def names(self, scope: dict[str, Any]) -> set[str]:
        """The names a request may give for this server."""
        names = {_LOCALHOST, self.bound}
        if self.bound == _LOCALHOST:
            names.update(("127.0.0.1", "::1"))
        server = scope.get("server")
        if server:
            names.add(_address(str(server[0])))
        return names

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        names = self.names(scope)
        host = headers.get("host")
        problem: tuple[int, str, str] | None = None
        if host is None:
            problem = (400, "missing_host", "the request has no Host header")
        elif _address(host_name(host)) not in names:
            problem = (
                421,
                "wrong_host",
                f"Host {host!r} is not this server: without a token it answers requests "
                f"addressed to {_listing(names)} only",
            )
        else:
            origin = headers.get("origin")
            if origin is not None and not self._own(origin, names, scope):
                problem = (
                    403,
                    "foreign_origin",
                    f"requests from {origin!r} are refused: without a token this server "
                    "answers its own pages and clients that are not browsers only",
                )
        if problem is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        else:
            await _refuse(send, *problem)

    def _own(self, origin: str, names: set[str], scope: dict[str, Any]) -> bool:
        try:
            parts = urlsplit(origin.strip())
            port = parts.port
        except ValueError:
            return False
        if parts.scheme != "http" or parts.hostname is None:
            return False
        server = scope.get("server")
        listening = server[1] if server else None
        return _address(host_name(parts.hostname)) in names and (port or 80) == listening


def _listing(names: set[str]) -> str:
    shown = sorted(f"[{n}]" if ":" in n else n for n in names)
    return ", ".join(shown[:-1]) + f" or {shown[-1]}" if len(shown) > 1 else shown[0]


def _headers(scope: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in scope.get("headers", []):
        key = bytes(name).decode("latin-1").lower()
        if key not in out:
            out[key] = bytes(value).decode("latin-1")
    return out


_JSON_TYPES = ("application/json",)


def is_json(content_type: str) -> bool:
    """``application/json`` or a ``+json`` type, with any parameters."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media in _JSON_TYPES or (media.startswith("application/") and media.endswith("+json"))


class JsonOnly:
    """ASGI middleware: a request with a body must send JSON."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        given = headers.get("content-type")
        has_body = headers.get("content-length", "0").strip() not in ("0", "") or (
            "transfer-encoding" in headers
        )
        if (given is None and not has_body) or (given is not None and is_json(given)):
            await self.app(scope, receive, send)
            return
        shown = given.split(";", 1)[0].strip() if given else "a body without a Content-Type"
        await _refuse(
            send,
            415,
            "unsupported_media_type",
            f"{scope['method']} {scope['path']} takes a JSON body "
            f"(Content-Type: application/json), not {shown}",
        )
