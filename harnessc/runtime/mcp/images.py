"""Images a server returns, checked before they enter the session and every request.

An image is kept when its base64 is valid, it decodes to at most ``MAX_IMAGE_BYTES``
(5 MiB, the strictest provider's limit), its bytes are a PNG, JPEG, GIF or WebP image
(read from its header with the standard library; the type the server declared is
replaced by the one found) and neither side is over ``MAX_IMAGE_SIDE`` pixels.
Anything else becomes a short note instead.
"""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass

__all__ = ["MAX_IMAGE_BYTES", "MAX_IMAGE_SIDE", "CheckedImage", "check_image", "image_size"]

MAX_IMAGE_BYTES = 5 * 1024 * 1024
MAX_IMAGE_SIDE = 8000


@dataclass(frozen=True, slots=True)
class CheckedImage:
    """A usable image (``data`` and ``mime_type`` set) or why not (``problem``)."""

    data: str = ""
    mime_type: str = ""
    problem: str | None = None


def check_image(data: object, declared: object) -> CheckedImage:
    if not isinstance(data, str):
        return CheckedImage(problem="its data is not a base64 string")
    limit = 4 * ((MAX_IMAGE_BYTES + 2) // 3)
    compact = "".join(data.split()) if len(data) <= limit * 2 else data
    if len(compact) > limit:
        return CheckedImage(
            problem=f"it is over the {MAX_IMAGE_BYTES // (1024 * 1024)} MiB image limit "
            f"({len(compact) * 3 // 4} bytes)"
        )
    try:
        raw = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return CheckedImage(problem="its data is not valid base64")
    found = image_size(raw)
    if found is None:
        shown = declared if isinstance(declared, str) else "?"
        return CheckedImage(problem=f"its bytes are not a PNG, JPEG, GIF or WebP image ({shown})")
    mime, width, height = found
    if not (0 < width <= MAX_IMAGE_SIDE and 0 < height <= MAX_IMAGE_SIDE):
        return CheckedImage(
            problem=f"it is {width}x{height} pixels; images are at most "
            f"{MAX_IMAGE_SIDE}x{MAX_IMAGE_SIDE}"
        )
    return CheckedImage(data=compact, mime_type=mime)


def image_size(raw: bytes) -> tuple[str, int, int] | None:
    """``(mime type, width, height)`` read from the image's header, or None."""
    if raw.startswith(b"\x89PNG\r\n\x1a\n") and raw[12:16] == b"IHDR" and len(raw) >= 24:
        width, height = struct.unpack(">II", raw[16:24])
        return "image/png", width, height
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        width, height = struct.unpack("<HH", raw[6:10])
        return "image/gif", width, height
    if raw.startswith(b"\xff\xd8"):
        return _jpeg(raw)
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return _webp(raw)
    return None


_SOF = frozenset({*range(0xC0, 0xC4), *range(0xC5, 0xC8), *range(0xC9, 0xCC), *range(0xCD, 0xD0)})


def _jpeg(raw: bytes) -> tuple[str, int, int] | None:
    at = 2
    while at + 4 <= len(raw):
        if raw[at] != 0xFF:
            return None
        marker = raw[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0x01, *range(0xD0, 0xD8)):  # markers without a length
            at += 2
            continue
        (length,) = struct.unpack(">H", raw[at + 2 : at + 4])
        if length < 2:
            return None
        if marker in _SOF:
            if at + 9 > len(raw):
                return None
            height, width = struct.unpack(">HH", raw[at + 5 : at + 9])
            return "image/jpeg", width, height
        if marker == 0xD9:  # end of image before any frame
            return None
        at += 2 + length
    return None


def _webp(raw: bytes) -> tuple[str, int, int] | None:
    chunk = raw[12:16]
    if chunk == b"VP8 " and len(raw) >= 30 and raw[23:26] == b"\x9d\x01\x2a":
        width, height = struct.unpack("<HH", raw[26:30])
        return "image/webp", width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(raw) >= 25 and raw[20] == 0x2F:
        (bits,) = struct.unpack("<I", raw[21:25])
        return "image/webp", (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(raw) >= 30:
        width = int.from_bytes(raw[24:27], "little") + 1
        height = int.from_bytes(raw[27:30], "little") + 1
        return "image/webp", width, height
    return None
