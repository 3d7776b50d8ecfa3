"""Provider failures as values: readable messages, secret redaction, overflow detection."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping

__all__ = [
    "SECRET_HEADERS",
    "ProviderError",
    "error_text_from_body",
    "is_context_overflow_text",
    "is_secret_header",
    "redact",
    "redact_headers",
    "secret_values",
]

# Request headers that carry credentials; never logged or put into a message.
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key"})

_REDACTED = "[redacted]"
# Header names that carry credentials whatever the gateway calls them (X-Gateway-Key,
# X-Auth-Token, Proxy-Authorization, Cookie, ...).
_SECRET_NAME = re.compile(r"auth|key|token|secret|passw|cookie|signature|credential", re.I)

# Texts providers (and OpenAI-compatible servers) use when the prompt did not fit.
_OVERFLOW = re.compile(
    "|".join(
        [
            r"context[_ ]length[_ ]exceeded",
            r"prompt is too long",
            r"maximum context length",
            r"exceeds? the context window",
            r"context window (?:is )?exceeded",
            r"exceeds? (?:the )?(?:model'?s? )?(?:maximum )?context (?:length|size|window)",
            r"input is too long",
            r"input token count.{0,40}exceeds",
            r"exceeds the maximum number of tokens",
            r"too many (?:input )?tokens",
            r"reduce the length of the (?:messages|prompt)",
            r"exceed_context_size",
            r"available context size",
            r"greater than the context length",
            r"context length of only",
            r"prompt too long",
            r"request too large",
        ]
    ),
    re.IGNORECASE,
)


class ProviderError(Exception):
    """One failed attempt at a provider request.

    ``retryable`` says whether a new attempt may succeed (connection problems,
    rate limits, server errors); ``retry_after_ms`` is the wait the server asked for.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after_ms: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms

    @property
    def context_overflow(self) -> bool:
        return self.status == 413 or is_context_overflow_text(self.message)


def is_context_overflow_text(text: str | None) -> bool:
    """True when a provider error text says the prompt exceeded the context window."""
    return bool(text) and _OVERFLOW.search(text or "") is not None


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every given secret (API keys) replaced by ``[redacted]``."""
    for secret in secrets:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, _REDACTED)
    return text


def is_secret_header(name: str) -> bool:
    """True for a header whose value is a credential (never shown, logged or echoed)."""
    return name.lower() in SECRET_HEADERS or _SECRET_NAME.search(name) is not None


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``headers`` safe to log: credential headers are replaced."""
    return {
        key: (_REDACTED if is_secret_header(str(key)) else value) for key, value in headers.items()
    }


def secret_values(api_key: str | None, headers: Mapping[str, str] | None = None) -> list[str]:
    """Every text to cut from messages: the key (also without surrounding whitespace, as
    an escaped ``\\r\\n`` in an exception would hide the raw one) and the values of
    credential headers (with and without their ``Bearer``/``Basic`` scheme)."""
    out: list[str] = []
    values = [api_key] if api_key else []
    for name, value in (headers or {}).items():
        if isinstance(value, str) and is_secret_header(str(name)):
            values.append(value)
    for value in values:
        for candidate in (value, value.strip(), value.strip().partition(" ")[2].strip()):
            if len(candidate) >= 4 and candidate not in out:
                out.append(candidate)
    return sorted(out, key=len, reverse=True)  # longest first: no partial leftovers


def _message_in(data: object) -> str | None:
    """The human-readable error text inside a decoded error body, if any."""
    if isinstance(data, list) and data:
        return _message_in(data[0])
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        kind = error.get("type") or error.get("status") or error.get("code")
        if isinstance(message, str) and message:
            if isinstance(kind, str) and kind and kind not in message:
                return f"{kind}: {message}"
            return message
        return json.dumps(error)[:1000]
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def error_text_from_body(body: bytes | str, limit: int = 2000) -> str:
    """The provider's error text from an HTTP error body (JSON or plain text)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = text.strip()
    if not text:
        return ""
    try:
        found = _message_in(json.loads(text))
    except ValueError:
        found = None
    if found is None and text.startswith("data:"):
        # Some servers answer an error inside an SSE frame.
        for line in text.splitlines():
            if line.startswith("data:"):
                try:
                    found = _message_in(json.loads(line[5:]))
                except ValueError:
                    continue
                if found:
                    break
    result = found or text
    return result if len(result) <= limit else result[:limit] + "..."
