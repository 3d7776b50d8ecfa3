"""The agent's side of a sandbox's network: an HTTP proxy that lets through only the
hosts the policy allows.

It listens on a unix socket in the sandbox runtime folder (mounted into each sandbox
that may use the network; ``bridge.py`` passes the sandbox's connections to it) and
speaks HTTP proxying as clients expect it from ``HTTP_PROXY`` / ``HTTPS_PROXY``:
``CONNECT host:port`` for TLS and anything else, absolute-form requests
(``GET http://host/path``) for plain HTTP. A host the policy does not name gets
``403 Forbidden`` saying so; nothing else leaves the sandbox (its network namespace has
no interface but its own loopback, so names do not even resolve there).

One proxy per distinct list of hosts, each on an event loop of its own in a daemon
thread, started on first use.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Sequence
from urllib.parse import urlsplit

from harnessc.runtime.sandbox.policy import host_allowed

__all__ = ["HostProxy", "host_proxy"]

_HEAD_LIMIT = 64 * 1024
_CONNECT_TIMEOUT_S = 30.0
_CHUNK = 64 * 1024


class HostProxy:
    """A running proxy for ``hosts`` on the unix socket ``path``."""

    def __init__(self, hosts: Sequence[str], path: str) -> None:
        self.hosts = tuple(hosts)
        self.path = path
        self.denied: list[str] = []  # host:port asked for and refused (newest last)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="sandbox proxy", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._failed is not None:
            raise self._failed

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._start())
        except BaseException as exc:  # reported to the thread that started it
            self._failed = exc
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        await asyncio.start_unix_server(self._handle, path=self.path, limit=_HEAD_LIMIT)
        os.chmod(self.path, 0o600)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        line, _, rest = head.partition(b"\r\n")
        parts = line.decode("latin-1").split()
        if len(parts) != 3:
            await _answer(writer, 400, "Bad Request", "not an HTTP proxy request")
            return
        method, target, version = parts
        if method.upper() == "CONNECT":
            host, _, port_text = target.rpartition(":")
            if not port_text.isdigit():
                await _answer(writer, 400, "Bad Request", f"CONNECT {target}: no port")
                return
            port = int(port_text)
            forward = b""
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.hostname:
                await _answer(writer, 400, "Bad Request", f"{target}: the proxy takes http:// URLs")
                return
            host, port = url.hostname, url.port or 80
            path = url.path or "/"
            if url.query:
                path += "?" + url.query
            headers = [
                h
                for h in rest.split(b"\r\n")
                if h and not h.lower().startswith((b"proxy-", b"connection:"))
            ]
            forward = b"\r\n".join(
                [f"{method} {path} {version}".encode("latin-1"), *headers, b"Connection: close"]
            )
            forward += b"\r\n\r\n"
        host = host.strip("[]")
        where = f"{host}:{port}"
        if not host_allowed(where, self.hosts):
            self.denied.append(where)
            allowed = ", ".join(self.hosts) or "none"
            await _answer(
                writer,
                403,
                "Forbidden",
                f"harnessc sandbox: {where} is not an allowed host (allowed: {allowed})",
            )
            return
        try:
            up_reader, up_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, limit=_HEAD_LIMIT), _CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError) as exc:
            await _answer(writer, 502, "Bad Gateway", f"cannot reach {where}: {exc}")
            return
        if forward:
            up_writer.write(forward)
        else:
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(
            _copy(reader, up_writer), _copy(up_reader, writer), return_exceptions=True
        )
        with contextlib.suppress(Exception):
            up_writer.close()


async def _copy(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(_CHUNK):
            target.write(data)
            await target.drain()
    finally:
        with contextlib.suppress(Exception):
            if target.can_write_eof():
                target.write_eof()


async def _answer(writer: asyncio.StreamWriter, code: int, status: str, text: str) -> None:
    body = (text + "\n").encode()
    writer.write(
        f"HTTP/1.1 {code} {status}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(Exception):
        await writer.drain()


_PROXIES: dict[tuple[str, ...], HostProxy] = {}
_LOCK = threading.Lock()


def host_proxy(hosts: Sequence[str], folder: str) -> HostProxy:
    """The proxy for ``hosts`` (started on first use, its socket in ``folder``)."""
    key = tuple(sorted(hosts))
    with _LOCK:
        proxy = _PROXIES.get(key)
        if proxy is None:
            path = os.path.join(folder, f"proxy-{len(_PROXIES)}.sock")
            proxy = _PROXIES[key] = HostProxy(key, path)
        return proxy
