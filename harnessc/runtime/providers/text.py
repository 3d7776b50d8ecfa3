"""Text that cannot be encoded as UTF-8 never breaks a request or a reply.

Python strings may hold lone UTF-16 surrogates (``\\udce9`` from bytes decoded with
``surrogateescape``, a ``"\\ud83d"`` JSON escape a server or an old session holds).
UTF-8 cannot encode them, so one such character would make every later request of a
session fail. Here a surrogate pair becomes the character it encodes and a lone
surrogate becomes U+FFFD, in request payloads, in streamed deltas (a pair split
over two deltas is joined) and in tool-call arguments.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "SurrogateJoiner",
    "clean_text",
    "clean_value",
    "has_surrogates",
    "json_text",
    "payload_bytes",
]

# ``json.dumps(value, ensure_ascii=False)`` makes an encoder at every call (a few
# microseconds, several times a model step); one made once gives the same text.
_ENCODER = json.JSONEncoder(ensure_ascii=False)


def json_text(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)``."""
    return _ENCODER.encode(value)


_SURROGATE = re.compile("[\ud800-\udfff]")


def has_surrogates(text: str) -> bool:
    return not text.isascii() and _SURROGATE.search(text) is not None


def clean_text(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD."""
    if not has_surrogates(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_value(value: Any) -> Any:
    """A JSON value with every string (keys too) passed through ``clean_text``."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {
            clean_text(k) if isinstance(k, str) else k: clean_value(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [clean_value(v) for v in value]
    return value


def payload_bytes(payload: Any) -> bytes:
    """The UTF-8 JSON body of a request; lone surrogates become U+FFFD."""
    text = _ENCODER.encode(payload)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return clean_text(text).encode("utf-8")


class SurrogateJoiner:
    """Cleans a stream of deltas, holding a high surrogate that ends one delta until
    the next delta shows whether its low half follows."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = ""

    def feed(self, delta: str) -> str:
        if self.held:
            delta = self.held + delta
            self.held = ""
        elif delta.isascii():
            return delta
        if _SURROGATE.search(delta) is None:
            return delta
        if "\ud800" <= delta[-1] <= "\udbff":
            self.held = delta[-1]
            delta = delta[:-1]
        return clean_text(delta)

    def flush(self) -> str:
        """What is held at the end of the stream (a lone half: U+FFFD)."""
        held, self.held = self.held, ""
        return "\ufffd" if held else ""
