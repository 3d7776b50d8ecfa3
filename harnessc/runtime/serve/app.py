"""The ASGI application: every endpoint, JSON errors for unknown paths and failures, in
front the Host and Origin checks of a server without a token, the token gate, JSON
bodies only and the body bounds, and a lifespan that drains the runs and closes the
shared clients."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from harnessc.runtime.serve.agui import agui_routes
from harnessc.runtime.serve.auth import TokenGate
from harnessc.runtime.serve.bodies import ApiError
from harnessc.runtime.serve.devpage import devpage_routes
from harnessc.runtime.serve.errors import api_error, error_response, serve_state
from harnessc.runtime.serve.guard import JsonOnly, LoopbackGuard
from harnessc.runtime.serve.limits import BodyLimit
from harnessc.runtime.serve.native import native_routes
from harnessc.runtime.serve.openai_compat import openai_routes
from harnessc.runtime.serve.openapi import openapi_document
from harnessc.runtime.serve.state import ServeState

__all__ = ["build_app"]


async def openapi(request: Request) -> Response:
    state = serve_state(request)
    return JSONResponse(openapi_document(state.source.agent_name, state.source.description))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(ApiError(404, f"no endpoint {request.url.path}", "not_found"))
    if exc.status_code == 405:
        return error_response(
            ApiError(405, f"{request.method} is not allowed on {request.url.path}", "method")
        )
    return error_response(ApiError(exc.status_code, str(exc.detail), "http"))


async def _failure(request: Request, exc: Exception) -> Response:
    return error_response(api_error(exc))


def build_app(state: ServeState, clients: Any = None) -> Any:
    """The application serving ``state``'s agent; ``clients`` (an HttpClientPool) is
    closed when it stops."""
    routes: list[BaseRoute] = [
        *native_routes(),
        Route("/openapi.json", openapi, methods=["GET"]),
        *openai_routes(),
        *agui_routes(),
        *devpage_routes(),
    ]
    if _has("a2a"):
        from harnessc.runtime.serve.a2a import LazyA2A

        routes.extend(LazyA2A(state).routes())
    mcp_door: Any = None
    if _has("mcp"):
        from harnessc.runtime.serve.mcp_server import LazyMcp

        mcp_door = LazyMcp(state)
        routes.extend(mcp_door.routes())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await state.runs.drain(state.config.drain_s)
            if mcp_door is not None:
                await mcp_door.close()
            if clients is not None:
                await clients.aclose()

    app = Starlette(
        routes=routes,
        exception_handlers={HTTPException: _http_error, Exception: _failure},
        lifespan=lifespan,
    )
    app.state.serve = state
    config = state.config
    guarded = TokenGate(JsonOnly(BodyLimit(app, config)), config.token)
    if config.token is None:  # any page the user opens can reach a loopback server
        return LoopbackGuard(guarded, config.host)
    return guarded


def _has(package: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(package) is not None
