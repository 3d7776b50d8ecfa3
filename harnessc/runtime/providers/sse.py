"""An incremental server-sent-events decoder: feed it bytes, get (event, data) pairs.

Independent of any socket, so the providers and the benchmark share one parsing path.
Follows the SSE framing of the HTML standard: a leading byte-order mark is dropped;
lines end in CR, LF or CRLF (and nothing else: a U+2028 inside JSON text stays
text, unlike ``str.splitlines``); ``field: value`` lines, a blank line ends an event,
several ``data`` lines join with newlines, lines starting with ``:`` are comments,
lines with an unknown field (or no colon at all) are ignored.

Linear time: a line split over many chunks is kept as a list of pieces and joined
once. A line, or the data of one event, longer than ``MAX_LINE_CHARS`` raises
``SSELimitError`` naming the limit (a 25 MB line is a broken or hostile server).

An event's data is JSON for every wire API: ``json_data`` decodes it.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harnessc.runtime.providers.errors import ProviderError

if TYPE_CHECKING:
    from harnessc.runtime.providers.wire import StreamState

__all__ = [
    "MAX_EVENT_CHARS",
    "MAX_LINE_CHARS",
    "SSELimitError",
    "SSEParser",
    "feed_sse",
    "json_data",
]

MAX_LINE_CHARS = 8 * 1024 * 1024
MAX_EVENT_CHARS = 8 * 1024 * 1024


class SSELimitError(ProviderError):
    """An event-stream line or event over the decoder's cap (never retried)."""


def _too_long(what: str, limit: int) -> SSELimitError:
    return SSELimitError(
        f"the event stream sent {what} longer than the limit of {limit:,} characters "
        f"({limit // (1024 * 1024)} MiB); the server's stream is broken"
    )


class SSEParser:
    """Decodes a byte stream into ``(event, data)`` tuples; ``event`` defaults to
    ``"message"``."""

    __slots__ = (
        "_decoder",
        "_tail",
        "_tail_len",
        "_skip_lf",
        "_started",
        "_event",
        "_data",
        "_data_len",
        "max_line",
        "max_event",
        "comments",
    )

    def __init__(self, max_line: int = MAX_LINE_CHARS, max_event: int = MAX_EVENT_CHARS) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._tail: list[str] = []  # pieces of the line not ended yet
        self._tail_len = 0
        self._skip_lf = False  # the last chunk ended in CR: a LF starting the next is its pair
        self._started = False  # the byte-order mark check is done
        self._event = ""
        self._data: list[str] = []
        self._data_len = 0
        self.max_line = max_line
        self.max_event = max_event
        self.comments = 0  # comment lines seen (keepalives)

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """Events completed by ``chunk`` (a partial line waits for the next chunk)."""
        text = self._decoder.decode(chunk)
        if not text:
            return []
        if not self._started:
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
        if self._skip_lf:
            self._skip_lf = False
            if text[:1] == "\n":
                text = text[1:]
        if "\r" in text:
            if text[-1] == "\r":
                self._skip_lf = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        last = lines.pop()
        if not lines:  # still inside one line
            if last:
                self._tail.append(last)
                self._tail_len += len(last)
                if self._tail_len > self.max_line:
                    raise _too_long("a line", self.max_line)
            return []
        if self._tail:
            self._tail.append(lines[0])
            lines[0] = "".join(self._tail)
            self._tail.clear()
            if len(lines[0]) > self.max_line:
                raise _too_long("a line", self.max_line)
        if len(text) > self.max_line and max(map(len, lines)) > self.max_line:
            raise _too_long("a line", self.max_line)
        if last:
            if len(last) > self.max_line:
                raise _too_long("a line", self.max_line)
            self._tail.append(last)
        self._tail_len = len(last)
        return self._lines(lines)

    def feed_lines(self, lines: list[str]) -> list[tuple[str, str]]:
        """Events completed by whole lines (without their line breaks)."""
        return self._lines(lines)

    def flush(self) -> list[tuple[str, str]]:
        """At end of stream: the last event even if its blank line never came."""
        rest = self._decoder.decode(b"", final=True)
        lines = self.feed(rest.encode()) if rest else []
        if self._tail:
            lines += self._lines(["".join(self._tail)])
            self._tail.clear()
            self._tail_len = 0
        return lines + self._lines([""])

    def _lines(self, lines: list[str]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        data = self._data
        for line in lines:
            if not line:
                if data:
                    out.append(
                        (self._event or "message", data[0] if len(data) == 1 else "\n".join(data))
                    )
                    data.clear()
                    self._data_len = 0
                self._event = ""
                continue
            first = line[0]
            if first == "d" and line.startswith("data:"):
                value = line[5:]
                if value[:1] == " ":
                    value = value[1:]
                data.append(value)
                self._data_len += len(value) + 1
                if self._data_len > self.max_event and len(data) > 1:
                    raise _too_long("an event", self.max_event)
            elif first == ":":
                self.comments += 1
            elif line.startswith("event:"):
                value = line[6:]
                self._event = value[1:] if value[:1] == " " else value
            # "id", "retry" and unknown fields do not matter to the providers.
        return out


# The decoder's scanner, called directly: json.loads adds two Python frames and two
# whitespace regex matches per call, a third of the cost of a small delta frame.
_scan_once: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def json_data(data: str) -> Any:
    """Decode one event's data; invalid JSON becomes a ProviderError."""
    try:
        value, end = _scan_once(data, 0)
    except (StopIteration, ValueError):
        value, end = None, -1
    except RecursionError:
        raise ProviderError("an event of the stream nests too deep to decode") from None
    if end == len(data) or (end > 0 and not data[end:].strip()):
        return value
    try:  # leading whitespace or another oddity the fast path does not take
        return json.loads(data)
    except ValueError:
        shown = data if len(data) <= 200 else data[:200] + "..."
        raise ProviderError(f"invalid JSON in the event stream: {shown!r}") from None


def feed_sse(parser: SSEParser, state: StreamState, chunk: bytes) -> None:
    """Parse one chunk of bytes and apply its events (the benchmark's entry point)."""
    for event, data in parser.feed(chunk):
        state.handle(event, data)
