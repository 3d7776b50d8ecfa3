"""A real local HTTP server that speaks whatever a test scripts (standard library only).

It records every request (method, path, headers, body) and answers each with the next
``ScriptedResponse``: an SSE stream written chunk by chunk, a JSON error with headers
such as Retry-After, a delay before the answer or between chunks, or a connection
dropped in the middle of the body. Provider tests, CLI tests and benchmarks share it.

    with ProtocolServer() as server:
        server.enqueue(ScriptedResponse.sse(openai_text_events(["Hel", "lo"])))
        ...  # point a Model's base_url at server.url
        assert server.requests[0].json["stream"] is True
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ProtocolServer", "RecordedRequest", "ScriptedResponse"]


@dataclass(slots=True)
class RecordedRequest:
    """One request as the server received it; header names are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int = 0  # the client's source port: equal ports mean a reused connection

    @property
    def json(self) -> Any:
        """The body decoded as JSON (None when it is not JSON)."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    @property
    def route(self) -> str:
        """The path without its query string."""
        return self.path.split("?", 1)[0]


@dataclass(slots=True)
class ScriptedResponse:
    """What to answer one request with."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    # Body pieces, each written and flushed on its own (chunked transfer encoding).
    chunks: list[bytes] = field(default_factory=list)
    content_type: str = "text/event-stream"
    delay_s: float = 0.0  # before the status line
    chunk_delay_s: float = 0.0  # before each chunk
    # Close the connection after this many chunks, without ending the body.
    drop_after: int | None = None

    @classmethod
    def sse(
        cls,
        events: Iterable[bytes | str],
        *,
        per_chunk: int = 1,
        headers: dict[str, str] | None = None,
        chunk_delay_s: float = 0.0,
        drop_after: int | None = None,
        delay_s: float = 0.0,
    ) -> ScriptedResponse:
        """An event stream; ``per_chunk`` events are written together."""
        encoded = [e.encode() if isinstance(e, str) else e for e in events]
        step = max(1, per_chunk)
        chunks = [b"".join(encoded[i : i + step]) for i in range(0, len(encoded), step)]
        return cls(
            headers=dict(headers or {}),
            chunks=chunks,
            chunk_delay_s=chunk_delay_s,
            drop_after=drop_after,
            delay_s=delay_s,
        )

    @classmethod
    def json_body(
        cls, status: int, body: Any, headers: dict[str, str] | None = None
    ) -> ScriptedResponse:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return cls(
            status=status,
            headers=dict(headers or {}),
            chunks=[data],
            content_type="application/json",
        )

    @classmethod
    def error(
        cls,
        status: int,
        message: str,
        *,
        kind: str = "error",
        headers: dict[str, str] | None = None,
    ) -> ScriptedResponse:
        """A JSON error body in the common ``{"error": {"type", "message"}}`` shape."""
        return cls.json_body(status, {"error": {"type": kind, "message": message}}, headers)


Handler = Callable[[RecordedRequest], ScriptedResponse]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    # The listen backlog: socketserver's 5 drops the SYNs of many clients connecting at
    # once (a benchmark's thousand sessions), each costing its request a one-second
    # retransmit. The kernel caps it at net.core.somaxconn.
    request_queue_size = 4096
    owner: ProtocolServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (as a client that read enough does) is no error."""
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small SSE writes must not wait for delayed ACKs
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        recorded = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            client_port=int(self.client_address[1]),
        )
        response = self.server.owner._record(recorded)
        try:
            self._answer(response)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            self.close_connection = True

    do_POST = _handle
    do_GET = _handle
    do_PUT = _handle
    do_CONNECT = _handle  # as a proxy: the tunnel's target is the recorded path

    def _answer(self, response: ScriptedResponse) -> None:
        if response.delay_s:
            time.sleep(response.delay_s)
        self.send_response(response.status)
        self.send_header("content-type", response.content_type)
        for key, value in response.headers.items():
            self.send_header(key, value)
        streaming = response.content_type.startswith("text/event-stream") or (
            response.drop_after is not None
        )
        if not streaming:
            data = b"".join(response.chunks)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            self.wfile.flush()
            return
        self.send_header("transfer-encoding", "chunked")
        self.send_header("cache-control", "no-cache")
        self.end_headers()
        self.wfile.flush()
        for number, chunk in enumerate(response.chunks):
            if response.drop_after is not None and number >= response.drop_after:
                self._drop()
                return
            if response.chunk_delay_s:
                time.sleep(response.chunk_delay_s)
            if chunk:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
        if response.drop_after is not None:
            self._drop()
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        """End the connection abruptly, in the middle of the body."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class ProtocolServer:
    """A scripted HTTP server on 127.0.0.1 or ``host`` ("::1" for IPv6; port 0 picks a
    free one); with ``ssl_context`` (a server-side context with its certificate) it
    speaks HTTPS."""

    def __init__(
        self, host: str = "127.0.0.1", port: int = 0, ssl_context: ssl.SSLContext | None = None
    ) -> None:
        self._host = host
        self._port = port
        self._ssl_context = ssl_context
        self._lock = threading.Lock()
        self._queue: deque[ScriptedResponse] = deque()
        self._handler: Handler | None = None
        self._requests: list[RecordedRequest] = []
        self._arrived = threading.Condition(self._lock)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- life cycle -----------------------------------------------------------------

    def start(self) -> ProtocolServer:
        if self._server is not None:
            return self
        kind = _Server6 if ":" in self._host else _Server  # an IPv6 address: "::1"
        server = kind((self._host, self._port), _RequestHandler)
        server.owner = self
        if self._ssl_context is not None:  # each accepted connection shakes hands first
            server.socket = self._ssl_context.wrap_socket(server.socket, server_side=True)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ProtocolServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash; ``https`` with TLS)."""
        if self._server is None:
            raise RuntimeError("the protocol server is not running")
        address, port = self._server.server_address[:2]
        host = str(address)
        scheme = "https" if self._ssl_context is not None else "http"
        return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"

    # -- scripting ------------------------------------------------------------------

    def enqueue(self, *responses: ScriptedResponse) -> None:
        """Answer the next requests with these responses, in order."""
        with self._lock:
            self._queue.extend(responses)

    def set_handler(self, handler: Handler | None) -> None:
        """Answer every request without a queued response by calling ``handler``."""
        with self._lock:
            self._handler = handler

    def reset(self) -> None:
        """Forget queued responses, the handler and the recorded requests."""
        with self._lock:
            self._queue.clear()
            self._handler = None
            self._requests.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """Queued responses not served yet."""
        with self._lock:
            return len(self._queue)

    def wait_for_requests(self, count: int, timeout_s: float = 5.0) -> list[RecordedRequest]:
        """Block until ``count`` requests arrived (or the timeout passed)."""
        deadline = time.monotonic() + timeout_s
        with self._arrived:
            while len(self._requests) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._arrived.wait(left)
            return list(self._requests)

    def _record(self, request: RecordedRequest) -> ScriptedResponse:
        with self._arrived:
            self._requests.append(request)
            self._arrived.notify_all()
            if self._queue:
                return self._queue.popleft()
            handler = self._handler
        if handler is not None:
            return handler(request)
        return ScriptedResponse.error(
            500,
            f"protocol server: no scripted response left for {request.method} {request.path}",
            kind="test_server_error",
        )
