r"""Text that can always be encoded as UTF-8, for everything a tool hands the context.

Python gives names that are not valid UTF-8 (a Latin-1 ``café.txt`` from ``os.scandir``)
as "surrogate escapes": the byte 0xE9 becomes the lone code point U+DCE9. Such a string
cannot be encoded as UTF-8, so one file name in an ``ls`` result would make every later
request (and the session file) fail. At the boundary where tool output enters the
context, :func:`clean_text` writes each escaped byte as the four characters ``\xe9``
(the tools accept that spelling back in paths), joins a surrogate pair split into two
code points, and replaces any other lone surrogate with U+FFFD.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["clean_result_value", "clean_text", "unescape_bytes"]

_SURROGATES = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")
_ESCAPED = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")
_MAX_DEPTH = 50


def _replace(match: re.Match[str]) -> str:
    text = match.group(0)
    if len(text) == 2:  # a pair split into two code points: join it
        high, low = ord(text[0]), ord(text[1])
        return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    code = ord(text)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return "\ufffd"


def clean_text(text: str) -> str:
    """``text`` unchanged when it encodes as UTF-8, else with surrogates replaced."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub(_replace, text)
    return text


def clean_result_value(value: Any, _depth: int = 0) -> Any:
    """``value`` (tool details: dicts, lists, strings) with every string cleaned."""
    if isinstance(value, str):
        return clean_text(value)
    if _depth > _MAX_DEPTH:
        return value
    if isinstance(value, dict):
        return {
            clean_text(k) if isinstance(k, str) else k: clean_result_value(v, _depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [clean_result_value(v, _depth + 1) for v in value]
    return value


def unescape_bytes(text: str) -> str:
    r"""The reverse of :func:`clean_text` for paths: ``\xe9`` back to the byte's escape."""
    return _ESCAPED.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text)
