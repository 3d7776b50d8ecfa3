"""Request bodies of every endpoint (the A2A sdk's included) are read here first: at most
``max_body_bytes`` (413) and JSON at most ``max_json_depth`` deep (400), then handed on."""

from __future__ import annotations

import json
from typing import Any

from harnessc.runtime.serve.bodies import ApiError, too_deep
from harnessc.runtime.serve.config import ServeConfig

__all__ = ["BodyLimit"]

_NO_BODY = frozenset({"GET", "HEAD", "OPTIONS"})


class BodyLimit:
    """ASGI middleware: the whole body is read (within the bounds) before the app runs."""

    def __init__(self, app: Any, config: ServeConfig) -> None:
        self.app = app
        self.config = config

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in _NO_BODY:
            await self.app(scope, receive, send)
            return
        limit = self.config.max_body_bytes
        too_large = ApiError(413, f"the body is over {limit} bytes", "too_large")
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                if not value.isdigit():
                    await _answer(send, ApiError(400, "Content-Length is not a number"))
                    return
                if int(value) > limit:
                    await _answer(send, too_large)
                    return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before sending its body
            body += message.get("body", b"")
            if len(body) > limit:
                await _answer(send, too_large)
                return
            if not message.get("more_body", False):
                break
        if too_deep(bytes(body), self.config.max_json_depth):
            depth = self.config.max_json_depth
            await _answer(send, ApiError(400, f"the JSON body nests deeper than {depth} levels"))
            return
        given = False

        async def replay() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": bytes(body), "more_body": False}
            return dict(await receive())

        await self.app(scope, replay, send)


async def _answer(send: Any, error: ApiError) -> None:
    data = json.dumps(error.body()).encode()
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
