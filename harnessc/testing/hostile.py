"""A hostile model server for tests: every way a server can misbehave, on loopback.

Standard library only. The first path segment picks the behaviour
(``base_url = server.url_for("keepalive-after-done") + "/v1"``), so one server serves
every mode at once. It is bounded: every connection ends after ``lifetime_s`` (8 s)
whatever the mode, an endless stream stops as soon as the client goes away, and
``stop()`` (or leaving the ``with`` block) closes everything. Each mode writes raw
bytes on the socket, so broken framing, open connections and odd encodings are
exactly what the client sees.

    with HostileServer() as server:
        model = Model(id="m", api="openai-completions",
                      base_url=server.url_for("split-surrogate") + "/v1")
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import zlib
from collections.abc import Callable
from typing import Any

from harnessc.testing.streams import (
    AnthropicBlock,
    anthropic_events,
    google_events,
    openai_chunk,
    openai_events,
    sse_data,
)

__all__ = ["MODES", "HostileServer"]

_BLOCK = 64 * 1024


class _Conn:
    """One client connection: raw writes that stop at the lifetime or a closed peer."""

    def __init__(self, sock: socket.socket, until: float, stopping: threading.Event) -> None:
        self.sock = sock
        self.until = until
        self.stopping = stopping

    @property
    def alive(self) -> bool:
        return time.monotonic() < self.until and not self.stopping.is_set()

    def send(self, data: bytes) -> bool:
        if not self.alive:
            return False
        try:
            self.sock.sendall(data)
        except OSError:
            return False
        return True

    def head(
        self, status: int = 200, content_type: str = "text/event-stream", **extra: str
    ) -> None:
        reason = {200: "OK", 307: "Temporary Redirect", 501: "Not Implemented"}.get(status, "X")
        lines = [f"HTTP/1.1 {status} {reason}", f"content-type: {content_type}"]
        lines.append("connection: close")
        lines += [f"{k.replace('_', '-')}: {v}" for k, v in extra.items()]
        self.send(("\r\n".join(lines) + "\r\n\r\n").encode())

    def chunk(self, data: bytes) -> bool:
        return self.send(b"%x\r\n%s\r\n" % (len(data), data)) if data else True

    def stream(self, events: list[bytes], end: bool = True, delay_s: float = 0.0) -> None:
        self.head(transfer_encoding="chunked")
        for event in events:
            if delay_s:
                self.wait(delay_s)
            if not self.chunk(event):
                return
        if end:
            self.send(b"0\r\n\r\n")

    def whole(self, status: int, content_type: str, body: bytes, **extra: str) -> None:
        self.head(status, content_type, content_length=str(len(body)), **extra)
        self.send(body)

    def wait(self, seconds: float) -> None:
        self.stopping.wait(max(0.0, min(seconds, self.until - time.monotonic())))

    def hold(self) -> None:
        """Keep the connection open, sending nothing, until the client or time goes."""
        self.sock.settimeout(0.05)
        while self.alive:
            try:
                if self.sock.recv(1) == b"":
                    return
            except TimeoutError:
                continue
            except OSError:
                return


def _text(pieces: list[str]) -> list[bytes]:
    return openai_events(pieces)


def _keepalives_forever(conn: _Conn, every_s: float = 0.1) -> None:
    while conn.chunk(b": keepalive\n\n"):
        conn.wait(every_s)


_BOMBS: dict[str, bytes] = {}


def _bomb(kind: str) -> bytes:
    """64 MiB of zeros in one gzip member (about 64 KB, inflated at once by a naive
    client), or 1 GiB of comment lines in 1,024 members (about 1 MB)."""
    if kind not in _BOMBS:
        if kind == "zeros":
            packer = zlib.compressobj(1, zlib.DEFLATED, zlib.MAX_WBITS | 16)
            block = b"\0" * (1 << 22)
            _BOMBS[kind] = b"".join([packer.compress(block) for _ in range(16)] + [packer.flush()])
        else:
            line = b": " + b"k" * 1021 + b"\n"
            _BOMBS[kind] = gzip.compress(line * 1024, 9) * 1024
    return _BOMBS[kind]


def _mode_map() -> dict[str, Callable[[_Conn], None]]:
    def ok(c: _Conn) -> None:
        c.stream(_text(["fine"]))

    def keepalive_after_done(c: _Conn) -> None:
        c.stream([b"".join(_text(["complete"]))], end=False)  # one write: all of it or none
        _keepalives_forever(c)

    def open_after_done(c: _Conn) -> None:
        c.stream([b"".join(_text(["complete"]))], end=False)
        c.hold()

    def anthropic_open_after_stop(c: _Conn) -> None:
        c.stream([b"".join(anthropic_events([AnthropicBlock("text", ["stopped"])]))], end=False)
        c.hold()

    def finished_left_open(c: _Conn) -> None:  # finish_reason and usage, no [DONE]
        c.stream([b"".join(openai_events(["finished"], done=False))], end=False)
        c.hold()

    def google_left_open(c: _Conn) -> None:  # Gemini has no end marker at all
        c.stream([b"".join(google_events(["gemini"]))], end=False)
        c.hold()

    def google_left_open_late(c: _Conn) -> None:  # the same, its body 0.3 s after the head
        c.stream([b"".join(google_events(["gemini"]))], end=False, delay_s=0.3)
        c.hold()

    def keepalives_only(c: _Conn) -> None:
        c.head(transfer_encoding="chunked")
        _keepalives_forever(c)

    def endless_text(c: _Conn) -> None:
        c.head(transfer_encoding="chunked")
        piece = b"".join(sse_data(openai_chunk({"content": "more "})) for _ in range(200))
        while c.chunk(piece):
            pass

    def slow_drip(c: _Conn) -> None:
        c.head(transfer_encoding="chunked")
        for byte in b"".join(_text(["drip"])):
            if not c.chunk(bytes([byte])):
                return
            c.wait(0.1)

    def stall_before_head(c: _Conn) -> None:
        c.wait(30)

    def trickled_head(c: _Conn) -> None:  # the status line and headers, a byte per 0.5 s
        head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n" + b"x-pad: y\r\n" * 20
        for byte in head:
            if not c.send(bytes([byte])):
                return
            c.wait(0.5)

    def endless_processing(c: _Conn) -> None:  # interim 102 answers, never a final one
        while c.send(b"HTTP/1.1 102 Processing\r\n\r\n"):
            c.wait(0.2)

    def huge_line(c: _Conn) -> None:  # one 25 MB data: line
        c.head(transfer_encoding="chunked")
        c.chunk(b'data: {"choices": [{"delta": {"content": "')
        block = b"x" * _BLOCK
        for _ in range((25 << 20) // _BLOCK):
            if not c.chunk(block):
                return
        c.chunk(b'"}}]}\n\n')
        c.send(b"0\r\n\r\n")

    def huge_chunks(c: _Conn) -> None:  # a valid reply written in 4 MB chunks
        text = ["y" * 4096] * 1024
        c.stream([b"".join(_text(text))])

    def gzip_bomb(c: _Conn) -> None:
        c.whole(200, "text/event-stream", _bomb("zeros"), content_encoding="gzip")

    def gzip_bomb_lines(c: _Conn) -> None:
        c.whole(200, "text/event-stream", _bomb("lines"), content_encoding="gzip")

    def broken_sse(c: _Conn) -> None:
        c.stream([b"\x00\xff not a field\n::\n\ndata\n\nretry: x\n\n", *_text(["survived"])])

    def bom_cr_only(c: _Conn) -> None:
        body = b"".join(_text(["cr", " only"])).replace(b"\n", b"\r")
        c.stream([b"\xef\xbb\xbf" + body])

    def html_200(c: _Conn) -> None:
        page = b"<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>"
        c.whole(200, "text/html", page + b"<p>x</p>" * 5000 + b"</body></html>")

    def json_error_200(c: _Conn) -> None:
        body = {"error": {"message": "model 'm' is overloaded, try later", "type": "overloaded"}}
        c.whole(200, "application/json", json.dumps(body).encode())

    def non_streamed(c: _Conn) -> None:
        body = {"object": "chat.completion", "choices": [{"message": {"content": "whole"}}]}
        c.whole(200, "application/json", json.dumps(body).encode())

    def redirect_307(c: _Conn) -> None:
        c.whole(307, "text/plain", b"moved", location="http://127.0.0.1:9/elsewhere/v1")

    def html_501(c: _Conn) -> None:
        page = b"<html><head><title>501 Not Implemented</title></head><body>"
        c.whole(501, "text/html", page + b"<p>nope</p>" * 20000 + b"</body></html>")

    def non_utf8(c: _Conn) -> None:
        c.stream(
            [
                sse_data(openai_chunk({"role": "assistant"})),
                b'data: {"choices":[{"delta":{"content":"caf\xe9 \xff"}}]}\n\n',
                *_text([])[1:],
            ]
        )

    def split_surrogate(c: _Conn) -> None:
        first = b'data: {"choices":[{"delta":{"content":"smile \\ud83d"}}]}\n\n'
        second = b'data: {"choices":[{"delta":{"content":"\\ude00!"}}]}\n\n'
        c.stream([_text([])[0], first, second, *_text([])[1:]])

    def lone_surrogate(c: _Conn) -> None:
        event = b'data: {"choices":[{"delta":{"content":"bad \\udce9 byte"}}]}\n\n'
        c.stream([_text([])[0], event, *_text([])[1:]])

    def tool_calls_unindexed(c: _Conn) -> None:
        calls = [
            {"function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}},
            {"function": {"name": "add", "arguments": '{"a": 3, "b": 4}'}},
        ]
        events = [sse_data(openai_chunk({"tool_calls": [call]})) for call in calls]
        events.append(sse_data(openai_chunk({}, finish_reason="tool_calls")))
        c.stream([*events, sse_data("[DONE]")])

    def tool_name_1mb(c: _Conn) -> None:
        call = {"index": 0, "id": "c1", "function": {"name": "n" * (1 << 20), "arguments": "{}"}}
        events = [sse_data(openai_chunk({"tool_calls": [call]}))]
        events.append(sse_data(openai_chunk({}, finish_reason="tool_calls")))
        c.stream([*events, sse_data("[DONE]")])

    def deep_arguments(c: _Conn) -> None:
        args = '{"a": ' + "[" * 600 + "]" * 600 + "}"
        call = {"index": 0, "id": "c1", "function": {"name": "add", "arguments": args}}
        events = [sse_data(openai_chunk({"tool_calls": [call]}))]
        events.append(sse_data(openai_chunk({}, finish_reason="tool_calls")))
        c.stream([*events, sse_data("[DONE]")])

    def bad_chunking(c: _Conn) -> None:
        c.head(transfer_encoding="chunked")
        c.chunk(_text([])[0])
        c.send(b"zz\r\nnot a chunk\r\n")
        c.hold()

    def close_at_once(c: _Conn) -> None:
        pass  # the connection closes before a status line

    modes = {name.replace("_", "-"): fn for name, fn in locals().items() if callable(fn)}
    return modes


MODES: dict[str, Callable[[_Conn], None]] = _mode_map()


class HostileServer:
    """Serves every mode of ``MODES`` on 127.0.0.1; bounded and self-stopping."""

    def __init__(self, lifetime_s: float = 8.0) -> None:
        self.lifetime_s = lifetime_s
        self._stopping = threading.Event()
        self._sock: socket.socket | None = None
        self._threads: list[threading.Thread] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []  # (path, JSON body)

    def start(self) -> HostileServer:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        sock.settimeout(0.1)
        self._sock = sock
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stopping.set()
        for thread in self._threads:
            thread.join(timeout=2)
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def __enter__(self) -> HostileServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._sock is not None, "the hostile server is not running"
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def url_for(self, mode: str) -> str:
        if mode not in MODES:
            raise KeyError(f"unknown mode {mode!r}; known: {', '.join(sorted(MODES))}")
        return f"{self.url}/{mode}"

    def _accept(self) -> None:
        assert self._sock is not None
        while not self._stopping.is_set():
            try:
                client, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(client,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, client: socket.socket) -> None:
        with client:
            client.settimeout(2)
            try:
                path, body = _read_request(client)
            except (OSError, ValueError):
                return
            self.requests.append((path, body))
            mode = path.strip("/").split("/", 1)[0]
            conn = _Conn(client, time.monotonic() + self.lifetime_s, self._stopping)
            handler = MODES.get(mode)
            messages = body.get("messages") or [{}]
            if isinstance(messages, list) and messages[-1].get("role") == "tool":
                handler = MODES["ok"]  # hostile once: the turn after tool results is fine
            if handler is None:
                conn.whole(404, "text/plain", f"no mode {mode!r}".encode())
                return
            handler(conn)


def _read_request(client: socket.socket) -> tuple[str, dict[str, Any]]:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = client.recv(65536)
        if not piece:
            raise ValueError("closed before the request head")
        data += piece
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    path = lines[0].split(" ")[1]
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    while len(rest) < length:
        piece = client.recv(65536)
        if not piece:
            break
        rest += piece
    try:
        body = json.loads(rest) if rest else {}
    except ValueError:
        body = {}
    return path, body if isinstance(body, dict) else {}
