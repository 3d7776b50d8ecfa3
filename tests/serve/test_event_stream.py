"""The doors' event stream response (``serve.streams.EventStream``) under uvicorn: the
pieces go out as they come; a client that goes away ends the stream (its body
generator is closed) and the request ends well; a cancellation from elsewhere still
cancels."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest

uvicorn = pytest.importorskip("uvicorn")

from harnessc.runtime.serve.streams import EventStream  # noqa: E402


class Body:
    """A body generator that yields ``pieces`` pieces, then waits ``then_s`` (a stream
    that holds on, as a run's does between its events), and says how it ended."""

    def __init__(self, pieces: int, then_s: float = 0.0) -> None:
        self.pieces = pieces
        self.then_s = then_s
        self.ended = asyncio.Event()
        self.how = ""

    async def __call__(self) -> AsyncIterator[str]:
        try:
            for n in range(self.pieces):
                yield f"data: {n}\n\n"
            await asyncio.sleep(self.then_s)
            self.how = "finished"
        except asyncio.CancelledError:
            self.how = "cancelled"
            raise
        except GeneratorExit:
            self.how = "closed"
            raise
        finally:
            self.ended.set()


async def _serve(body: Body) -> tuple[Any, int, asyncio.Task[Any], list[str]]:
    errors: list[str] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                pass
            return
        try:
            await EventStream(body())(scope, receive, send)
        except BaseException as exc:
            errors.append(type(exc).__name__)
            raise

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error", lifespan="off")
    )
    task = asyncio.get_running_loop().create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    return server, port, task, errors


async def _request(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await writer.drain()
    return reader, writer


def test_a_whole_stream_arrives_and_its_body_finishes() -> None:
    async def main() -> None:
        body = Body(3)
        server, port, task, errors = await _serve(body)
        try:
            reader, writer = await _request(port)
            seen = b""
            while not seen.endswith(b"0\r\n\r\n"):  # the chunked body's end
                seen += await asyncio.wait_for(reader.read(65536), 10)
            writer.close()
            assert b"text/event-stream; charset=utf-8" in seen
            assert all(f"data: {n}".encode() in seen for n in range(3))
            await asyncio.wait_for(body.ended.wait(), 10)
            assert body.how == "finished" and errors == []
        finally:
            server.should_exit = True
            await task

    asyncio.run(main())


def test_a_client_that_goes_away_ends_the_stream_and_the_request_ends_well() -> None:
    async def main() -> None:
        body = Body(1, then_s=60)  # holds on, as a run between events
        server, port, task, errors = await _serve(body)
        try:
            reader, writer = await _request(port)
            seen = b""
            while b"data: 0" not in seen:
                seen += await asyncio.wait_for(reader.read(65536), 10)
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            await asyncio.wait_for(body.ended.wait(), 10)  # not the 60 s it waits for
            assert body.how == "cancelled"
            await asyncio.sleep(0.05)
            assert errors == []  # the request's task ended without an error
        finally:
            server.should_exit = True
            await task

    asyncio.run(main())


def test_a_cancellation_from_elsewhere_still_cancels_the_request() -> None:
    async def main() -> None:
        body = Body(1, then_s=60)
        sent: list[dict[str, Any]] = []
        gone = asyncio.Event()

        async def receive() -> dict[str, Any]:
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        request = asyncio.get_running_loop().create_task(
            EventStream(body())({"type": "http"}, receive, send)
        )
        while len(sent) < 2:
            await asyncio.sleep(0.01)
        request.cancel()  # the server stopping, say
        with pytest.raises(asyncio.CancelledError):
            await request
        assert body.how == "cancelled"

    asyncio.run(main())
