"""A prompt's images as each protocol sends them (base64 with a MIME type, a ``data:``
URL), checked: an image type, valid base64. A URL to fetch is refused (the server never
fetches what a request names)."""

from __future__ import annotations

import base64
import binascii

from harnessc.runtime.core.messages import ImageContent
from harnessc.runtime.serve.bodies import ApiError

__all__ = ["MAX_IMAGES", "data_url_image", "image"]

MAX_IMAGES = 20  # per prompt


def image(data: object, mime_type: object, where: str) -> ImageContent:
    """An image from base64 ``data`` and its ``mime_type`` (ApiError naming ``where``)."""
    if not isinstance(mime_type, str) or not mime_type.startswith("image/"):
        raise ApiError(400, f"{where}: the MIME type must be image/..., not {mime_type!r}")
    if not isinstance(data, str) or not data:
        raise ApiError(400, f"{where}: the image data must be a base64 string")
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, f"{where}: the image data is not valid base64") from None
    return ImageContent(data=data, mime_type=mime_type)


def data_url_image(url: object, where: str) -> ImageContent:
    """An image from a ``data:image/...;base64,...`` URL."""
    if not isinstance(url, str) or not url.startswith("data:"):
        raise ApiError(
            400, f"{where}: only data: URLs are taken (base64 images); this server fetches no URL"
        )
    header, comma, data = url[5:].partition(",")
    mime_type, _, encoding = header.partition(";")
    if not comma or encoding != "base64":
        raise ApiError(400, f"{where}: a data: URL must be base64 (data:image/png;base64,...)")
    return image(data, mime_type, where)
