"""The dev page at ``/``: plain HTML and JavaScript shipped in the package (no build step).
Both are static and public (they hold no data); the page asks for the token and sends it
with every API call."""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["devpage_routes"]

_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@cache
def _file(name: str) -> bytes:
    return resources.files("harnessc.runtime.serve").joinpath("static", name).read_bytes()


def _static(name: str, media_type: str) -> Response:
    return Response(
        _file(name),
        media_type=media_type,
        headers={
            "Content-Security-Policy": _POLICY,
            "X-Content-Type-Options": "nosniff",
            "Cache-Control": "no-cache",
        },
    )


async def page(request: Request) -> Response:
    return _static("index.html", "text/html; charset=utf-8")


async def script(request: Request) -> Response:
    return _static("dev.js", "text/javascript; charset=utf-8")


def devpage_routes() -> list[Route]:
    return [Route("/", page, methods=["GET"]), Route("/dev.js", script, methods=["GET"])]
