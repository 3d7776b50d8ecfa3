"""Provider failures as values: readable messages, secret redaction, overflow detection."""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus

from harnessc.runtime.support.urls import redact_url

__all__ = [
    "MAX_ERROR_CHARS",
    "SECRET_HEADERS",
    "FAILURE_KINDS",
    "ProviderError",
    "failure_kind",
    "cut_text",
    "error_text_from_body",
    "header_value_problem",
    "reported_error",
    "is_context_overflow_text",
    "is_secret_header",
    "redact",
    "redact_headers",
    "redact_url",
    "request_secrets",
    "secret_values",
    "url_secrets",
]

# The longest error text kept in a message (after redaction: a key is never cut in two).
MAX_ERROR_CHARS = 2000
# Text that is not a structured error (an HTML page, a plain body) is cut shorter.
_MAX_PLAIN_CHARS = 500

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


# What a failed request was, as model fallback (``fallback_on``) names it.
FAILURE_KINDS = (
    "rate_limit",
    "overloaded",
    "server_error",
    "timeout",
    "connection",
    "context_overflow",
    "auth",
    "bad_request",
    "other",
)


def failure_kind(status: int | None, message: str = "") -> str:
    """The kind of a failure with HTTP ``status`` (None: no answer) and ``message``."""
    if status == 413 or is_context_overflow_text(message):
        return "context_overflow"
    if status is None:
        return "other"
    if status == 429:
        return "rate_limit"
    if status in (503, 529):
        return "overloaded"
    if status == 408:
        return "timeout"
    if status in (401, 403):
        return "auth"
    if status >= 500:
        return "server_error"
    if status >= 400:
        return "bad_request"
    return "other"


class ProviderError(Exception):
    """One failed attempt at a provider request.

    ``retryable`` says whether a new attempt may succeed (connection problems,
    rate limits, server errors); ``retry_after_ms`` is the wait the server asked for;
    ``kind`` is one of FAILURE_KINDS (default: from the status and the message).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after_ms: int | None = None,
        kind: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms
        self.kind = kind or failure_kind(status, message)

    @property
    def context_overflow(self) -> bool:
        return self.status == 413 or is_context_overflow_text(self.message)


def is_context_overflow_text(text: str | None) -> bool:
    """True when a provider error text says the prompt exceeded the context window."""
    return bool(text) and _OVERFLOW.search(text or "") is not None


# The user info of a URL (``scheme://user:password@host``).
_USERINFO = re.compile(r"(?<=://)[^/?#@\s]+@")


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every given secret (API keys) and the user info of every URL
    replaced by ``[redacted]``. Redact before cutting a text, never after."""
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        if len(secret) >= 4 and secret in text:
            text = text.replace(secret, _REDACTED)
    if "@" in text:
        text = _USERINFO.sub(_REDACTED + "@", text)
    return text


def url_secrets(url: str | None) -> list[str]:
    """The password (and user info) of ``url``, as written and percent-decoded, in
    each of its ``renderings`` and as the base64 of a Basic credential."""
    if not url or "@" not in url:  # no user info (the base URL of nearly every model)
        return []
    return list(_url_secrets(url))


@functools.lru_cache(maxsize=64)
def _url_secrets(url: str) -> tuple[str, ...]:
    from urllib.parse import unquote, urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    out: list[str] = []
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    if userinfo:
        out.append(userinfo)
        user, _, password = userinfo.partition(":")
        basic = f"{unquote(user)}:{unquote(password)}"
        shown = [basic, base64.b64encode(_utf8(basic)).decode("ascii")]
        for value in (password, unquote(password)):
            shown += renderings(value) if value else []
        for value in shown:
            if len(value) >= 4 and value not in out:
                out.append(value)
    return tuple(out)


def request_secrets(api_key: str | None, base_url: str | None) -> list[str | None]:
    """What a request's error messages must not show before it is built: its API key
    and the credentials in its base URL (``secret_values``, ``url_secrets``)."""
    return [*secret_values(api_key), *url_secrets(base_url)]


def cut_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def is_secret_header(name: str) -> bool:
    """True for a header whose value is a credential (never shown, logged or echoed)."""
    return name.lower() in SECRET_HEADERS or _SECRET_NAME.search(name) is not None


