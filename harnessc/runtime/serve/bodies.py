"""Request bodies: bounded in size and depth, decoded as JSON, checked field by field;
every problem an ``ApiError`` the client reads as ``{"error": {"type", "message",
"param", "code"}}`` (OpenAI's shape: ``param`` names the field at fault, ``code`` the
problem, with OpenAI's codes where OpenAI has one)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.requests import Request

    from harnessc.runtime.serve.config import ServeConfig

__all__ = ["ApiError", "optional", "read_json", "required", "too_deep"]


class ApiError(Exception):
    """An HTTP error with a JSON body naming the problem: ``kind`` (its type), the
    field at fault (``param``) and a machine-readable ``code`` (default: the kind)."""

    def __init__(
        self,
        status: int,
        message: str,
        kind: str = "invalid_request",
        headers: Any = None,
        *,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.headers: dict[str, str] = dict(headers or {})
        self.param = param
        self.code = code or kind

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "type": self.kind,
                "message": self.message,
                "param": self.param,
                "code": self.code,
            }
        }


async def read_json(request: Request, config: ServeConfig) -> dict[str, Any]:
    """The body as a JSON object, at most ``max_body_bytes`` and ``max_json_depth`` deep."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > config.max_body_bytes:
                raise _too_large(config)
        except ValueError:
            raise ApiError(400, "Content-Length is not a number") from None
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > config.max_body_bytes:
            raise _too_large(config)
    if not data.strip():
        raise ApiError(400, "the request body is empty; send a JSON object", code="empty_body")
    if too_deep(bytes(data), config.max_json_depth):
        raise ApiError(400, f"the JSON body nests deeper than {config.max_json_depth} levels")
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ApiError(400, f"the body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(value, dict):
        raise ApiError(
            400, f"the body must be a JSON object, not {_kind(value)}", code="invalid_type"
        )
    return value


def _too_large(config: ServeConfig) -> ApiError:
    return ApiError(413, f"the body is over {config.max_body_bytes} bytes", "too_large")


def too_deep(data: bytes, limit: int) -> bool:
    """Whether brackets outside strings nest deeper than ``limit`` (before parsing)."""
    depth = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "an object",
    }.get(type(value), type(value).__name__)


_TYPES: dict[type, str] = {str: "a string", dict: "an object", list: "an array", bool: "a boolean"}


def required(body: Mapping[str, Any], key: str, kind: type) -> Any:
    if key not in body or body[key] is None:
        raise ApiError(400, f"'{key}' is required", param=key, code="missing_required_parameter")
    return _typed(body, key, kind)


def optional(body: Mapping[str, Any], key: str, kind: type) -> Any:
    if body.get(key) is None:
        return None
    return _typed(body, key, kind)


def _typed(body: Mapping[str, Any], key: str, kind: type) -> Any:
    value = body[key]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        expected = _TYPES.get(kind, kind.__name__)
        raise ApiError(
            400, f"'{key}' must be {expected}, not {_kind(value)}", param=key, code="invalid_type"
        )
    return value
