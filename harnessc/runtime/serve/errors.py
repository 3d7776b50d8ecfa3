"""Endpoints answer every failure with a JSON error naming it, never a traceback."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from harnessc.runtime.agent import HarnessBusyError
from harnessc.runtime.runs.errors import (
    Conflict,
    Overloaded,
    SessionBusy,
    SetupError,
    UnknownRun,
    UnknownSession,
)
from harnessc.runtime.serve.bodies import ApiError
from harnessc.runtime.serve.state import ServeState

__all__ = ["RETRY_AFTER_S", "api_error", "error_response", "guarded", "serve_state"]

RETRY_AFTER_S = 1
_log = logging.getLogger("harnessc.serve")

Endpoint = Callable[[Request], Awaitable[Response]]


def serve_state(request: Request) -> ServeState:
    state: ServeState = request.app.state.serve
    return state


def api_error(exc: Exception) -> ApiError:
    """The HTTP error for a failure of the run API."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, UnknownRun):
        return ApiError(404, f"no run {exc.args[0]}", "not_found")
    if isinstance(exc, UnknownSession):
        return ApiError(404, f"no session {exc.args[0]}", "not_found")
    if isinstance(exc, Overloaded):
        return ApiError(
            429,
            str(exc),
            "overloaded",
            {"Retry-After": str(RETRY_AFTER_S)},
            code="rate_limit_exceeded",
        )
    if isinstance(exc, Conflict | SessionBusy | HarnessBusyError):
        return ApiError(409, str(exc), "conflict")
    if isinstance(exc, SetupError):
        return ApiError(400, str(exc), "invalid_request")
    _log.error("internal error: %s: %s", type(exc).__name__, exc)
    return ApiError(500, f"internal error: {type(exc).__name__}", "internal")


def error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


def guarded(endpoint: Endpoint) -> Endpoint:
    @functools.wraps(endpoint)
    async def wrapper(request: Request) -> Response:
        try:
            return await endpoint(request)
        except Exception as exc:
            return error_response(api_error(exc))

    return wrapper
