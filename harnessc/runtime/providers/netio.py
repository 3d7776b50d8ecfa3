"""httpcore's network layer on plain asyncio: the sockets of the providers' connections.

httpcore speaks HTTP/1.1 (with h11) over a network backend. Its default on asyncio is
anyio's, which gives every connection a stream protocol with a queue and two events
and each read a cancel scope: about 3 KB a connection and a few objects a read. This
one is an ``asyncio.Protocol`` with one buffer and at most one waiting future per side,
which is all one HTTP/1.1 connection needs (one reader, one writer, in turn).

Failures are httpcore's exceptions (``ConnectError``, ``ReadTimeout``, ...) caused by
the ``OSError`` or ``ssl.SSLError`` behind them, so ``hints.describe_transport_error``
can name a refused connection or a TLS failure.
"""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
from collections.abc import Coroutine, Iterable
from typing import Any

import httpcore

from harnessc.runtime.providers.channel import wake

__all__ = ["AsyncioBackend", "AsyncioStream"]

# Reading pauses while this much of a response is unread (a fast server, a slow reader).
_HIGH_WATER = 256 * 1024
# A host with many addresses (IPv6 and IPv4): try the next one this long after the
# one before, without waiting for it to fail (RFC 8305, as anyio's backend does).
_HAPPY_EYEBALLS_DELAY = 0.25

SocketOption = (
    tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]
)


class _Connection(asyncio.Protocol):
    """What the event loop reports about one socket, kept for the stream to read."""

    __slots__ = ("transport", "buffer", "eof", "error", "_reader", "_writer", "_paused")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.error: BaseException | None = None
        self._reader: asyncio.Future[None] | None = None
        self._writer: asyncio.Future[None] | None = None
        self._paused = False

    # -- from the event loop ------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > _HIGH_WATER and self.transport is not None:
            self.transport.pause_reading()
            self._paused = True
        wake(self._reader)

    def eof_received(self) -> bool:
        self.eof = True
        wake(self._reader)
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        wake(self._reader)
        wake(self._writer)

    def pause_writing(self) -> None:
        if self._writer is None:
            self._writer = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        writer, self._writer = self._writer, None
        wake(writer)

    # -- for the stream -----------------------------------------------------------

    def take(self, max_bytes: int) -> bytes:
        buffer = self.buffer
        if len(buffer) <= max_bytes:
            data = bytes(buffer)
            buffer.clear()
        else:
            data = bytes(buffer[:max_bytes])
            del buffer[:max_bytes]
        if self._paused and len(buffer) <= _HIGH_WATER // 2 and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return data

    def wait_readable(self) -> asyncio.Future[None]:
        reader = self._reader = asyncio.get_running_loop().create_future()
        return reader

    def done_reading(self) -> None:
        self._reader = None

    def wait_writable(self) -> asyncio.Future[None] | None:
        return self._writer


async def _bounded(
    waiter: asyncio.Future[None], timeout: float | None, timed_out: type[Exception]
) -> None:
    """Wait for ``waiter``; ``timed_out`` after ``timeout`` seconds (None: no limit).

    The timer cancels the waiter itself, so a cancellation that comes once the time
    is up is the timeout; one before it is the task's own and passes on.
    """
    if timeout is None:
        await waiter
        return
    handle = asyncio.get_running_loop().call_later(max(timeout, 0.0), waiter.cancel)
    try:
        await waiter
    except asyncio.CancelledError:
        if handle.when() <= asyncio.get_running_loop().time():
            raise timed_out(f"timed out after {timeout:g} s") from None
        raise
    finally:
        handle.cancel()


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection's byte stream, as httpcore reads and writes it."""

    __slots__ = ("_transport", "_connection")

    def __init__(self, transport: asyncio.Transport, connection: _Connection) -> None:
        self._transport = transport
        self._connection = connection

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        connection = self._connection
        if not connection.buffer and not connection.eof:
            try:
                await _bounded(connection.wait_readable(), timeout, httpcore.ReadTimeout)
            finally:
                connection.done_reading()
        if connection.buffer:
            return connection.take(max_bytes)
        if connection.error is not None:
            raise httpcore.ReadError(str(connection.error)) from connection.error
        return b""  # the peer closed the connection

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        connection = self._connection
        if self._transport.is_closing():
            error = connection.error
            raise httpcore.WriteError(str(error) if error else "the connection is closed")
        self._transport.write(buffer)
        writable = connection.wait_writable()
        if writable is not None:  # the socket's buffer is full: wait until it drains
            await _bounded(asyncio.shield(writable), timeout, httpcore.WriteTimeout)
            if connection.error is not None:
                raise httpcore.WriteError(str(connection.error)) from connection.error

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        if server_hostname:
            server_hostname = _unbracketed(server_hostname)
        try:
            async with asyncio.timeout(timeout):
                transport = await loop.start_tls(
                    self._transport,
                    self._connection,
                    ssl_context,
                    server_hostname=server_hostname,
                    ssl_handshake_timeout=timeout,
                )
        except TimeoutError as exc:
            self._transport.close()
            raise httpcore.ConnectTimeout("timed out during the TLS handshake") from exc
        except OSError as exc:  # ssl.SSLError and ConnectionError among them
            self._transport.close()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        if transport is None:  # the peer closed the connection during the handshake
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        assert isinstance(transport, asyncio.Transport)
        self._connection.transport = transport  # reading pauses through the TLS layer
        return AsyncioStream(transport, self._connection)

    def get_extra_info(self, info: str) -> Any:
        transport = self._transport
        if info == "is_readable":  # an idle connection the server closed, or sent data on
            return bool(self._connection.buffer) or self._connection.eof
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info in ("ssl_object", "socket"):
            return transport.get_extra_info(info)
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Opens connections on the running asyncio loop (``httpcore.AsyncConnectionPool``'s
    ``network_backend``)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        host = _unbracketed(host)
        opening = asyncio.get_running_loop().create_connection(
            _Connection,
            host,
            port,
            local_addr=(local_address, 0) if local_address else None,
            # An IP address is one address: nothing to race (and no race's tasks).
            happy_eyeballs_delay=None if _is_ip(host) else _HAPPY_EYEBALLS_DELAY,
        )
        return await _connected(opening, timeout, f"{host}:{port}", socket_options)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        opening = asyncio.get_running_loop().create_unix_connection(_Connection, path)
        return await _connected(opening, timeout, path, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _unbracketed(host: str) -> str:
    """An IPv6 literal without the brackets a URL (and so httpcore's origin) gives it."""
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def _connected(
    opening: Coroutine[Any, Any, tuple[asyncio.BaseTransport, _Connection]],
    timeout: float | None,
    where: str,
    socket_options: Iterable[SocketOption] | None,
) -> AsyncioStream:
    """The stream of a connection being opened; httpcore's errors when it cannot be."""
    try:
        async with asyncio.timeout(timeout):
            transport, connection = await opening
    except TimeoutError as exc:
        raise httpcore.ConnectTimeout(f"timed out connecting to {where}") from exc
    except OSError as exc:
        raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
    assert isinstance(transport, asyncio.Transport)
    if socket_options:
        sock = transport.get_extra_info("socket")
        for option in socket_options:
            sock.setsockopt(*option)
    return AsyncioStream(transport, connection)
