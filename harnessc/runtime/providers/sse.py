"""An incremental server-sent-events decoder: feed it bytes, get (event, data) pairs.

Independent of any socket, so the providers and the benchmark share one parsing path.
Follows the SSE framing: ``field: value`` lines, a blank line ends an event, several
``data`` lines join with newlines, lines starting with ``:`` are comments, lines with
an unknown field (or no colon at all) are ignored. Lines may end in LF or CRLF.
"""

from __future__ import annotations

import codecs

__all__ = ["SSEParser"]


class SSEParser:
    """Decodes a byte stream into ``(event, data)`` tuples; ``event`` defaults to
    ``"message"``."""

    __slots__ = ("_decoder", "_tail", "_event", "_data")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._tail = ""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        """Events completed by ``chunk`` (a partial line waits for the next chunk)."""
        text = self._decoder.decode(chunk)
        if self._tail:
            text = self._tail + text
        lines = text.split("\n")
        self._tail = lines.pop()
        return self._lines(lines)

    def feed_lines(self, lines: list[str]) -> list[tuple[str, str]]:
        """Events completed by whole lines (without their line breaks)."""
        return self._lines(lines)

    def flush(self) -> list[tuple[str, str]]:
        """At end of stream: the last event even if its blank line never came."""
        text = self._tail + self._decoder.decode(b"", final=True)
        self._tail = ""
        lines = text.split("\n") if text else []
        lines.append("")
        return self._lines(lines)

    def _lines(self, lines: list[str]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        data = self._data
        for line in lines:
            if line and line[-1] == "\r":
                line = line[:-1]
            if not line:
                if data:
                    out.append(
                        (self._event or "message", data[0] if len(data) == 1 else "\n".join(data))
                    )
                    data.clear()
                self._event = ""
                continue
            if line[0] == "d" and line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value[:1] == " " else value)
            elif line[0] == ":":
                continue
            elif line.startswith("event:"):
                value = line[6:]
                self._event = value[1:] if value[:1] == " " else value
            # "id", "retry" and unknown fields do not matter to the providers.
        return out
