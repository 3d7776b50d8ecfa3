"""The one redaction of URLs shown to anyone (messages, ``harnessc doctor``, logs): the
user info (``user:password@``) and the values of the query string's parameters are
replaced by ``[redacted]``; scheme, host, port and path stay, so the reader still sees
where it goes.

A query value can be a key (``?key=...``, ``?token=...``, a signed URL's ``sig``):
every value is hidden but those of a few parameters that never hold one
(``api-version``, ``sslmode`` ...). Works on a URL or on a text holding URLs.
"""

from __future__ import annotations

import re

__all__ = ["REDACTED", "redact_url"]

REDACTED = "[redacted]"

# parameters whose values are settings, never credentials
_SHOWN_PARAMETERS = frozenset(
    {
        "api-version",
        "api_version",
        "alt",
        "version",
        "format",
        "sslmode",
        "mode",
        "connect_timeout",
        "timeout",
        "application_name",
    }
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#@]*@")


def _one(url: str) -> str:
    url = _USERINFO.sub(r"\1" + REDACTED + "@", url)
    head, mark, rest = url.partition("?")
    if not mark:
        return url
    query, hash_mark, fragment = rest.partition("#")
    pairs = []
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        if equals and value and name.lower() not in _SHOWN_PARAMETERS:
            value = REDACTED
        pairs.append(name + equals + value)
    return head + "?" + "&".join(pairs) + hash_mark + (REDACTED if fragment else "")


def redact_url(text: str) -> str:
    """``text`` (a URL, or a message holding URLs) with every URL's user info and query
    values redacted."""
    if "://" not in text:
        return text
    return _URL.sub(lambda match: _one(match.group(0)), text)
