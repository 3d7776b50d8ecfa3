"""The bearer token: every request but the public paths needs ``Authorization: Bearer
<token>`` when the server has one (compared in constant time); 401 otherwise."""

from __future__ import annotations

import hmac
import json
from typing import Any

__all__ = ["PUBLIC_PATHS", "TokenGate"]

# /healthz, the A2A agent card, and the dev page's static HTML and script (they hold no
# data; the page asks for the token before it calls the API).
PUBLIC_PATHS = frozenset({"/healthz", "/.well-known/agent-card.json", "/", "/dev.js"})

_DENIED = json.dumps(
    {
        "error": {
            "type": "unauthorized",
            "message": "a valid 'Authorization: Bearer <token>' is required",
            "param": None,
            "code": "invalid_api_key",  # OpenAI's code for it
        }
    }
).encode()


class TokenGate:
    """ASGI middleware in front of the whole application."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token.encode() if token else None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if self.token is None or scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if (scope["type"] == "http" and scope["path"] in PUBLIC_PATHS) or self._allowed(scope):
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket (no endpoint has one): refused too
            await send({"type": "websocket.close", "code": 1008})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(_DENIED)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": _DENIED})

    def _allowed(self, scope: dict[str, Any]) -> bool:
        assert self.token is not None
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, given = bytes(value).partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(
                    given.strip(), self.token
                )
        return False