def redact_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``headers`` safe to log: credential headers are replaced."""
    return {
        key: (_REDACTED if is_secret_header(str(key)) else value) for key, value in headers.items()
    }


# Characters no header value may hold: CR and LF would end the header line, NUL and the
# other control characters are refused by HTTP libraries (whose errors quote the value).
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def header_value_problem(value: str) -> str:
    """What makes ``value`` unfit to send as a header value ("" when nothing), named
    without quoting the value: a line break, a NUL, another control character or a
    character outside ASCII."""
    found = _CONTROL.search(value)
    if found is not None:
        char = found.group()
        if char in "\r\n":
            return "a line break"
        if char == "\0":
            return "a NUL character"
        return f"a control character (U+{ord(char):04X})"
    if not value.isascii():
        return "a character outside ASCII"
    return ""


def renderings(value: str) -> list[str]:
    """The forms ``value`` may take in an error text: itself, escaped as ``repr`` and
    JSON write it (``\\n``, ``\\x00``), percent-encoded, in base64, and each piece of it
    between control characters."""
    raw = _utf8(value)
    out = [value, repr(value)[1:-1], repr(raw)[2:-1], json.dumps(value)[1:-1]]
    out.append(value.encode("unicode_escape").decode("ascii"))
    out += [quote(raw, safe=""), quote_plus(raw, safe=""), quote(raw)]
    out.append(base64.b64encode(raw).decode("ascii"))
    out += [piece for piece in _CONTROL.split(value) if len(piece) >= 8]
    return out


def _utf8(value: str) -> bytes:
    """``value``'s bytes as the environment gave them (a lone surrogate kept as is)."""
    try:
        return value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")


def _basic_credentials(value: str) -> list[str]:
    """The user:password inside a ``Basic`` credential, and the password alone."""
    scheme, _, token = value.strip().partition(" ")
    if scheme.lower() != "basic" or not token.strip():
        return []
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return []
    return [decoded, decoded.partition(":")[2]]


def secret_values(api_key: str | None, headers: Mapping[str, str] | None = None) -> list[str]:
    """Every text to cut from messages: the key (also without surrounding whitespace)
    and the values of credential headers (with and without their ``Bearer``/``Basic``
    scheme, and a Basic credential's user:password), each in every rendering an
    exception or a log may give it (``renderings``)."""
    values = [api_key] if api_key else []
    for name, value in (headers or {}).items():
        if isinstance(value, str) and is_secret_header(str(name)):
            values.append(value)
            values += _basic_credentials(value)
    return list(_secret_texts(tuple(values))) if values else []


@functools.lru_cache(maxsize=64)
def _secret_texts(values: tuple[str, ...]) -> tuple[str, ...]:
    """``secret_values`` of these credentials: made once per process and credential
    set (every request of a model sends the same ones), not at every request."""
    out: list[str] = []
    for value in values:
        for candidate in (value, value.strip(), value.strip().partition(" ")[2].strip()):
            for shown in renderings(candidate) if len(candidate) >= 4 else ():
                if len(shown) >= 4 and shown not in out:
                    out.append(shown)
    return tuple(sorted(out, key=len, reverse=True))  # longest first: no partial leftovers


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
        return json.dumps(error)
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        value = data.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def reported_error(body: bytes) -> str | None:
    """The message of a JSON body that reports an error (``{"error": ...}``), else None."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if isinstance(data, dict) and data.get("error"):
        return _message_in(data)
    return None


_TAGS = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", re.S | re.I)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.S | re.I)


def _html_text(text: str) -> str | None:
    """The readable text of an HTML page (its title first), or None if not HTML."""
    head = text[:200].lstrip().lower()
    if not head.startswith(("<!doctype html", "<html", "<head", "<body", "<?xml", "<h1")):
        return None
    import html

    title = _TITLE.search(text)
    body = " ".join(html.unescape(_TAGS.sub(" ", text)).split())
    shown = " ".join(html.unescape(title.group(1)).split()) if title else ""
    if shown and body.startswith(shown):
        body = body[len(shown) :].strip()
    return f"{shown}: {body}" if shown and body else (shown or body or "(an empty HTML page)")


def error_text_from_body(
    body: bytes | str, limit: int = MAX_ERROR_CHARS, secrets: Iterable[str | None] = ()
) -> str:
    """The provider's error text from an HTTP error body (JSON, an SSE frame, HTML or
    plain text), redacted of ``secrets`` and then cut to ``limit`` characters."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = text.strip()
    if not text:
        return ""
    try:
        found = _message_in(json.loads(text))
    except (ValueError, RecursionError):
        found = None
    if found is None and text.startswith("data:"):
        # Some servers answer an error inside an SSE frame.
        for line in text.splitlines():
            if line.startswith("data:"):
                try:
                    found = _message_in(json.loads(line[5:]))
                except (ValueError, RecursionError):
                    continue
                if found:
                    break
    if found is None:
        found = _html_text(text) or text
        limit = min(limit, _MAX_PLAIN_CHARS)
    return cut_text(redact(found, secrets), limit)
