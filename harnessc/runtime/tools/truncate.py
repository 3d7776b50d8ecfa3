"""Output caps shared by the tools: at most 2000 lines or 50 KB, head or tail kept."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, TextIO

__all__ = [
    "MAX_BYTES",
    "MAX_LINES",
    "Truncation",
    "bounded_lines",
    "cap_text",
    "format_size",
    "truncate_head",
    "truncate_tail",
]

MAX_LINES = 2000
MAX_BYTES = 50 * 1024


@dataclass(slots=True)
class Truncation:
    """The kept text and what was cut (lines counted after splitting on ``\\n``)."""

    content: str
    truncated: bool
    truncated_by: Literal["lines", "bytes"] | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    # Head mode only: the very first line alone is over the byte cap, nothing was kept.
    first_line_too_long: bool = False


def format_size(num_bytes: int) -> str:
    if num_bytes < 1024:
        return f"{num_bytes} B"
    if num_bytes < 1024 * 1024:
        return f"{num_bytes / 1024:.1f} KB"
    return f"{num_bytes / (1024 * 1024):.1f} MB"


def _size(line: str) -> int:
    return len(line.encode("utf-8", "replace"))


def truncate_head(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Truncation:
    """Keep whole lines from the start (for file reads, search results, listings)."""
    total_bytes = _size(text)
    lines = text.split("\n")
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return Truncation(text, False, None, total_lines, total_bytes, total_lines, total_bytes)
    if _size(lines[0]) > max_bytes:
        return Truncation("", True, "bytes", total_lines, total_bytes, 0, 0, True)
    kept: list[str] = []
    used = 0
    by: Literal["lines", "bytes"] = "lines"
    for index, line in enumerate(lines):
        if index >= max_lines:
            by = "lines"
            break
        cost = _size(line) + (1 if index else 0)
        if used + cost > max_bytes:
            by = "bytes"
            break
        kept.append(line)
        used += cost
    out = "\n".join(kept)
    return Truncation(out, True, by, total_lines, total_bytes, len(kept), _size(out))


def truncate_tail(text: str, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> Truncation:
    """Keep whole lines from the end (for command output); a last line over the cap is cut."""
    total_bytes = _size(text)
    lines = text.split("\n")
    total_lines = len(lines)
    if total_lines <= max_lines and total_bytes <= max_bytes:
        return Truncation(text, False, None, total_lines, total_bytes, total_lines, total_bytes)
    kept: list[str] = []
    used = 0
    by: Literal["lines", "bytes"] = "lines"
    for line in reversed(lines):
        if len(kept) >= max_lines:
            by = "lines"
            break
        cost = _size(line) + (1 if kept else 0)
        if used + cost > max_bytes:
            by = "bytes"
            if not kept:  # one huge last line: keep its end
                raw = line.encode("utf-8", "replace")[-max_bytes:]
                kept.append(raw.decode("utf-8", "ignore"))
            break
        kept.append(line)
        used += cost
    kept.reverse()
    out = "\n".join(kept)
    return Truncation(out, True, by, total_lines, total_bytes, len(kept), _size(out))


def cap_text(text: str, hint: str = "") -> str:
    """Head-truncate ``text`` to the caps and append a notice (plus ``hint``) when cut."""
    cut = truncate_head(text)
    if not cut.truncated:
        return text
    if cut.first_line_too_long:
        raw = text.encode("utf-8", "replace")[:MAX_BYTES].decode("utf-8", "ignore")
        return (
            f"{raw}\n\n[Output truncated: the first line alone is over {format_size(MAX_BYTES)}"
            f" (total {format_size(cut.total_bytes)}).{(' ' + hint) if hint else ''}]"
        )
    limit = f"{MAX_LINES} lines" if cut.truncated_by == "lines" else format_size(MAX_BYTES)
    return (
        f"{cut.content}\n\n[Output truncated at {limit}: showing {cut.output_lines} of "
        f"{cut.total_lines} lines.{(' ' + hint) if hint else ''}]"
    )


def bounded_lines(
    fh: TextIO, limit: int, stop: Callable[[], bool] | None = None
) -> Iterator[tuple[str, bool]]:
    """The lines of a text file without their newline, never holding more than
    ``limit`` characters: a longer line comes back cut to ``limit`` (second value
    True) and the rest of it is read in pieces and dropped (a 2 GB line costs no memory).
    Ends early once ``stop()`` is true (an aborted run: the thread stops reading).
    """
    if getattr(fh, "_CHUNK_SIZE", 1 << 16) < 1 << 16:
        # TextIOWrapper decodes 8 KB at a time by default: 20x slower on huge lines
        fh._CHUNK_SIZE = 1 << 16  # type: ignore[attr-defined]
    while True:
        if stop is not None and stop():
            return
        piece = fh.readline(limit)
        if not piece:
            return
        if piece.endswith("\n"):
            yield piece[:-1], False
            continue
        if len(piece) < limit:  # the last line, without a newline
            yield piece, False
            return
        while True:
            rest = fh.readline(limit)
            if not rest or rest.endswith("\n") or (stop is not None and stop()):
                break
        yield piece, True
