"""The event stream response of the served doors (native, OpenAI, AG-UI): the body's
pieces go out as they come, and a client that goes away ends the stream, never the run.

Starlette's ``StreamingResponse`` does the same through an anyio task group (its cancel
scopes, a task for the body); here the body is sent from the request's own task and one
small task waits for the client to leave: ``receive`` answers ``http.disconnect`` when
the connection is lost, or once the response is complete (then there is nothing to end).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from starlette.responses import Response

__all__ = ["EventStream"]


class _Watch:
    """Where one stream stands, shared by its sender and its watcher."""

    __slots__ = ("complete", "gone")

    def __init__(self) -> None:
        self.complete = False  # the last piece is being sent: a disconnect ends nothing
        self.gone = False  # the client went away first: the sender was cancelled for it


class EventStream(Response):
    """A streamed 200 response of ``content``'s pieces (str, encoded as UTF-8, or bytes)."""

    media_type = "text/event-stream"

    def __init__(
        self,
        content: AsyncIterator[str | bytes],
        *,
        headers: Mapping[str, str] | None = None,
        media_type: str | None = None,
    ) -> None:
        self.body_iterator = content
        self.status_code = 200
        if media_type is not None:
            self.media_type = media_type
        self.background = None
        self.init_headers(headers)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        task = asyncio.current_task()
        assert task is not None
        watch = _Watch()
        watcher = asyncio.get_running_loop().create_task(_watch(receive, watch, task))
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            async for chunk in self.body_iterator:
                data = chunk if isinstance(chunk, bytes) else chunk.encode(self.charset)
                await send({"type": "http.response.body", "body": data, "more_body": True})
            watch.complete = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            # the client went away: the stream ends and the request ends well; a
            # cancellation from elsewhere too (the server stopping) goes on up
            if not watch.gone or task.uncancel() > 0:
                raise
        finally:
            if not watcher.done():
                watcher.cancel()


async def _watch(receive: Any, watch: _Watch, sender: asyncio.Task[Any]) -> None:
    """Wait for the client to go away; cancel the sender then, unless it was done."""
    while (await receive())["type"] != "http.disconnect":
        pass
    if not watch.complete:
        watch.gone = True
        sender.cancel()
